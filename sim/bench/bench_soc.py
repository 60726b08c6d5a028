"""SoC infrastructure benchmark: Etherbone access rates and litex_sim speed, on the simulated SoC."""
import json
import sys
import time

from sim import target
from sim.bench.framework import BenchResult, Table
from sim.runner import SimSession

ANCHOR_CSR_READS_PER_S = 600.0   # ANCHORS.md: litex_server --udp on this machine class


def run(quick=False):
    seconds = 0.5 if quick else 5.0
    t0 = time.monotonic()
    gateware = target.build(())
    build_s = time.monotonic() - t0
    with SimSession(gateware) as sim:
        r = sim.run([sys.executable, "-m", "sim.bench.soc_host", str(seconds)], timeout=600, capture=True)
        if r.returncode != 0:
            raise RuntimeError(f"bench host script failed:\n{r.stdout}\n{r.stderr}")
    m = json.loads(r.stdout.strip().splitlines()[-1])
    res = BenchResult("soc", data={**m, "build_s": build_s, "window_s": seconds})
    t = Table("Etherbone over the litex_sim TAP (one host client, UDP)",
              ["measure", "per second", "ratio to single CSR reads"],
              notes=f"Reference: single 32-bit CSR reads measured in this run; ANCHORS.md reports "
                    f"~{ANCHOR_CSR_READS_PER_S:.0f}/s through litex_server (ratio here "
                    f"{m['csr_reads_per_s'] / ANCHOR_CSR_READS_PER_S:.2f}).")
    base = m["csr_reads_per_s"]
    t.add("single CSR reads", m["csr_reads_per_s"], 1.0)
    t.add("16-word burst reads (words)", m["burst_words_per_s"], m["burst_words_per_s"] / base)
    t.add("write+read pairs", m["write_read_pairs_per_s"], m["write_read_pairs_per_s"] / base)
    res.tables.append(t)
    s = Table("Simulation speed (Verilator, whole SoC)", ["condition", "simulated cycles / s", "ratio to idle"])
    s.add("idle", m["cycles_per_s_idle"], 1.0)
    s.add("Etherbone busy", m["cycles_per_s_busy"], m["cycles_per_s_busy"] / m["cycles_per_s_idle"])
    res.tables.append(s)
    return res

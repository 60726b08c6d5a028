"""make bench BENCH=ecp5: every core out of context and every board build on ECP5, nextpnr seeds 1-3, each
against its clock target with pass/fail (build/bench/ecp5.md, build/bench/ecp5.json).

* Cores (`CORES`): each core in the configuration its SoC block and the board builds use (`block_part`: the
  part taken out of the SoC block as the boards build it), and the larger configurations of the cores' own
  benchmarks, each row saying which (sim.bench.ecp5.synth_point: yosys once, nextpnr once a seed, every
  port registered), at 125 MHz.
* Boards (`BOARDS`): `python -m boards.build BOARD --cores ... --seed S` in a build folder of its own (the
  board builds of `make build`), its clocks as `make build` reports them.

Every run is a sweep point (sim.bench.sweep): the runs go side by side on the local cores or on a Ray
cluster (`CLUSTER=`), and a point whose gateware did not change comes from the cache. A run is bounded by
`timeout` seconds (nextpnr's placement and routing of the biggest cores take 20-40 minutes); a run cut
short, or whose router gave up, reports nextpnr's post-placement estimate, marked "estimate".

    .venv/bin/python -m sim.bench ecp5 [--quick]      # quick: the smallest core, seed 1 (the smoke test)
"""
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time

from cores.sync.common import DEFAULT_HOP_LATENCY
from sim import BUILD, ROOT
from sim.bench.ecp5 import load, point_digest, synth_point
from sim.bench.framework import BenchResult, Table
from sim.bench.sweep import sweep, sweep_stats, tasks
from soc.common import BOARD_CORE_OPTIONS

SEEDS = (1, 2, 3)
TARGET_MHZ = 125
CORE_TIMEOUT_S = 45 * 60
BOARD_TIMEOUT_S = 60 * 60

# The parts of the SoC blocks as the SoC and the board builds make them (block_part): the boards' rifl_net.
_NET = dict(block="cores.rifl_net.soc_block:RIFLNetBlock", kwargs=BOARD_CORE_OPTIONS["rifl_net"])
_SWITCH = dict(block="cores.switch.soc_block:SwitchBlock", kwargs={})
AS_BUILT, LARGER = "as the SoC and boards build it", "larger than the SoC and boards build it"
# (label, factory, args, device, configuration): every core at TARGET_MHZ, in the configuration its SoC block
# and the board builds use, and the larger configurations of the cores' own benchmarks.
CORES = [
    ("MiniSharp 2 x 8-bit, 1 lane", "sim.bench.bench_minisharp:ecp5_core",
     dict(params=dict(num_ports=2, dw=8, lanes=1)), "LFE5U-25F", AS_BUILT),
    ("RIFL L1 endpoint F = 256, RTT 118 frames", "sim.bench.bench_rifl:ecp5_endpoint", {}, "LFE5U-25F", LARGER),
    ("RIFL L2 segmenter, rifl_net (F = 64)", "sim.bench.bench_ecp5:block_part",
     dict(_NET, path="net.host0.segmenter", ios="sim.bench.bench_rifl:stream_ios"), "LFE5U-25F", AS_BUILT),
    ("RIFL L2 reassembler, rifl_net (F = 64)", "sim.bench.bench_ecp5:block_part",
     dict(_NET, path="net.host0.reassembler", ios="sim.bench.bench_rifl:stream_ios"), "LFE5U-25F", AS_BUILT),
    ("RIFL switch line card, rifl_net (F = 64)", "sim.bench.bench_ecp5:block_part",
     dict(_NET, path="net.switch0.cards.0", ios="sim.bench.bench_rifl_net:line_card_ios"), "LFE5U-25F", AS_BUILT),
    ("RIFL L2 segmenter F = 256", "sim.bench.bench_rifl:ecp5_l2", dict(part="segmenter"), "LFE5U-25F", LARGER),
    ("RIFL L2 reassembler F = 256", "sim.bench.bench_rifl:ecp5_l2", dict(part="reassembler"), "LFE5U-25F", LARGER),
    ("RIFL aligner F = 64", "sim.bench.bench_rifl:ecp5_aligner", dict(frame_bits=64), "LFE5U-25F",
     AS_BUILT + " (the Versa SERDES build's F)"),
    ("RIFL aligner F = 256", "sim.bench.bench_rifl:ecp5_aligner", {}, "LFE5U-25F", LARGER),
    ("RIFL switch line card F = 256", "sim.bench.bench_rifl_net:ecp5_line_card", {}, "LFE5U-25F", LARGER),
    ("Sparsr receiver, Versa build (WMEM 64 rows, XMEM 4096 rows in DDR3)", "sim.bench.bench_sparsr:ecp5_receiver",
     dict(wmem_rows=64, xmem_rows=4096, dram=(128, 23)), "LFE5U-45F", AS_BUILT + " (the DDR3's 128-bit native port)"),
    ("Sparsr receiver, Colorlight build (WMEM 32 rows, XMEM 4095 rows in SDRAM)", "sim.bench.bench_sparsr:ecp5_receiver",
     dict(wmem_rows=32, xmem_rows=4095, dram=(32, 21)), "LFE5U-25F", AS_BUILT + " (the SDRAM's 32-bit native port)"),
    ("Sparsr receiver (16 + 8 rows)", "sim.bench.bench_sparsr:ecp5_receiver", {}, "LFE5U-45F",
     "WMEM smaller than add_sparsr's 64 rows; XMEM in block RAM (add_sparsr's default without DRAM)"),
    ("Sync node, 8 links, 8 idents", "sim.bench.bench_sync:ecp5_node", dict(n_idents=8), "LFE5U-25F",
     "as the SoC block builds each node of its 4 x 4 grid, ports registered"),
    ("Sync 2 x 2 grid + lamlet, 8 idents", "sim.bench.bench_sync:ecp5_grid", dict(hop=DEFAULT_HOP_LATENCY),
     "LFE5U-45F", AS_BUILT + " (the boards' SyncBlock; nodes wired port to port)"),
    ("iSLIP, switch block (N = 4, 2 iterations)", "sim.bench.bench_ecp5:block_part",
     dict(_SWITCH, path="switch.scheduler", ios="sim.bench.bench_switch:scheduler_ios"), "LFE5U-25F", AS_BUILT),
    ("Batcher-Banyan, switch block (N = 4, 177-bit lanes)", "sim.bench.bench_ecp5:block_part",
     dict(_SWITCH, path="switch.network", ios="sim.bench.bench_switch:network_ios"), "LFE5U-25F", AS_BUILT),
    ("iSLIP N = 8, 3 iterations, pipelined", "sim.bench.bench_switch:ecp5_scheduler",
     dict(n=8, k=3, pipelined=True), "LFE5U-25F", LARGER),
    ("iSLIP N = 16, 3 iterations, pipelined", "sim.bench.bench_switch:ecp5_scheduler",
     dict(n=16, k=3, pipelined=True), "LFE5U-25F", LARGER),
    ("Batcher-Banyan N = 8 (113-bit lanes)", "sim.bench.bench_switch:ecp5_network", dict(n=8, width=113),
     "LFE5U-85F", LARGER),
    ("Batcher-Banyan N = 16 (113-bit lanes)", "sim.bench.bench_switch:ecp5_network", dict(n=16, width=113),
     "LFE5U-85F", LARGER),
]
QUICK_CORE = ("iSLIP N = 4, 1 iteration", "sim.bench.bench_switch:ecp5_scheduler", dict(n=4, k=1), "LFE5U-25F",
              LARGER)
# (board, cores): the board builds of `make build` (boards/fit.py's largest fitting sets among them).
BOARDS = [("colorlight_5a_75b", ""), ("colorlight_5a_75b", "minisharp"), ("lattice_versa_ecp5", ""),
          ("lattice_versa_ecp5", "minisharp"), ("lattice_versa_ecp5", "rifl"), ("lattice_versa_ecp5", "sparsr"),
          ("lattice_versa_ecp5", "sync")]


def _name(label):
    return "ecp5_" + re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")


def block_part(block, path, ios, kwargs=None):
    """ECP5 factory (sim.bench.ecp5.synth_point): one part of a SoC block as the SoC and the board builds make
    it. `block` ("module:Class") is built with `kwargs`; the part is its submodule at the dotted `path` (a
    number indexes a list); `ios` ("module:function") gives the part's ports: (module, ios). Block RAMs are
    lowered as boards.build lowers them (cores.lib.block_ram.ecp5_special_overrides: DP16KD with their output
    registers)."""
    from cores.lib.block_ram import ecp5_special_overrides
    part = load(block)(**(kwargs or {}))
    for step in path.split("."):
        part = part[int(step)] if step.isdigit() else getattr(part, step)
    module, part_ios = load(ios)(part)
    return module, part_ios, ecp5_special_overrides


# Rows that nextpnr's default router1 does not finish in the budget (docs/switch.md): router2 routes them.
ROUTER2 = {"Batcher-Banyan N = 16 (113-bit lanes)"}


def core_points(cores, seeds, timeout):
    params = [dict(factory=factory, args=args, name=_name(label), device=device, freq_mhz=TARGET_MHZ, seed=seed,
                   timeout=timeout, router="router2" if label in ROUTER2 else "router1")
              for label, factory, args, device, _ in cores for seed in seeds]
    return tasks(synth_point, params, point_digest)


def _source_digest():
    """The digest of the sources a board build is made from (cores/, soc/, boards/, cores/lib): its gateware
    digest without generating it."""
    h = hashlib.sha256()
    for top in ("cores", "soc", "boards"):
        for dirpath, dirs, files in sorted(os.walk(os.path.join(ROOT, top))):
            dirs.sort()
            for f in sorted(files):
                if f.endswith((".py", ".json")):
                    h.update(f.encode())
                    with open(os.path.join(dirpath, f), "rb") as fh:
                        h.update(fh.read())
    return h.hexdigest()


def board_point(board, cores, seed, timeout):
    """Sweep task: `python -m boards.build board --cores cores --seed seed` in build/ecp5/boards/<...>, bounded
    by `timeout` seconds. Returns make build's figures (utilization, clocks: achieved and constraint MHz)
    with "how": "placed and routed", or for a run cut short or failed its post-placement estimates."""
    out_dir = os.path.join(BUILD, "ecp5", "boards", f"{board}_{cores or 'base'}_seed{seed}")
    os.makedirs(out_dir, exist_ok=True)
    log = os.path.join(out_dir, "build.out")
    cmd = [sys.executable, "-m", "boards.build", board, "--seed", str(seed), "--build-dir", out_dir]
    if cores:
        cmd += ["--cores", cores]
    t0 = time.monotonic()
    with open(log, "w") as f:
        # A session of its own: a build cut short takes yosys and nextpnr (LiteX's build script) down with it.
        p = subprocess.Popen(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
            how = "placed and routed" if rc in (0, 1) else f"failed: boards.build exited with {rc}"
        except BaseException as e:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            how = f"failed: ran over {timeout} s"
    r = {"board": board, "cores": cores, "seed": seed, "how": how, "build_s": round(time.monotonic() - t0)}
    summary = os.path.join(out_dir, "summary.json")
    if how == "placed and routed" and os.path.exists(summary):
        s = json.load(open(summary))
        r.update(utilization=s["utilization"], fmax=s["fmax"])
    else:
        text = open(log, errors="replace").read()
        r["how"] = how if how.startswith("failed") else "failed: no bitstream"
        r["estimate"] = {k: float(v) for k, v in re.findall(r"Max frequency for clock '([^']+)': ([\d.]+) MHz", text)}
    return r


def board_points(boards, seeds, timeout):
    digest = _source_digest()
    return tasks(board_point, [dict(board=b, cores=c, seed=s, timeout=timeout) for b, c in boards for s in seeds],
                 gateware=lambda p: digest)


def _fmax(r):
    """(worst clock's MHz, whether it is a post-placement estimate) of a synth_point result."""
    if r["how"] == "placed and routed" and r.get("fmax_mhz"):
        return min(r["fmax_mhz"].values()), False
    est = r.get("estimate") or {}
    return (min(est.values()), True) if est else (None, False)


def _cells(r, key, yosys_key):
    if r["how"] == "placed and routed":
        return r[key]
    return (r.get("yosys_cells") or {}).get(yosys_key, "?")


def core_table(cores, seeds, results):
    t = Table(f"Cores out of context (yosys + nextpnr-ecp5, registered ports), target {TARGET_MHZ} MHz",
              ["core", "configuration", "device", "LUT4", "FF", "DP16KD"] + [f"Fmax seed {s} (MHz)" for s in seeds] + ["meets target"])
    rows = {}
    for pt, r in zip(core_points_meta(cores, seeds), results):
        rows.setdefault(pt, []).append(r)
    for (label, device, config), runs in rows.items():
        first = runs[0]
        figures, ok = [], True
        for r in runs:
            f, est = _fmax(r)
            ok &= f is not None and not est and f >= TARGET_MHZ
            figures.append("-" if f is None else f"{f:.1f}" + (" (estimate)" if est else ""))
        t.add(label, config, device, _cells(first, "lut4", "LUT4"), _cells(first, "ff", "TRELLIS_FF"),
              _cells(first, "bram_dp16kd", "DP16KD"), *figures, "pass" if ok else "FAIL")
    t.notes = ("Fmax: the worst clock after routing; \"estimate\": nextpnr's post-placement figure of a run that "
               "did not route within the timeout; pass: every seed routed at the target or above.")
    return t


def core_points_meta(cores, seeds):
    return [(label, device, config) for label, _, _, device, config in cores for _ in seeds]


def board_table(boards, seeds, results):
    t = Table("Board builds (make build), per clock: achieved / constraint MHz",
              ["board", "cores", "seed", "LUT4", "FF", "DP16KD", "clocks", "meets every clock", "build (s)"])
    for r in results:
        if r["how"] == "placed and routed":
            u = r["utilization"]
            clocks = ", ".join(f"{c} {a:.1f}/{k:.1f}" for c, (a, k) in sorted(r["fmax"].items()))
            ok = all(a >= k for a, k in r["fmax"].values())
            t.add(r["board"], r["cores"] or "-", r["seed"], u.get("TRELLIS_COMB", ["?"])[0], u.get("TRELLIS_FF", ["?"])[0],
                  u.get("DP16KD", ["?"])[0], clocks, "pass" if ok else "FAIL", r["build_s"])
        else:
            est = ", ".join(f"{c} {v:.1f}" for c, v in sorted(r.get("estimate", {}).items()))
            t.add(r["board"], r["cores"] or "-", r["seed"], "?", "?", "?",
                  f"{r['how']}; post-placement estimates: {est or 'none'}", "FAIL", r["build_s"])
    return t


def run(quick=False, boards=True):
    cores = [QUICK_CORE] if quick else CORES
    seeds = (1,) if quick else SEEDS
    points = core_points(cores, seeds, 600 if quick else CORE_TIMEOUT_S)
    if boards and not quick:
        points += board_points(BOARDS, SEEDS, BOARD_TIMEOUT_S)
    results = [r if isinstance(r, dict) else {"how": f"failed: {r}"} for r in sweep("ecp5", points, strict=False)]
    n_cores = len(cores) * len(seeds)
    res = BenchResult("ecp5", tables=[core_table(cores, seeds, results[:n_cores])])
    if len(results) > n_cores:
        res.tables.append(board_table(BOARDS, SEEDS, results[n_cores:]))
    res.data = {"cores": [dict(r, label=label, device=device, configuration=config, seed=pt.params["seed"])
                          for (label, device, config), pt, r in zip(core_points_meta(cores, seeds), points, results)],
                "boards": results[n_cores:], "walls_s": sweep_stats().walls}
    return res


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

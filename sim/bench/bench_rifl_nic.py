"""RIFL NIC benchmark: goodput and latency of host -> PCIe DMA -> RIFL link -> switch -> RIFL link -> PCIe DMA
-> host, two NICs on a 2-port switch in one Verilated model (sim/verilated/rifl_nic.py), driven by the host
driver (software/rifl/nic.py), every host polling every cycle.

* Goodput: packets of one size sent back to back, one way and both ways at once: payload bytes delivered per
  cycle between the first post and the last completion record, against the limit of the PCIe link's beats
  (64-bit, the 7-series Gen2 x1 interface): a packet costs the receiving card ceil((3 + dwords) / 2) beats
  per memory-write TLP of at most 128 bytes plus its 16-byte completion record's TLP (4 beats); the
  reads' completions cost the sending card's link the same without the record. Gb/s at the 125 MHz sys
  clock of the AC701 target.
* Latency: one packet in flight: cycles from the driver's post to its poll seeing the completion record.
"""
import random
import statistics

from cores.rifl_net.topology import one_switch
from cores.rifl_nic.common import NIC_MAX_PACKET, RX_RECORD_BYTES, dma_length
from sim.bench.framework import BenchResult, Table
from sim.models.pcie import MAX_PAYLOAD_BYTES

SIZES = (64, 256, 1024, NIC_MAX_PACKET)
SYS_CLK_HZ = 125e6
TLP_HEADER_DWORDS = 3


def _tlp_beats(nbytes):
    """Beats (64-bit) of the memory writes carrying `nbytes` from an aligned address."""
    beats = 0
    while nbytes:
        n = min(nbytes, MAX_PAYLOAD_BYTES)
        beats += -(-(TLP_HEADER_DWORDS + n // 4) // 2)
        nbytes -= n
    return beats


def limit_bytes_per_cycle(size):
    """The receiving card's PCIe link limit for packets of `size` bytes (payload bytes per cycle)."""
    return size / (_tlp_beats(dma_length(size)) + _tlp_beats(RX_RECORD_BYTES))


def goodput(nsim, size, count, both, seed):
    from sim.verilated.rifl_nic import run_traffic
    nsim.restart(seed)
    rng = random.Random(seed)
    packets = [[(1 - h, rng.randbytes(size)) for _ in range(count)] if (h == 0 or both) else [] for h in range(2)]
    out = run_traffic(nsim, packets)
    for d in out:
        if d.payload != packets[d.src][d.index][1]:
            raise RuntimeError(f"packet {d.index} of host {d.src} arrived corrupted")
    per_dir = []
    for src in (0, 1) if both else (0,):
        ds = [d for d in out if d.src == src]
        span = max(d.arrived for d in ds) - min(d.posted for d in ds)
        per_dir.append(sum(len(d.payload) for d in ds) / span)
    return min(per_dir), len(out)


def latency(nsim, size, count, seed):
    from sim.verilated.rifl_nic import run_traffic
    from software.rifl.nic import RiflNic
    nsim.restart(seed)
    drivers = [RiflNic(port) for port in nsim.ports]
    rng = random.Random(seed)
    samples = []
    for _ in range(count):
        (d,) = run_traffic(nsim, [[(1, rng.randbytes(size))], []], drivers=drivers)
        samples.append(d.arrived - d.posted)
    return samples


def run(quick=False, nsim=None):
    """The bench; `nsim`: a NICSim of one_switch(2) to run on (left open), else one is built and closed."""
    from sim.verilated.rifl_nic import NICSim
    result = BenchResult("rifl_nic")
    count = 6 if quick else 200
    sizes = (64, NIC_MAX_PACKET) if quick else SIZES
    own = nsim is None
    if own:
        nsim = NICSim(one_switch(2), quick_build=quick)
    rows = []
    try:
        t = Table("Goodput, packets back to back (Verilated NICs, PCIe at TLP level, 2-port RIFL switch, F = 256)",
                  ["bytes", "directions", "packets", "B/cycle", "PCIe limit B/cycle", "ratio", "Gb/s at 125 MHz"],
                  notes="B/cycle: the slower direction's payload bytes per cycle. The limit counts only the "
                        "receiving card's write TLPs (header and payload beats); the RIFL link carries 30 "
                        "payload bytes a cycle at F = 256, so PCIe is the bottleneck.")
        for size in sizes:
            lim = limit_bytes_per_cycle(size)
            for both in (False, True):
                g, n = goodput(nsim, size, count, both, seed=size + both)
                dirs = 2 if both else 1
                t.add(size, dirs, n, g, lim, g / lim, g * 8 * SYS_CLK_HZ / 1e9)
                rows.append(dict(bytes=size, directions=dirs, packets=n, bytes_per_cycle=g, limit_bytes_per_cycle=lim,
                                 ratio=g / lim, gbps=g * 8 * SYS_CLK_HZ / 1e9))
        result.tables.append(t)
        lat = Table("Latency, one packet in flight: post to completion record seen",
                    ["bytes", "samples", "median cycles", "max cycles", "median us at 125 MHz"])
        lats = []
        for size in sizes:
            s = latency(nsim, size, 3 if quick else 20, seed=size)
            med = statistics.median(s)
            lat.add(size, len(s), med, max(s), med / SYS_CLK_HZ * 1e6)
            lats.append(dict(bytes=size, samples=s, median_cycles=med, median_us=med / SYS_CLK_HZ * 1e6))
        result.tables.append(lat)
    finally:
        if own:
            nsim.close()
    result.data["goodput"] = rows
    result.data["latency"] = lats
    print(result.markdown())
    result.write()
    return result


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

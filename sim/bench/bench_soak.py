"""make bench BENCH=soak: long Verilator runs under random traffic and injected faults, every loss counted.

Each soak runs a core's Verilated model for `cycles` cycles (10^8 in the full run) with its faults on and
reports the cycles, the packets or frames carried, the faults injected, and what the checkers found lost,
duplicated, out of order or corrupted (all must be 0), with the wall time:

* `rifl_link`: two RIFL endpoints over lossy channels (sim.verilated.rifl.loopback, F = 64, the longest
  round trip the frame id allows: MAX_RTT_CYCLES / 2 each way), traffic generators saturating both ways,
  1-bit error bursts in one frame in 10^3 both ways (NACK, go-back-N replays).
* `rifl_two_clocks`: two endpoints on separate clocks at +100 / -100 ppm through the elastic buffers
  (two_clock_link, the SERDES word path): IDLEs inserted and removed, no slip.
* `rifl_switch`: the whole RIFL switch (RIFLNetBlock, N = 4: L1 links, VOQs, iSLIP, Batcher-Banyan) with
  independent bit errors on every link (net_point, bit error rate 1/20000), random traffic to random
  outputs. Independent bit errors include patterns that CRC12 cannot detect (one in 4096 of the frames
  with more errors than it guarantees to catch): those deliveries are counted as `crc_escapes` by the
  channels, and `corrupted` may not exceed them.

`quick=True` runs 10^5 cycles each (the smoke test).
"""
import re
import time

from cores.rifl.common import CHK_FAULTS, LOOPBACK_DIRECTIONS, LOOPBACK_ENDPOINTS, MAX_RTT_CYCLES
from sim.bench.framework import BenchResult, Table

FULL_CYCLES = 10 ** 8
QUICK_CYCLES = 10 ** 5
BURST_THRESHOLD = 2 ** 32 // 1000       # per-frame error probability 10^-3
NET_BER_THRESHOLD = 2 ** 32 // 20000


def _both_ways(r, **extra):
    """A loopback's counters summed over its two directions and endpoints."""
    d, e = LOOPBACK_DIRECTIONS, LOOPBACK_ENDPOINTS
    return dict(carried=sum(r[f"{x}_delivered"] for x in d), sent=sum(r[f"{x}_sent"] for x in d),
                replays=sum(r[f"{x}_replays"] for x in e), **{k: sum(r[f"{x}_{k}"] for x in d) for k in CHK_FAULTS},
                **extra)


def _rifl_link(cycles):
    from sim.verilated import rifl
    r = rifl.run_point(rifl.loopback(64, MAX_RTT_CYCLES // 2), cycles, BURST_THRESHOLD)
    return _both_ways(r, faults=sum(r[f"{x}_channel_errors"] for x in LOOPBACK_DIRECTIONS))


def _rifl_two_clocks(cycles):
    from sim.verilated import rifl
    r = rifl.two_clock_run(rifl.two_clock_link(64, serdes=True), cycles, 100, -100)
    d = LOOPBACK_DIRECTIONS
    return _both_ways(r, faults=sum(r[f"{x}_removed"] + r[f"{x}_inserted"] for x in d),
                      slips=sum(r[f"{x}_slips"] for x in d))


def _rifl_switch(cycles):
    from sim.verilated import rifl
    r = rifl.net_point(rifl.net_block(n=4), cycles, 20000, [NET_BER_THRESHOLD] * 4)
    hosts = sorted({k.split("_")[0] for k in r if re.fullmatch(r"h\d+_sent", k)})
    channels = [k for k in r if re.fullmatch(r"c\d+_errors", k)]
    return dict(carried=sum(r[f"{h}_delivered"] for h in hosts), sent=sum(r[f"{h}_sent"] for h in hosts),
                faults=sum(r[c] for c in channels), replays=r["replays"],
                dropped=r["drop_full"] + r["cells_in"] - r["cells_out"],
                crc_escapes=sum(v for k, v in r.items() if re.fullmatch(r"c\d+_undetected", k)),
                **{k: sum(r[f"{h}_{k}"] for h in hosts) for k in CHK_FAULTS})


SOAKS = [
    ("rifl_link", "RIFL L1: 2 endpoints, longest round trip, lossy channels (10^-3 frames in error)", _rifl_link),
    ("rifl_two_clocks", "RIFL L1 + elastic buffers, clocks at +-100 ppm (SERDES words)", _rifl_two_clocks),
    ("rifl_switch", "RIFL switch N = 4 (L1 links, VOQs, iSLIP, Batcher-Banyan), bit errors on every link",
     _rifl_switch),
]


def run(quick=False):
    cycles = QUICK_CYCLES if quick else FULL_CYCLES
    t = Table(f"Soak: {cycles:,} cycles each", ["soak", "what", "cycles", "sent", "carried", "faults injected",
                                                 "replays", "lost", "duplicated", "out of order", "corrupted",
                                                 "CRC escapes", "slips", "wall (s)", "Mcycles/s"])
    data = {}
    for name, what, fn in SOAKS:
        t0 = time.monotonic()
        r = fn(cycles)
        wall = time.monotonic() - t0
        r.update(cycles=cycles, wall_s=round(wall, 1))
        data[name] = r
        t.add(name, what, cycles, r["sent"], r["carried"], r["faults"], r["replays"], r.get("lost", 0),
              r.get("duplicated", 0), r.get("out_of_order", 0), r.get("corrupted", 0), r.get("crc_escapes", 0),
              r.get("slips", 0),
              round(wall, 1), round(cycles / wall / 1e6, 2))
    t.notes = ("lost, duplicated, out of order: the traffic checkers' counts (every one must be 0); corrupted: "
               "packets delivered with wrong content, at most the CRC escapes (frames whose random multi-bit "
               "errors CRC12 cannot see, counted by the channel models: 1-bit bursts never escape); faults "
               "injected: frames hit by channel errors (IDLEs inserted/removed for the two clocks); the wall time "
               "includes building the model when it is not cached.")
    return BenchResult("soak", tables=[t], data=data)

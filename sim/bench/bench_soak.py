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

The cores whose traffic is made in Python run in epochs (`repeat=` of their Verilated harnesses): one
epoch of inputs is generated, checked against the reference model once, and sent again and again for the
whole run without a reset; the harness compares every later epoch's outputs with the first epoch's (any
difference is counted as corrupted), and the counters must equal the epochs times one epoch's:

* `minisharp`: the small MiniSharp core (3 x 8-bit ports): a 4-rank reduction from random ports at random
  times with one rank's contribution to one chunk lost (that chunk never completes; its slot is freed by
  the idle timeout), junk on every port, random output back-pressure.
* `sparsr`: the Sparsr receiver: every row written (every density, raw rows in pieces), a DMA, every row
  read, with altered and random frames between them (refused, or accepted as the reference model says),
  random valid/ready.
* `sync`: the synchronizer grid (4 x 4 and the lamlet): rounds of every ident with random modes, values,
  orders and gaps, one ident's rounds with mismatched modes (error completions), triggers with undefined
  modes (refused), random completion back-pressure.

`quick=True` runs 10^5 cycles each (the smoke test; the sync soak on the benchmark's quick grid).
"""
import random
import re

from cores.rifl.common import CHK_FAULTS, LOOPBACK_DIRECTIONS, LOOPBACK_ENDPOINTS, MAX_RTT_CYCLES
from sim.bench.framework import BenchResult, Table
from sim.bench.sweep import sweep, sweep_stats, tasks

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


def _quick_build(cycles):
    """The quick soak's RIFL switch: a short run (10^5 cycles, under a CPU-second) of a model whose C++ build
    takes ~48 CPU-s at -Os: sim.verilated's quick_build, the model tests/test_rifl_net_soc.py builds."""
    return cycles <= QUICK_CYCLES


def _rifl_switch(cycles):
    from sim.verilated import rifl
    r = rifl.net_point(rifl.net_block(n=4, quick_build=_quick_build(cycles)), cycles, 20000, [NET_BER_THRESHOLD] * 4)
    hosts = sorted({k.split("_")[0] for k in r if re.fullmatch(r"h\d+_sent", k)})
    channels = [k for k in r if re.fullmatch(r"c\d+_errors", k)]
    return dict(carried=sum(r[f"{h}_delivered"] for h in hosts), sent=sum(r[f"{h}_sent"] for h in hosts),
                faults=sum(r[c] for c in channels), replays=r["replays"],
                dropped=r["drop_full"] + r["cells_in"] - r["cells_out"],
                crc_escapes=sum(v for k, v in r.items() if re.fullmatch(r"c\d+_undetected", k)),
                **{k: sum(r[f"{h}_{k}"] for h in hosts) for k in CHK_FAULTS})


SPARSR_ROWS = (4, 2)       # WMEM, XMEM rows: the fuzz target's receiver (one Verilator build)


def sparsr_epoch(seed, wrows=SPARSR_ROWS[0], xrows=SPARSR_ROWS[1]):
    """One epoch of the Sparsr soak: every WMEM and XMEM row written (rows of every density, raw rows in
    pieces), a DMA from XMEM into WMEM, reads of every row, and junk between them (valid frames with words
    overwritten, truncated or extended, random words): frames and the junk count. The epoch writes each row
    before it reads it, so its answers do not depend on what an earlier epoch left."""
    from cores.sparsr.common import CMD_WRITE_XMEM, FRAME_WORDS
    from software.sparsr.rows import random_row
    from software.sparsr.frames import dma_frame, encode_rows, read_frame
    rng = random.Random(seed)
    density = lambda: rng.choice((0, 1, 7, 60, 101, 102, 180, 256))
    frames = [f for r in range(wrows) for f in encode_rows(r, [random_row(rng, density())])]
    frames += [f for r in range(xrows) for f in encode_rows(r, [random_row(rng, density())], CMD_WRITE_XMEM)]
    frames += [dma_frame(0, wrows - xrows, xrows)] + [read_frame(r, 1) for r in range(wrows)]
    valid = list(frames)
    for _ in range(len(valid) // 2):
        base, how = list(rng.choice(valid)), rng.choice(["overwrite", "truncate", "extend", "random"])
        if how == "overwrite":
            for _ in range(rng.randint(1, 4)):
                base[rng.randrange(FRAME_WORDS)] = rng.getrandbits(32)
        elif how == "truncate":
            base = base[:rng.randrange(1, FRAME_WORDS)]
        elif how == "extend":
            base += [rng.getrandbits(32) for _ in range(rng.randint(1, 40))]
        else:
            base = [rng.getrandbits(32) for _ in range(rng.randint(1, FRAME_WORDS + 20))]
        frames.insert(rng.randrange(len(frames) + 1), base)
    return frames, len(frames) - len(valid)


def _sparsr(cycles):
    from sim.verilated.sparsr import VerilatedReceiver
    from software.sparsr.reference import CardModel
    frames, junk = sparsr_epoch(seed=1)
    model = CardModel(*SPARSR_ROWS)
    expected = [a for f in frames for a in model.receive(f)]
    per_epoch = dict(model.counters)
    again = [a for f in frames for a in model.receive(f)]
    if again != expected:
        raise AssertionError("the Sparsr soak's epoch is not idempotent: its answers depend on the one before")
    card = VerilatedReceiver(*SPARSR_ROWS)
    probe = card.run(frames, seed=1, valid_prob=0.7, ready_prob=0.5)
    repeat = max(1, -(-cycles * 105 // (100 * probe.cycles)))     # epochs vary in length: 5 % more
    r = card.run(frames, seed=2, valid_prob=0.7, ready_prob=0.5, max_cycles=4 * repeat * probe.cycles, repeat=repeat)
    accepted = repeat * per_epoch["frames_ok"]
    answer_words = sum(len(a) for a in expected)
    return dict(cycles=r.cycles, sent=accepted, carried=r.counters["frames_ok"], faults=repeat * junk,
                lost=max(0, accepted - r.counters["frames_ok"]),
                corrupted=r.mismatches + sum(1 for a, b in zip(r.answers, expected) if a != b) +
                abs(len(r.answers) - len(expected)),
                counters_ok=all(r.counters[k] == repeat * v for k, v in per_epoch.items()),
                epochs=repeat, answer_words=repeat * answer_words)


MS_PORTS, MS_RANKS, MS_CHUNKS, MS_COLL = 3, 4, 4, 0xC0FFEE
MS_SLOT_TIMEOUT = 400          # ticks of the small core (16 cycles): a slot idle for 6400 cycles is freed
MS_DRAIN = 8000                # idle cycles that end an epoch: the chunk that lost a contribution times out
MS_LOST_CHUNK = 1              # the chunk of each epoch whose rank-0 contribution is lost


def minisharp_epoch(seed):
    """One epoch of the MiniSharp soak on the small core (3 ports): a setup (MS_RANKS ranks, MS_CHUNKS
    chunks, results to every port), every rank's chunks from random ports at random times, except rank 0's
    contribution to chunk MS_LOST_CHUNK (lost: that chunk never completes and its slot times out), and junk
    on every port (random bytes, random bytes behind a MiniSharp header start, the epoch's own data frames
    truncated or with a PHY error, frames of a collective that does not exist). Returns (inputs per port,
    the contributions (rank -> FP32 bit patterns), the junk count, the count of valid frames)."""
    from cores.minisharp import common as ms
    from sim.verilated.minisharp import SMALL_CORE
    from software.minisharp import packets as P
    ce = SMALL_CORE["chunk_elements"]
    host, sw = ms.HOST_MAC, ms.DEFAULT_SRC_MAC
    rng = random.Random(seed)
    n = MS_CHUNKS * ce - 3
    vecs = [[rng.getrandbits(1) << 31 | rng.randrange(100, 150) << 23 | rng.getrandbits(23) for _ in range(n)]
            for _ in range(MS_RANKS)]
    data = [(k, c, f) for k in range(MS_RANKS) for c, f in P.chunk_frames(sw, host, MS_COLL, k, vecs[k], ce)]
    inputs = [[] for _ in range(MS_PORTS)]
    inputs[0].append((0, P.setup_frame(sw, host, MS_COLL, P.setup_record(n, MS_RANKS, 0, MS_PORTS - 1)), False))
    for k, c, f in data:
        if (k, c) != (0, MS_LOST_CHUNK):
            inputs[rng.randrange(MS_PORTS)].append((300 + rng.randrange(3000), f, False))
    junk = 0
    for _ in range(12):
        kind, live = rng.choice(["random", "ms_random", "truncate", "phy_error", "other_coll"]), rng.choice(data)[2]
        if kind == "random":
            f, err = rng.randbytes(rng.randint(1, 100)), False
        elif kind == "ms_random":
            f, err = sw.to_bytes(6, "big") + host.to_bytes(6, "big") + ms.ETHERTYPE.to_bytes(2, "big") + \
                rng.randbytes(rng.randint(0, 80)), False
        elif kind == "truncate":
            f, err = live[:rng.randrange(1, ms.MS_HEADER_BYTES + 4)], False
        elif kind == "phy_error":
            f, err = live, True
        else:
            f, err = P.data_frame(sw, host, MS_COLL ^ rng.randint(1, 2**16), 0, 0, [1] * ce), False
        inputs[rng.randrange(MS_PORTS)].append((rng.randrange(3300), f, err))
        junk += 1
    for port in inputs:
        port.sort(key=lambda item: item[0])
    return inputs, vecs, junk, len(data)


def _minisharp_results(outputs, vecs):
    """Per port, the chunk indices of its exact COL_RES frames for the soak's collective (other frames are
    forwarded junk); raises on a wrong result (values against the reference model's exact sums)."""
    from cores.minisharp import common as ms
    from sim.verilated.minisharp import SMALL_CORE
    from software.minisharp import packets as P
    from software.minisharp.reference import exact_sum_fp32
    ce, n = SMALL_CORE["chunk_elements"], len(vecs[0])
    exp = [exact_sum_fp32(col) for col in zip(*vecs)]
    seen = []
    for frames in outputs:
        chunks = []
        for f in frames:
            p = P.parse(f)
            if p.get("opcode") != ms.MS_OP_COL_RES or p["collective_id"] != MS_COLL:
                continue
            p = P.parse(f, n, ce)
            c = p["chunk_index"]
            if p["values"] != exp[c * ce:c * ce + ms.chunk_length(n, c, ce)]:
                raise AssertionError(f"chunk {c}: not the exact sums")
            chunks.append(c)
        seen.append(sorted(chunks))
    return seen


def _minisharp(cycles):
    from sim.verilated.minisharp import SMALL_CORE, VerilatedMiniSharp
    inputs, vecs, junk, valid = minisharp_epoch(seed=1)
    vm = VerilatedMiniSharp(**SMALL_CORE)
    cfg = dict(slot_timeout=MS_SLOT_TIMEOUT, ready_p=0.5, drain=MS_DRAIN,
               macs=[(0x02AA00000100 + i, 0x02BB00000200 + i) for i in range(MS_PORTS)])
    probe = vm.run(inputs, seed=1, **cfg)
    complete = sorted(set(range(MS_CHUNKS)) - {MS_LOST_CHUNK})
    if _minisharp_results(probe.outputs, vecs) != [complete] * MS_PORTS or probe.counters["slot_timeouts"] != 1:
        raise AssertionError(f"the MiniSharp soak's epoch did not give its results: {probe.counters}")
    repeat = max(1, -(-cycles * 105 // (100 * probe.cycles)))     # epochs vary in length: 5 % more
    r = vm.run(inputs, seed=2, repeat=repeat, **cfg)
    wrong = sum(a != complete for a in _minisharp_results(r.outputs, vecs))
    consumed = sum(r.counters[f"port{i}_{k}"] * (1 if k == "rx_frames" else -1)
                   for i in range(MS_PORTS) for k in ("rx_frames", "rx_drops", "fwd_frames"))
    return dict(cycles=r.cycles, sent=repeat * valid, carried=consumed,
                faults=repeat * (junk + 1), lost=max(0, repeat * len(complete) - r.counters["chunks"]),
                duplicated=max(0, r.counters["chunks"] - repeat * len(complete)),
                corrupted=r.mismatches + wrong, epochs=r.epochs,
                counters_ok=all(r.counters[k] == repeat * v for k, v in probe.counters.items()),
                slot_timeouts=r.counters["slot_timeouts"], results=repeat * len(complete) * MS_PORTS)


SYNC_GRID, SYNC_ROUNDS = (4, 4), 3
SYNC_BAD_MODES = (6, 7)            # trigger modes past the six reductions: refused (ev_trigger_drop)


def sync_epoch(seed, n_parts):
    """One epoch of the sync soak: every participant runs SYNC_ROUNDS rounds of every ident (random modes,
    values, orders and gaps; ident MAX_IDENTS - 1 with one participant on a different mode, so its rounds
    complete with the error flag) and a trigger with an undefined mode after every round (refused).
    Returns (schedules, contributions, refused triggers)."""
    from cores.sync.common import MAX_IDENTS
    from sim.verilated.sync import Trigger
    from software.sync.reference import random_schedules
    rng = random.Random(seed)
    schedules, contrib = random_schedules(rng, n_parts, MAX_IDENTS, SYNC_ROUNDS, 32)
    odd = MAX_IDENTS - 1
    for r in range(SYNC_ROUNDS):             # the last participant's contribution to ident `odd` mismatches
        k = next(k for k, e in enumerate(schedules[-1]) if e[0] == odd and
                 sum(1 for x in schedules[-1][:k] if x[0] == odd) == r)
        i, mode, v = schedules[-1][k]
        schedules[-1][k] = (i, (mode + 1) % 6, v)
        contrib[(odd, r)][-1] = ((mode + 1) % 6, v)
    out, refused = [], 0
    for sch in schedules:
        entries = []
        for e in sch:
            entries.append(Trigger(*e, gap=rng.randint(0, 6)))
            if rng.random() < 0.2:
                entries.append(Trigger(rng.randrange(MAX_IDENTS), rng.choice(SYNC_BAD_MODES), rng.getrandbits(32),
                                       raw=True))
                refused += 1
        out.append(entries)
    return out, contrib, refused


def _sync_grid(cycles):
    from sim.bench.bench_sync import QUICK_GRID
    return QUICK_GRID if cycles <= QUICK_CYCLES else SYNC_GRID        # quick: the sync tests' build


def _sync(cycles):
    from cores.sync.common import DEFAULT_HOP_LATENCY, MAX_IDENTS
    from sim.verilated.sync import GridSim
    from software.sync.reference import check_completions
    sim = GridSim(*_sync_grid(cycles), n_idents=MAX_IDENTS, value_width=32, hop_latency=DEFAULT_HOP_LATENCY)
    n = sim.n_participants
    schedules, contrib, refused = sync_epoch(1, n)
    accepts, completions, events, probe_cycles = sim.run(schedules, 20000, ready_prob=0.5, seed=1)
    check_completions(n, accepts, completions, contrib, SYNC_ROUNDS, 32)
    repeat = max(1, -(-cycles * 105 // (100 * probe_cycles)))     # epochs vary in length: 5 % more
    accepts, completions, events_all, total = sim.run(schedules, 4 * repeat * probe_cycles, ready_prob=0.5, seed=2,
                                                      repeat=repeat)
    check_completions(n, accepts, completions, contrib, SYNC_ROUNDS, 32)
    epochs, mismatches = sim.last_epochs
    rounds = n * MAX_IDENTS * SYNC_ROUNDS
    return dict(cycles=total, sent=repeat * rounds, carried=repeat * rounds - mismatches if epochs == repeat else 0,
                faults=events_all["trigger_drop"] + events_all["mismatch"], lost=rounds * (repeat - epochs),
                corrupted=mismatches, epochs=epochs, refused=events_all["trigger_drop"],
                # (mismatch events: at least one a mismatched round; how many depends on where contributions meet)
                counters_ok=events["trigger_drop"] == refused and events_all["trigger_drop"] == repeat * refused and
                events_all["rx_drop"] == 0 and events_all["mismatch"] >= repeat * SYNC_ROUNDS)


def _gateware(name, cycles):
    """The digest of the Verilated model soak `name` runs (its sweep point's cache key)."""
    from cores.sync.common import DEFAULT_HOP_LATENCY, MAX_IDENTS
    from sim.verilated import rifl
    from sim.verilated.minisharp import SMALL_CORE, VerilatedMiniSharp
    from sim.verilated.sparsr import VerilatedReceiver
    from sim.verilated.sync import GridSim
    return {
        "rifl_link": lambda: rifl.loopback(64, MAX_RTT_CYCLES // 2, build=False).digest,
        "rifl_two_clocks": lambda: rifl.two_clock_link(64, serdes=True, build=False).digest,
        "rifl_switch": lambda: rifl.net_block(n=4, build=False, quick_build=_quick_build(cycles)).digest,
        "minisharp": lambda: VerilatedMiniSharp(build=False, **SMALL_CORE).model.digest,
        "sync": lambda: GridSim(*_sync_grid(cycles), n_idents=MAX_IDENTS, value_width=32,
                                hop_latency=DEFAULT_HOP_LATENCY,
                                build=False).model.digest,
        "sparsr": lambda: VerilatedReceiver(*SPARSR_ROWS, build=False).model.digest,
    }[name]()


SOAKS = [
    ("rifl_link", "RIFL L1: 2 endpoints, longest round trip, lossy channels (10^-3 frames in error)", _rifl_link),
    ("rifl_two_clocks", "RIFL L1 + elastic buffers, clocks at +-100 ppm (SERDES words)", _rifl_two_clocks),
    ("rifl_switch", "RIFL switch N = 4 (L1 links, VOQs, iSLIP, Batcher-Banyan), bit errors on every link",
     _rifl_switch),
    ("minisharp", "MiniSharp core (3 x 8-bit ports): epochs of a 4-rank reduction with a lost contribution "
     "(slot timeout) and junk on every port, random output back-pressure", _minisharp),
    ("sync", f"Sync grid {SYNC_GRID[0]} x {SYNC_GRID[1]} + lamlet: epochs of {SYNC_ROUNDS} rounds of every ident "
     "(one ident with mismatched modes) with refused triggers, random completion back-pressure", _sync),
    ("sparsr", "Sparsr receiver: epochs of row writes, DMA and reads with junk frames, random valid/ready",
     _sparsr),
]


def soak_point(name, cycles):
    """One soak (a sweep task): its counts, `cycles` the cycles it ran (at least the `cycles` asked for)."""
    r = dict(SOAKS_BY_NAME[name](cycles))
    r.setdefault("cycles", cycles)
    return r


SOAKS_BY_NAME = {name: fn for name, _, fn in SOAKS}


def run(quick=False):
    cycles = QUICK_CYCLES if quick else FULL_CYCLES
    points = tasks(soak_point, [dict(name=name, cycles=cycles) for name, _, _ in SOAKS],
                   gateware=lambda p: _gateware(p["name"], p["cycles"]))
    results = sweep("soak", points)
    walls = sweep_stats().walls
    t = Table(f"Soak: {cycles:,} cycles each", ["soak", "what", "cycles", "sent", "carried", "faults injected",
                                                 "replays", "lost", "duplicated", "out of order", "corrupted",
                                                 "CRC escapes", "slips", "counters add up", "wall (s)", "Mcycles/s"])
    data = {}
    for (name, what, _), r, wall in zip(SOAKS, results, walls):
        data[name] = dict(r, wall_s=round(wall, 1))
        counts = [r.get(k, "-") for k in ("replays", "lost", "duplicated", "out_of_order", "corrupted",
                                          "crc_escapes", "slips")]
        t.add(name, what, r["cycles"], r["sent"], r["carried"], r["faults"], *counts,
              {True: "yes", False: "NO"}.get(r.get("counters_ok"), "-"), round(wall, 1),
              round(r["cycles"] / wall / 1e6, 2))
    t.notes = ("lost, duplicated, out of order: the traffic checkers' counts (every one must be 0); corrupted: "
               "packets delivered with wrong content (for the epoch soaks: outputs that differ from the first "
               "epoch's or from the reference model), at most the CRC escapes (frames whose random multi-bit "
               "errors CRC12 cannot see, counted by the channel models: 1-bit bursts never escape); faults "
               "injected: frames hit by channel errors (IDLEs inserted/removed for the two clocks; junk frames, "
               "lost contributions and refused triggers for the epoch soaks); counters add up: every counter equals "
               "the epochs times one epoch's; the wall time includes building the model when it is not cached; "
               "the soaks run as sweep points, in parallel on the local cores; -: a count this soak does not "
               "compute.")
    return BenchResult("soak", tables=[t], data=data)


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

"""Synchronizer grid against the reference model: reductions, completion timing, ident reuse, direction
meanings, mode mismatch, bad input. Seeded random trigger times, orders, values, modes and back-pressure."""
import random

import pytest
from migen import run_simulation

from cores.sync.common import (DIRS, MODE_MAX, MODE_OR, MAX_IDENTS, OPPOSITE, VECTORS,
                               MODE_BITS, n_flits, pack, unpack, deps, min_hop_latency)
from cores.sync.grid import SyncGrid
from cores.sync.node import SyncNode
from software.sync.reference import (LAMLET, reduce_values, participants, coverage, expected_messages,
                                 random_schedules, check_completions)
from tests.harness.tiers import extended


def run_grid(grid, schedules, seed, max_cycles, ready_prob=0.7, gap_max=3, count_links=False):
    """Drive a SyncGrid. schedules[p] = list of (ident, mode, value) in trigger order for participant p; a
    node triggers the next round of an ident only after it saw its own completion of the previous round
    (entries with a 4th element are sent without waiting and are not counted as rounds: bad input).
    Returns (accepts, completions, packets, events): accepts[(p, ident, round)] = cycle the trigger was taken,
    completions[p] = [(cycle, ident, mode, error, value)], packets[(p, d)] = number of packets sent."""
    rng = random.Random(seed)
    parts = grid.participants
    names = participants(grid.width, grid.height, grid.with_lamlet)
    nf = n_flits(grid.value_width)
    accepts, completions = {}, {p: [] for p in range(len(parts))}
    flits = {}
    events = {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}

    def gen():
        idx = [0] * len(parts)
        rounds = [{} for _ in parts]
        seen = [{} for _ in parts]          # completions seen per ident
        gap = [rng.randint(0, gap_max) for _ in parts]
        driving = [False] * len(parts)
        expected = sum(len([e for e in sch if len(e) == 3]) for sch in schedules)
        tail = None
        for cycle in range(max_cycles):
            if tail is None and all(i == len(s) for i, s in zip(idx, schedules)) and \
                    sum(len(c) for c in completions.values()) >= expected:
                tail = cycle + max(grid.width, grid.height) * grid.hop_latency + 10   # catch extra completions
            if tail is not None and cycle >= tail:
                break
            for p, node in enumerate(parts):
                if driving[p] and (yield node.sink.ready):
                    ident = schedules[p][idx[p]][0]
                    if len(schedules[p][idx[p]]) == 3:
                        accepts[(p, ident, rounds[p].get(ident, 0))] = cycle
                        rounds[p][ident] = rounds[p].get(ident, 0) + 1
                    idx[p] += 1
                    driving[p] = False
                    gap[p] = rng.randint(0, gap_max)
                if (yield node.source.valid) and (yield node.source.ready):
                    c = (cycle, (yield node.source.ident), (yield node.source.mode), (yield node.source.error),
                         (yield node.source.value))
                    completions[p].append(c)
                    seen[p][c[1]] = seen[p].get(c[1], 0) + 1
                events["trigger_drop"] += (yield node.ev_trigger_drop)
                events["rx_drop"] += (yield node.ev_rx_drop)
                events["mismatch"] += (yield node.ev_mismatch)
                if count_links:
                    for d in node.neighbours:
                        if (yield node.tx[d].valid):
                            flits[(names[p], d)] = flits.get((names[p], d), 0) + 1
                yield node.source.ready.eq(rng.random() < ready_prob)
                if not driving[p] and idx[p] < len(schedules[p]):
                    ident, mode, value = schedules[p][idx[p]][:3]
                    raw = len(schedules[p][idx[p]]) > 3
                    ready_to_go = raw or seen[p].get(ident, 0) >= rounds[p].get(ident, 0)
                    if ready_to_go and gap[p] == 0:
                        driving[p] = True
                        yield node.sink.ident.eq(ident)
                        yield node.sink.mode.eq(mode)
                        yield node.sink.value.eq(value)
                    elif ready_to_go:
                        gap[p] -= 1
                yield node.sink.valid.eq(driving[p])
            yield

    run_simulation(grid, gen())
    packets = {k: v // nf for k, v in flits.items()}
    assert all(v % nf == 0 for v in flits.values()), "a link stopped in the middle of a packet"
    return accepts, completions, packets, events


# Reference model and ABI --------------------------------------------------------------------------

def test_direction_table_partitions_the_grid():
    """Own trigger + the 8 incoming messages' coverage (spec table) = every participant, disjoint; and each
    outgoing message's coverage = own + the coverage of the incoming messages in common.deps."""
    for w, h in [(1, 1), (3, 2), (4, 4), (5, 3)]:
        everyone = set(participants(w, h))
        for x in range(w):
            for y in range(h):
                parts = [{(x, y)} | ({LAMLET} if (x, y) == (0, 0) else set())]
                for d in DIRS:
                    nb = (x + VECTORS[d][0], y + VECTORS[d][1])
                    if 0 <= nb[0] < w and 0 <= nb[1] < h:
                        parts.append(coverage(nb, OPPOSITE[d], w, h))
                assert set().union(*parts) == everyone
                assert sum(len(p) for p in parts) == len(everyone)
                for d in DIRS:
                    built = set(parts[0])
                    for o in deps(d):
                        nb = (x + VECTORS[o][0], y + VECTORS[o][1])
                        if 0 <= nb[0] < w and 0 <= nb[1] < h:
                            built |= coverage(nb, OPPOSITE[o], w, h)
                    assert built == coverage((x, y), d, w, h)


def test_pack_and_reduce():
    rng = random.Random(1)
    for vw in (1, 13, 23, 32):
        for _ in range(50):
            f = (rng.randrange(MAX_IDENTS), rng.randrange(1 << MODE_BITS), rng.randrange(2), rng.getrandbits(vw))
            flits = pack(*f, vw)
            assert len(flits) == n_flits(vw) and all(x < 1 << 10 for x in flits)
            assert unpack(flits, vw) == f
    assert [n_flits(v) for v in (13, 23, 32)] == [2, 3, 4]
    assert reduce_values(MODE_MAX, [0xFFFFFFFF, 1], 32) == 1
    assert reduce_values(MODE_OR, [1, 4], 32) == 5


def test_bad_parameters():
    with pytest.raises(ValueError):
        SyncGrid(0, 2)
    with pytest.raises(ValueError):
        SyncGrid(2, 2, hop_latency=min_hop_latency(32) - 1)
    with pytest.raises(ValueError):
        SyncNode(n_idents=9)


# Random synchronizations -------------------------------------------------------------------------

@pytest.mark.parametrize("w,h,n_idents,vw,rounds,lamlet,hop,seed", [
    (1, 1, 8, 32, 3, True, 10, 1),
    (1, 1, 2, 16, 2, False, 9, 2),
    (2, 2, 8, 32, 2, True, 10, 3),
    extended(3, 2, 4, 16, 3, True, 11, 4),
    (1, 4, 3, 8, 2, False, 9, 5),
    (3, 3, 2, 3, 2, True, 9, 8),         # 3-bit values: one-flit packets (9 cycles a hop)
])
def test_random_synchronizations(w, h, n_idents, vw, rounds, lamlet, hop, seed):
    rng = random.Random(seed)
    grid = SyncGrid(w, h, n_idents=n_idents, value_width=vw, hop_latency=hop, with_lamlet=lamlet)
    n = len(grid.participants)
    schedules, contrib = random_schedules(rng, n, n_idents, rounds, vw)
    cycles = 150 + rounds * (n_idents * 25 + max(w, h) * hop * 3)
    accepts, completions, _, events = run_grid(grid, schedules, seed, cycles)
    check_completions(len(grid.participants), accepts, completions, contrib, rounds, grid.value_width)
    assert events == {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}


def test_ident_reuse_back_to_back():
    """One ident, 6 rounds, no gaps: a node triggers the next round the cycle after its completion, while
    far nodes still finish the previous one (the next-round state absorbs the early messages)."""
    rng = random.Random(11)
    grid = SyncGrid(3, 2, n_idents=1, value_width=32, hop_latency=12)
    n = len(grid.participants)
    schedules, contrib = random_schedules(rng, n, 1, 5, 32)
    accepts, completions, _, events = run_grid(grid, schedules, 11, 600, ready_prob=1.0, gap_max=0)
    check_completions(len(grid.participants), accepts, completions, contrib, 5, grid.value_width)
    assert events["rx_drop"] == 0 and events["trigger_drop"] == 0
    # reuse really overlapped: some node triggered round r+1 before another node completed round r
    overlap = False
    for r in range(4):
        first_retrigger = min(accepts[(p, 0, r + 1)] for p in range(n))
        last_done = max(c[0] for p in range(n) for c in [completions[p][r]])
        overlap |= first_retrigger < last_done
    assert overlap


# Direction meanings ------------------------------------------------------------------------------

@pytest.mark.parametrize("seed", [21, extended(22), extended(23)])
def test_message_meanings(seed):
    """Only a subset triggers: a link carries a message iff every participant its direction vouches for
    (spec table) has triggered, and nobody completes."""
    rng = random.Random(seed)
    w, h = 4, 3
    grid = SyncGrid(w, h, n_idents=1, value_width=8, hop_latency=9)
    names = participants(w, h)
    silent = rng.sample(range(len(names)), rng.randint(1, 3))
    schedules = [[] if p in silent else [(0, MODE_OR, rng.getrandbits(8))] for p in range(len(names))]
    triggered = {names[p] for p in range(len(names)) if p not in silent}
    _, completions, packets, _ = run_grid(grid, schedules, seed, 80, count_links=True)
    assert all(not c for c in completions.values())
    sent = {k for k, v in packets.items() if v}
    assert all(v <= 1 for v in packets.values())
    assert sent == expected_messages(triggered, w, h), f"silent {[names[p] for p in silent]}"


# Mode mismatch and bad input ---------------------------------------------------------------------

def test_mode_mismatch_flagged_everywhere():
    rng = random.Random(31)
    grid = SyncGrid(3, 3, n_idents=2, value_width=16, hop_latency=10)
    n = len(grid.participants)
    schedules, contrib = random_schedules(rng, n, 2, 1, 16, mismatch=True)
    accepts, completions, _, events = run_grid(grid, schedules, 31, 200)
    check_completions(len(grid.participants), accepts, completions, contrib, 1, grid.value_width)
    assert all(c[3] == 1 for p in completions for c in completions[p])
    assert events["mismatch"] >= 2 and events["rx_drop"] == 0


def test_bad_triggers_dropped_and_counted():
    """Trigger with a bad mode, an ident beyond n_idents and a second trigger of an ident in flight: each is
    dropped and counted, and the good synchronization still completes correctly."""
    grid = SyncGrid(2, 1, n_idents=2, value_width=8, hop_latency=9, with_lamlet=False)
    # participant 1 never triggers ident 0, so participant 0's second ident-0 trigger hits an ident in flight
    schedules = [[(0, 7, 1, "bad"), (2, MODE_MAX, 1, "bad"), (0, MODE_MAX, 5), (0, MODE_MAX, 6, "bad"),
                  (1, MODE_OR, 3)],
                 [(1, MODE_OR, 4)]]
    _, completions, _, events = run_grid(grid, schedules, 41, 60, ready_prob=1.0, gap_max=1)
    assert events["trigger_drop"] == 3
    assert [(c[1], c[3], c[4]) for c in completions[0]] == [(1, 0, 7)]
    assert [(c[1], c[3], c[4]) for c in completions[1]] == [(1, 0, 7)]


def test_bad_packet_dropped_and_counted():
    """Packets with an undefined mode or an ident beyond n_idents arriving on a link are dropped and
    counted; a good packet after them is merged."""
    node = SyncNode(neighbours=[DIRS[0]], n_idents=2, value_width=8)
    out = {}

    def gen():
        rx = node.rx[DIRS[0]]
        drops = 0
        for flits in [pack(0, 7, 0, 1, 8), pack(3, MODE_MAX, 0, 1, 8), pack(1, MODE_MAX, 0, 9, 8)]:
            for f in flits:
                yield rx.valid.eq(1)
                yield rx.data.eq(f)
                yield
                drops += (yield node.ev_rx_drop)
        yield rx.valid.eq(0)
        yield node.sink.valid.eq(1)
        yield node.sink.ident.eq(1)
        yield node.sink.mode.eq(MODE_MAX)
        yield node.sink.value.eq(3)
        yield node.source.ready.eq(1)
        for _ in range(14):
            yield
            drops += (yield node.ev_rx_drop)
            if (yield node.sink.ready):
                yield node.sink.valid.eq(0)
            if (yield node.source.valid):
                out["cpl"] = ((yield node.source.ident), (yield node.source.value))
        out["drops"] = drops

    run_simulation(node, gen())
    assert out == {"cpl": (1, 9), "drops": 2}

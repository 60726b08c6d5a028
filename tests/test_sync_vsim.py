"""Synchronizer grid in Verilator (sim.verilated.sync: the SyncNode RTL wired like SyncGrid) against the
reference model: every ident in flight with random orders, gaps, modes, values and completion back-pressure;
back-to-back ident reuse; mode mismatch; latency against the hop model. One build, shared with the
benchmark's quick mode."""
import random

from cores.sync.common import DEFAULT_HOP_LATENCY, MAX_IDENTS, MODE_OR, min_hop_latency
from sim.bench.bench_sync import QUICK_GRID, analytic, measure
from software.sync.reference import LAMLET, random_schedules, check_completions
from sim.verilated.sync import GridSim, Trigger

import pytest

from tests.harness.verilog import backward_part_selects

pytestmark = pytest.mark.long        # the whole file: tens of seconds or more


@pytest.fixture(scope="module")
def sim():
    w, h = QUICK_GRID
    return GridSim(w, h, n_idents=MAX_IDENTS, value_width=32, hop_latency=DEFAULT_HOP_LATENCY)


@pytest.mark.parametrize("seed,rounds,ready", [(1, 3, 0.7), (2, 2, 0.2)])
def test_random_all_idents(sim, seed, rounds, ready):
    rng = random.Random(seed)
    n = sim.n_participants
    schedules, contrib = random_schedules(rng, n, MAX_IDENTS, rounds, 32)
    schedules = [[Trigger(*e, gap=rng.randint(0, 4)) for e in sch] for sch in schedules]
    accepts, completions, events, cycles = sim.run(schedules, 5000, ready_prob=ready, seed=seed)
    check_completions(n, accepts, completions, contrib, rounds, 32)
    assert sum(len(c) for c in completions.values()) == n * MAX_IDENTS * rounds
    assert events == {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}
    assert cycles < 5000


def test_back_to_back_reuse(sim):
    """Every ident 5 rounds, no gaps, completions always taken: a node re-triggers an ident the cycle after
    its own completion while far nodes still finish the previous round."""
    rng = random.Random(3)
    n = sim.n_participants
    schedules, contrib = random_schedules(rng, n, MAX_IDENTS, 5, 32)
    accepts, completions, events, _ = sim.run(schedules, 5000)
    check_completions(n, accepts, completions, contrib, 5, 32)
    assert events == {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}
    overlap = any(min(accepts[(p, i, r + 1)] for p in range(n)) <
                  max(c[0] for p in range(n) for c in completions[p] if c[1] == i)
                  for i in range(MAX_IDENTS) for r in range(4))
    assert overlap


def test_mode_mismatch_everywhere(sim):
    rng = random.Random(4)
    n = sim.n_participants
    schedules, contrib = random_schedules(rng, n, MAX_IDENTS, 1, 32, mismatch=True)
    accepts, completions, events, _ = sim.run(schedules, 3000)
    check_completions(n, accepts, completions, contrib, 1, 32)
    assert all(c[3] == 1 for p in completions for c in completions[p])
    assert events["mismatch"] >= MAX_IDENTS and events["rx_drop"] == 0


def test_silent_participant_blocks_only_its_ident(sim):
    """One participant never triggers ident 0: nobody completes ident 0, every other ident completes."""
    rng = random.Random(5)
    n = sim.n_participants
    silent = rng.randrange(n)
    schedules = [[Trigger(i, MODE_OR, rng.getrandbits(32)) for i in range(MAX_IDENTS) if (p, i) != (silent, 0)]
                 for p in range(n)]
    _, completions, events, _ = sim.run(schedules, 1000, tail=100)
    for p in range(n):
        assert sorted(c[1] for c in completions[p]) == list(range(1, MAX_IDENTS))
    assert events == {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}


@pytest.mark.parametrize("last", ["lamlet", "corner"])
def test_latency_matches_the_hop_model(sim, last):
    last = LAMLET if last == "lamlet" else (sim.width - 1, sim.height - 1)
    assert measure(sim, last) == analytic(sim.width, sim.height, last, DEFAULT_HOP_LATENCY)


@pytest.mark.parametrize("vw,hop", [(3, 9), (8, 9), (13, 11), (16, 9)])
def test_packet_lengths(vw, hop):
    """1-, 2- and 3-flit packets (value widths 3, 8/13, 16) through a small grid in Verilator. Regression: with
    2 flits the 10-bit flit shift registers were updated from a zero-width slice `sh[10:]`, which Migen's
    simulator evaluates as empty but the Verilog printed as the backward part-select `sh[9:10]` (2 bits), so
    the first flit reached the receiver shifted by 2 bits (rx_drop, mismatch, wrong values)."""
    sim = GridSim(2, 2, n_idents=2, value_width=vw, hop_latency=hop)
    rng = random.Random(88)
    n = sim.n_participants
    schedules, contrib = random_schedules(rng, n, 2, 2, vw)
    schedules = [[Trigger(*e, gap=rng.randint(0, 3)) for e in sch] for sch in schedules]
    accepts, completions, events, cycles = sim.run(schedules, 5000, ready_prob=0.7, seed=88)
    check_completions(n, accepts, completions, contrib, 2, vw)
    assert sum(len(c) for c in completions.values()) == n * 2 * 2
    assert events == {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}


@pytest.mark.parametrize("vw", [3, 4, 8, 13, 14, 32])
def test_node_verilog_has_no_backward_part_selects(vw):
    """Migen prints a zero-width slice x[a:a] as x[a-1:a]; Verilog reads that as a 2-bit (backward) select.
    No such select in a node's Verilog (memory declarations `name[0:depth-1]` excepted)."""
    from migen.fhdl.verilog import convert
    from cores.sync.common import DIRS
    from cores.sync.node import SyncNode
    node = SyncNode(DIRS, n_idents=2, value_width=vw)
    assert backward_part_selects(str(convert(node, ios={node.sink.valid, node.source.valid}))) == []


@pytest.mark.extended
def test_8x8_grid_random_and_latency():
    """The largest grid of the tests (64 nodes + lamlet, 2 idents, 8-bit values): random rounds with
    back-pressure against the model, and the latency from the last trigger equal to the hop model at the
    lamlet and at the far corner (8x8: 7 hops of `min_hop_latency(8)` cycles)."""
    hop = min_hop_latency(8)
    sim = GridSim(8, 8, n_idents=2, value_width=8, hop_latency=hop)
    rng = random.Random(88)
    n = sim.n_participants
    schedules, contrib = random_schedules(rng, n, 2, 2, 8)
    schedules = [[Trigger(*e, gap=rng.randint(0, 3)) for e in sch] for sch in schedules]
    accepts, completions, events, cycles = sim.run(schedules, 5000, ready_prob=0.7, seed=88)
    check_completions(n, accepts, completions, contrib, 2, 8)
    assert sum(len(c) for c in completions.values()) == n * 2 * 2
    assert events == {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}
    for last in [LAMLET, (7, 7)]:
        assert measure(sim, last) == analytic(8, 8, last, hop)

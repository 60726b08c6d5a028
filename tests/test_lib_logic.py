"""cores.lib.logic and cores.lib.counters against Python models: exhaustive first-set and round-robin picks
(in Verilog, as a Verilated model), the round-robin arbiter's pointer over random requests, reductions over
vectors, xorshift32, the counters' two forms, and the one-hot FSM as yosys maps it."""
import os
import random
import re

import pytest
from migen import FSM, If, Module, NextState, Signal
from migen.fhdl.verilog import convert
from migen.sim import run_simulation

from cores.lib.counters import add_counter_csrs, add_counters
from cores.lib.logic import OneHotFSM, first_set, reduce_and, reduce_or, round_robin, round_robin_pick, xorshift32
from sim.bench.ecp5 import netlist
from sim.verilated import run_vectors


def ref_first(bits, n):
    return next(((1, i) for i in range(n) if bits >> i & 1), (0, 0))


def ref_pick(req, ptr, n):
    for k in range(n):
        i = (ptr + k) % n
        if req >> i & 1:
            return 1, i
    return 0, 0


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_first_set_and_round_robin_pick_exhaustive_in_verilog(n):
    m = Module()
    bits, ptr = Signal(n), Signal(max(1, (n - 1).bit_length()))
    f_any, f_idx, f_oh = first_set(m, bits, n)
    p_valid, p_idx, p_oh = round_robin_pick(m, bits, ptr, n)
    vectors = [[b, p] for b in range(1 << n) for p in range(n)]
    out = run_vectors(m, [bits, ptr], [f_any, f_idx, f_oh, p_valid, p_idx, p_oh], vectors, f"logic_pick_{n}")
    for (b, p), row in zip(vectors, out):
        a, i = ref_first(b, n)
        v, j = ref_pick(b, p, n)
        assert [int(x) for x in row] == [a, i, (1 << i) * a, v, j, (1 << j) * v], (b, p)


def test_round_robin_pointer_moves_past_each_grant():
    n, rng = 5, random.Random(3)
    m = Module()
    req = Signal(n)
    valid, index, _ = round_robin(m, req, n)
    reqs = [rng.getrandbits(n) if rng.random() < 0.8 else 0 for _ in range(300)]
    got = []

    def gen():
        for r in reqs:
            yield req.eq(r)
            yield
            got.append(((yield valid), (yield index)))
    run_simulation(m, gen())
    ptr, expect = 0, []
    for r in reqs:
        v, i = ref_pick(r, ptr, n)         # the grant of the cycle, then the pointer moves past it
        expect.append((v, i))
        if v:
            ptr = (i + 1) % n
    assert got == expect


def test_reductions_keep_every_bit_of_a_vector():
    m = Module()
    a, b, c = Signal(8, reset=0xF0), Signal(8, reset=0x3C), Signal(8, reset=0xFF)
    x_and, x_or, e_and, e_or = Signal(8), Signal(8), Signal(), Signal()
    m.comb += [x_and.eq(reduce_and([a, b, c])), x_or.eq(reduce_or([a, b])), e_and.eq(reduce_and([])),
               e_or.eq(reduce_or([]))]
    out = {}

    def gen():
        yield
        out.update(x_and=(yield x_and), x_or=(yield x_or), e_and=(yield e_and), e_or=(yield e_or))
    run_simulation(m, gen())
    assert out == {"x_and": 0x30, "x_or": 0xFC, "e_and": 1, "e_or": 0}


def test_xorshift32_sequence():
    m = Module()
    s = Signal(32, reset=1)
    nxt = xorshift32(m, s)
    m.sync += s.eq(nxt)
    got = []

    def gen():
        for _ in range(5):
            got.append((yield s))
            yield
    run_simulation(m, gen())
    x, expect = 1, []
    for _ in range(5):
        expect.append(x)
        x ^= (x << 13) & 0xFFFFFFFF
        x ^= x >> 17
        x ^= (x << 5) & 0xFFFFFFFF
    assert got == expect


def test_counters_count_events_and_counts_and_refuse_unknown_names():
    spec = [("events", "1-bit"), ("counts", "multi-bit"), ("late", "registered 1-bit")]
    m = Module()
    ev, cnt = Signal(), Signal(3)
    add_counters(m, spec[:2], {"events": ev, "counts": cnt})
    add_counters(m, spec[2:], {"late": ev}, register=True)
    csrs = add_counter_csrs(m, spec)
    assert [c.name for c in csrs] == ["events", "counts", "late"] and m._counts is csrs[1]
    rng = random.Random(1)
    stim = [(rng.random() < 0.5, rng.randrange(8)) for _ in range(200)]

    def gen():
        for e, k in stim:
            yield ev.eq(e)
            yield cnt.eq(k)
            yield
        yield ev.eq(0)
        yield cnt.eq(0)
        yield
        yield
        assert (yield m.counters["events"]) == sum(e for e, _ in stim)
        assert (yield m.counters["counts"]) == sum(k for _, k in stim)
        assert (yield m.counters["late"]) == sum(e for e, _ in stim)       # one cycle later, same total
        assert (yield csrs[1].status) == sum(k for _, k in stim)
    run_simulation(m, gen())
    with pytest.raises(KeyError, match="not in the spec"):
        add_counters(Module(), spec[:1], {"events": ev, "evnets": ev})
    with pytest.raises(ValueError, match="twice"):
        add_counters(m, spec[:1], {"events": ev})


class _Sequencer(Module):
    """Five states in a ring, stepped by `go` (the FSM class under test)."""
    def __init__(self, fsm_class):
        self.go, self.at = Signal(), Signal(5)
        self.submodules.fsm = fsm = fsm_class(reset_state="S0")
        for i in range(5):
            fsm.act(f"S{i}", self.at[i].eq(1), If(self.go, NextState(f"S{(i + 1) % 5}")))


@pytest.mark.parametrize("one_hot", [True, False])
def test_one_hot_fsm_is_recoded_by_yosys(one_hot):
    """OneHotFSM's state register is recoded one-hot by synth_ecp5 (five flip-flops for five states); Migen's FSM
    keeps its binary register (yosys does not recode a register with an initial value unless told to)."""
    dut = _Sequencer(OneHotFSM if one_hot else FSM)
    out = netlist(str(convert(dut, ios={dut.go, dut.at}, name="top")), f"test_onehot_fsm_{one_hot}", "LFE5U-25F")
    log = open(os.path.join(out, "yosys.log")).read()
    ffs = re.search(r"^\s+(\d+)\s+TRELLIS_FF\s*$", open(os.path.join(out, "stat.txt")).read(), re.M)
    assert ("using `one-hot' encoding" in log) == one_hot
    assert int(ffs.group(1)) == (5 if one_hot else 3)
    # the attribute changes nothing in simulation: the ring steps the same way
    dut, seen = _Sequencer(OneHotFSM if one_hot else FSM), []

    def gen():
        for step in range(12):
            yield dut.go.eq(step % 3 != 0)
            yield
            seen.append((yield dut.at))
    run_simulation(dut, gen())
    expect, state = [], 0
    for step in range(12):         # (`go` written in a step is seen at the next step's clock edge)
        expect.append(1 << state)
        state = (state + (step % 3 != 0)) % 5
    assert seen == expect

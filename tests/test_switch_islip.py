"""iSLIP scheduler RTL against the Python reference (software/switch/reference.py ISLIP), decision by decision."""
import random

import pytest
from migen.sim import run_simulation

from cores.switch.islip import ISLIPScheduler
from software.switch.reference import ISLIP


def run_decisions(n, iterations, request_seq, idle_gaps=None, pipelined=False):
    """Drive the RTL with one request matrix per decision; returns [(match, grant_ptr, accept_ptr)]."""
    dut = ISLIPScheduler(n, iterations, pipelined)
    out = []

    def gen():
        for k, reqs in enumerate(request_seq):
            flat = sum(1 << (i * n + j) for i in range(n) for j in range(n) if reqs[i][j])
            yield dut.req.eq(flat)
            yield dut.start.eq(1)
            yield
            yield dut.start.eq(0)
            cycles = 1
            while not (yield dut.done):
                yield
                cycles += 1
            assert cycles == dut.latency + 1     # +1: Migen applies generator writes one cycle late
            valid = yield dut.match_valid
            match, gptr, aptr = [], [], []
            for i in range(n):
                m = yield dut.match[i]
                match.append(m if (valid >> i) & 1 else None)
                gptr.append((yield dut.grant_ptr[i]))
                aptr.append((yield dut.accept_ptr[i]))
            out.append((match, gptr, aptr))
            for _ in range(idle_gaps[k] if idle_gaps else 0):
                yield

    run_simulation(dut, gen())
    return out


def random_requests(rng, n, count, density):
    return [[[rng.random() < density for _ in range(n)] for _ in range(n)] for _ in range(count)]


def assert_matching(n, reqs, match):
    outs = [m for m in match if m is not None]
    assert len(outs) == len(set(outs)), "two inputs matched to one output"
    for i, m in enumerate(match):
        if m is not None:
            assert reqs[i][m], f"input {i} matched to output {m} it did not request"


@pytest.mark.parametrize("n,iterations,count,pipelined", [
    (4, 1, 120, False), (4, 3, 80, False), (8, 2, 60, False), (8, 4, 30, False), (16, 2, 8, False),
    (4, 2, 80, True), (8, 3, 40, True), (16, 3, 6, True)])
def test_islip_equals_reference(n, iterations, count, pipelined):
    """Decision by decision: the matching and both pointer arrays equal the Python iSLIP's; the decision
    takes exactly `latency` cycles (2k + 1, or 3k + 1 pipelined)."""
    rng = random.Random(1000 * n + iterations)
    seq = random_requests(rng, n, count, density=rng.choice([0.2, 0.5, 0.9]))
    gaps = [rng.randrange(3) for _ in seq]
    rtl = run_decisions(n, iterations, seq, gaps, pipelined)
    ref = ISLIP(n, iterations)
    for reqs, (match, gptr, aptr) in zip(seq, rtl):
        assert match == ref.schedule(reqs)
        assert gptr == ref.grant_ptr and aptr == ref.accept_ptr
        assert_matching(n, reqs, match)


@pytest.mark.parametrize("n,iterations,pipelined", [(4, 1, False), (8, 1, True), (8, 2, False), (8, 3, True)])
def test_islip_back_to_back_equals_reference(n, iterations, pipelined):
    """`start` held high: each decision starts in the cycle the previous one is done, so it reads the
    pointers the previous one moved as early as it can (the pointer masks lag their pointers by a cycle)."""
    rng = random.Random(17 * n + iterations)
    for density in (0.3, 0.7, 1.0):
        reqs = random_requests(rng, n, 1, density)[0]
        dut = ISLIPScheduler(n, iterations, pipelined)
        flat = sum(1 << (i * n + j) for i in range(n) for j in range(n) if reqs[i][j])
        out, starts = [], []

        def gen():
            yield dut.req.eq(flat)
            yield dut.start.eq(1)
            for cycle in range(12 * (dut.latency + 1)):
                yield
                if (yield dut.start) and not (yield dut.busy):
                    starts.append(cycle)
                if (yield dut.done):
                    valid, match = (yield dut.match_valid), []
                    for i in range(n):
                        match.append((yield dut.match[i]) if valid >> i & 1 else None)
                    out.append(match)

        run_simulation(dut, gen())
        assert len(out) >= 10 and set(b - a for a, b in zip(starts, starts[1:])) == {dut.latency}
        ref = ISLIP(n, iterations)
        assert out == [ref.schedule(reqs) for _ in out]


def test_islip_n_iterations_is_maximal():
    """With N iterations iSLIP converges: no unmatched input still requests an unmatched output."""
    n = 4
    rng = random.Random(7)
    seq = random_requests(rng, n, 60, density=0.4)
    for reqs, (match, _, _) in zip(seq, run_decisions(n, n, seq)):
        assert_matching(n, reqs, match)
        used = set(m for m in match if m is not None)
        for i in range(n):
            if match[i] is None:
                assert not any(reqs[i][j] and j not in used for j in range(n))


def test_islip_no_starvation():
    """A persistent request is served within N decisions while every other input saturates the switch."""
    n = 8
    reqs = [[True] * n for _ in range(n)]
    reqs[3] = [j == 5 for j in range(n)]        # input 3 only wants output 5, everybody else wants all
    rtl = run_decisions(n, 1, [reqs] * (3 * n))
    served = [k for k, (match, _, _) in enumerate(rtl) if match[3] == 5]
    assert served and served[0] <= n                       # first service within N decisions ...
    assert max(b - a for a, b in zip(served, served[1:])) <= n  # ... then at least once every N


def test_islip_desynchronises_under_full_load():
    """With every VOQ occupied, one-iteration iSLIP settles into full matchings (100% throughput)."""
    n = 8
    rtl = run_decisions(n, 1, [[[True] * n for _ in range(n)]] * (2 * n))
    assert [sum(m is not None for m in match) for match, _, _ in rtl[n:]] == [n] * n


def test_islip_parameters():
    with pytest.raises(ValueError):
        ISLIPScheduler(6)
    with pytest.raises(ValueError):
        ISLIPScheduler(128)
    with pytest.raises(ValueError):
        ISLIPScheduler(8, iterations=0)

"""Batcher-Banyan network: every partial permutation reaches the right outputs and never collides."""
import itertools
import math
import random

import numpy as np
import pytest
from migen.sim import run_simulation

from cores.switch.batcher_banyan import BatcherBanyan
from sim.verilated.switch import run_network


def partial_permutations(n):
    """Every injective partial map input -> output, as lists of (dst or None) per input."""
    out = []
    for k in range(n + 1):
        for ins in itertools.combinations(range(n), k):
            for outs in itertools.permutations(range(n), k):
                m = [None] * n
                for i, o in zip(ins, outs):
                    m[i] = o
                out.append(m)
    return out


def expected_outputs(n, perm, payload):
    exp = [None] * n
    for i, d in enumerate(perm):
        if d is not None:
            exp[d] = payload[i]
    return exp


def run_migen(n, data_width, perms, payloads, pipeline):
    dut = BatcherBanyan(n, data_width, pipeline=pipeline)
    seen = []

    def gen():
        for step in range(len(perms) + dut.latency + 1):
            if step < len(perms):
                for i in range(n):
                    d = perms[step][i]
                    yield dut.in_valid[i].eq(d is not None)
                    yield dut.in_dst[i].eq(d or 0)
                    yield dut.in_data[i].eq(payloads[step][i])
            else:
                for i in range(n):
                    yield dut.in_valid[i].eq(0)
            yield
            row = []
            for j in range(n):
                v = yield dut.out_valid[j]
                row.append((yield dut.out_data[j]) if v else None)
            seen.append(row)
        seen.append((yield dut.collisions))

    run_simulation(dut, gen())
    collisions = seen.pop()
    # Inputs written before step s's clock edge are sampled after it: step s shows at sample s + latency.
    return [seen[s + dut.latency] for s in range(len(perms))], collisions


@pytest.mark.parametrize("pipeline", [True, False])
def test_network_exhaustive_n4(pipeline):
    n, dw = 4, 8
    rng = random.Random(4)
    perms = partial_permutations(n)
    assert len(perms) == 209
    payloads = [[rng.randrange(1 << dw) for _ in range(n)] for _ in perms]
    got, collisions = run_migen(n, dw, perms, payloads, pipeline)
    for perm, pay, row in zip(perms, payloads, got):
        assert row == expected_outputs(n, perm, pay)
    assert collisions == 0


def test_network_random_n16():
    n, dw = 16, 16
    rng = random.Random(16)
    perms = []
    for _ in range(120):
        k = rng.randrange(n + 1)
        ins, outs = rng.sample(range(n), k), rng.sample(range(n), k)
        m = [None] * n
        for i, o in zip(ins, outs):
            m[i] = o
        perms.append(m)
    payloads = [[rng.randrange(1 << dw) for _ in range(n)] for _ in perms]
    got, collisions = run_migen(n, dw, perms, payloads, pipeline=True)
    for perm, pay, row in zip(perms, payloads, got):
        assert row == expected_outputs(n, perm, pay)
    assert collisions == 0


def test_network_counts_collisions():
    """Two inputs to one output is not a matching: the network drops one and counts it."""
    n = 4
    perms = [[2, 2, None, None], [0, 1, 2, 3], [1, None, 1, 1]]
    payloads = [[1, 2, 3, 4]] * 3
    got, collisions = run_migen(n, 4, perms, payloads, pipeline=True)
    assert got[1] == [1, 2, 3, 4]
    assert collisions >= 3                       # at least one event per lost beat
    assert sum(v is not None for v in got[0]) == 1 and sum(v is not None for v in got[2]) == 1


def test_network_exhaustive_n8_verilated():
    """All 1,441,729 partial permutations of 8 ports, one per cycle, in the Verilated model
    (sim.verilated.switch.PackedNetwork)."""
    n, w = 8, 3
    perms = np.array(list(itertools.permutations(range(n))), dtype=np.uint64)       # 40320 x 8
    masks = np.arange(1 << n, dtype=np.uint64)
    codes = np.zeros((len(perms), len(masks)), dtype=np.uint64)
    for i in range(n):
        valid = (masks >> np.uint64(i)) & np.uint64(1)
        field = (valid[None, :] | (perms[:, i:i + 1] << np.uint64(1))) * valid[None, :]
        codes |= field << np.uint64(i * (1 + w))
    codes = np.unique(codes.ravel())
    assert len(codes) == sum(len(list(itertools.combinations(range(n), k))) ** 2 * math.factorial(k)
                             for k in range(n + 1)) == 1441729
    expect = np.zeros_like(codes)
    for i in range(n):
        field = (codes >> np.uint64(i * (1 + w))) & np.uint64((1 << (1 + w)) - 1)
        valid = field & np.uint64(1)
        dst = field >> np.uint64(1)
        expect |= (valid | np.uint64(i << 1)) * valid << (dst * np.uint64(1 + w))
    out, collisions = run_network(n, codes)
    assert np.array_equal(out, expect)
    assert collisions == 0

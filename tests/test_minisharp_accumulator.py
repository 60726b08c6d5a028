"""MS_ACC_EXACT_FP32_MAG277: the RTL accumulator bank against the Fraction reference model."""
import random
import struct

import pytest
from migen import run_simulation

from cores.minisharp.accumulator import MSAccumulatorBank, ACC_OP_ADD, ACC_OP_READ
from cores.minisharp.common import FP32_QNAN, FP32_PINF, FP32_NINF
from software.minisharp.reference import exact_sum_fp32, fraction_to_fp32, fp32_to_fraction
from tests.harness.streams import collect, send

FLT_MAX = 0x7F7FFFFF
NEG = 0x80000000


def f2b(f):
    return struct.unpack(">I", struct.pack(">f", f))[0]


def pow2(e):
    """FP32 bits of 2**e (normal or subnormal)."""
    if e >= -126:
        return (e + 127) << 23
    return 1 << (e + 149)


def run_bank(columns, lanes=1, max_ranks=256, seed=0, ready_p=1.0, carry_limbs=None):
    """Accumulate columns[i] (list of per-contribution lane words) into address i; return read results."""
    depth = max(2, len(columns))
    dut = MSAccumulatorBank(lanes=lanes, depth=depth, max_ranks=max_ranks, out_depth=8, carry_limbs=carry_limbs)
    rng = random.Random(seed)
    ops = [dict(op=ACC_OP_ADD, addr=a, init=r == 0, data=sum(w << (32 * ln) for ln, w in enumerate(col[r])))
           for r in range(max(len(c) for c in columns)) for a, col in enumerate(columns) if r < len(col)]
    ops += [dict(op=ACC_OP_READ, addr=a) for a in range(len(columns))]
    out = []

    def feed():
        yield from send(dut.sink, ops, rng)
        while len(out) < len(columns):
            yield

    run_simulation(dut, [feed(), collect(dut.source, out, rng, ["data"], ready_p)])
    return [[(o["data"] >> (32 * ln)) & 0xFFFFFFFF for ln in range(lanes)] for o in out]


def check(columns, **kw):
    """columns: per address, a list of contributions (scalars for lanes=1)."""
    cols = [[[v] if isinstance(v, int) else v for v in col] for col in columns]
    lanes = len(cols[0][0])
    got = run_bank(cols, lanes=lanes, **kw)
    for a, col in enumerate(cols):
        for ln in range(lanes):
            exp = exact_sum_fp32([c[ln] for c in col])
            assert got[a][ln] == exp, (a, ln, [hex(c[ln]) for c in col], hex(got[a][ln]), hex(exp))
    return got


def rand_finite(rng):
    kind = rng.random()
    if kind < 0.15:
        return rng.getrandbits(23) | (rng.getrandbits(1) << 31)               # subnormal / zero
    if kind < 0.25:
        return rng.choice([FLT_MAX, FLT_MAX | NEG, 0x7F7FFFFE, 0x00800000, 0x80800000, 0x00000001])
    if kind < 0.6:   # clustered exponents: cancellation and carries between limbs
        e = rng.randrange(100, 160)
        return (rng.getrandbits(1) << 31) | (e << 23) | rng.getrandbits(23)
    e = rng.randrange(0, 255)
    return (rng.getrandbits(1) << 31) | (e << 23) | rng.getrandbits(23)


def test_reference_rounds_once_not_via_double():
    # 1 + 2^-24 + 2^-80: the exact sum is just above the FP32 tie, so it rounds up; rounding to double first
    # loses 2^-80, leaves an exact tie, and ties-to-even then rounds down to 1.0.
    vals = [f2b(1.0), pow2(-24), pow2(-80)]
    exact = sum(fp32_to_fraction(v) for v in vals)
    via_double = f2b(float(exact))
    assert via_double == f2b(1.0)
    assert exact_sum_fp32(vals) == f2b(1.0) + 1
    assert fraction_to_fp32(exact) != via_double
    check([vals, list(reversed(vals))])


def test_special_cases():
    cols = [
        [0, 0], [NEG, NEG, NEG], [NEG, 0], [f2b(1.5), f2b(-1.5)],                      # zeros and signs
        [f2b(1.0), pow2(-24)], [f2b(1.0) + 1, pow2(-24)],                            # ties to even
        [FLT_MAX, FLT_MAX], [FLT_MAX | NEG, FLT_MAX | NEG], [FLT_MAX, FLT_MAX, FLT_MAX | NEG],
        [FLT_MAX, pow2(103)], [FLT_MAX, pow2(103) - 1],                               # overflow at the tie
        [1, 1], [0x007FFFFF, 1], [0x80000001, 0x00000003],                            # subnormals
        [FP32_PINF, f2b(1.0)], [FP32_NINF, FLT_MAX], [FP32_PINF, FP32_NINF], [0x7F800001, 0],
        [0xFFC12345, FP32_PINF], [FP32_PINF, FP32_PINF],
    ]
    got = check(cols)
    assert got[1] == [NEG] and got[2] == [0] and got[3] == [0]
    assert got[4] == [f2b(1.0)] and got[5] == [f2b(1.0) + 2]
    assert got[6] == [FP32_PINF] and got[7] == [FP32_NINF] and got[8] == [FLT_MAX]
    assert got[9] == [FP32_PINF] and got[10] == [FLT_MAX]
    assert got[16] == [FP32_QNAN] and got[17] == [FP32_QNAN] and got[18] == [FP32_QNAN]


@pytest.mark.extended
def test_random_values():
    """256-way sums (max_ranks), short sums and exact cancellations across the whole FP32 range (about
    6,000 values in the Migen simulator; tests/test_minisharp_core.py sends 100,000 through the core)."""
    rng = random.Random(3)
    total = 0
    cols = [[rand_finite(rng) for _ in range(256)] for _ in range(10)]             # 2,560 values
    total += sum(len(c) for c in cols)
    check(cols, seed=1)
    cols = [[rand_finite(rng) for _ in range(rng.randrange(1, 40))] for _ in range(100)]
    total += sum(len(c) for c in cols)
    check(cols, seed=2, ready_p=0.5)
    cols = []   # exact cancellation: x1..xn, then -x1..-xn in shuffled order, plus a tiny residue
    for _ in range(15):
        xs = [rand_finite(rng) for _ in range(rng.randrange(1, 60))]
        col = xs + [x ^ NEG for x in xs]
        rng.shuffle(col)
        if rng.random() < 0.5:
            col.append(rng.getrandbits(8) | (rng.getrandbits(1) << 31))
        cols.append(col)
    total += sum(len(c) for c in cols)
    check(cols, seed=3)
    assert total >= 5_000


@pytest.mark.parametrize("carry_limbs", [2, 4, 8])
def test_carry_limbs_per_stage(carry_limbs):
    """Rounding pipelines that resolve several limbs' carries a stage give the same exact results
    (cancellations, carries across every limb, negative sums whose negation carries through zero digits)."""
    rng = random.Random(10 + carry_limbs)
    cols = [[rand_finite(rng) for _ in range(rng.randrange(1, 30))] for _ in range(40)]
    cols += [[FLT_MAX, FLT_MAX, FLT_MAX | NEG], [1, 0x80000002], [pow2(100), pow2(-149) | NEG],
             [pow2(-120) | NEG, pow2(10)], [FP32_PINF, f2b(1.0)], [0, 0]]
    check(cols, seed=carry_limbs, ready_p=0.6, carry_limbs=carry_limbs)


def test_permutation_invariance_and_lanes():
    rng = random.Random(4)
    base = [[rand_finite(rng), rand_finite(rng)] for _ in range(30)]
    perms = []
    for _ in range(6):
        p = list(base)
        rng.shuffle(p)
        perms.append(p)
    got = check(perms, seed=5, ready_p=0.7)     # two lanes, six orders of the same multiset
    assert all(g == got[0] for g in got)


def test_bad_parameters():
    with pytest.raises(ValueError):
        MSAccumulatorBank(lanes=0)
    with pytest.raises(ValueError):
        MSAccumulatorBank(max_ranks=4096)
    with pytest.raises(ValueError, match="carry_limbs"):
        MSAccumulatorBank(carry_limbs=3)


def test_add_with_emit_returns_running_sums_in_op_order():
    """ADD with `emit` sends the new sum of its address (the engine uses it for a chunk's completing
    contribution, instead of a read-out pass); results keep the op order, mixed with READs and with
    back-to-back ops to the same address (hazard stall), under random output back-pressure."""
    rng = random.Random(6)
    depth = 4
    dut = MSAccumulatorBank(lanes=1, depth=depth, max_ranks=64, out_depth=4)
    ops, expected, contrib = [], [], [[] for _ in range(depth)]
    for _ in range(300):
        a = rng.randrange(depth) if rng.random() < 0.7 else (ops[-1]["addr"] if ops else 0)
        kind = rng.random()
        if kind < 0.15 and contrib[a]:
            ops.append(dict(op=ACC_OP_READ, addr=a))
            expected.append(exact_sum_fp32(contrib[a]))
            continue
        init = not contrib[a] or len(contrib[a]) >= 60 or rng.random() < 0.05
        if init:
            contrib[a] = []
        v = rand_finite(rng)
        contrib[a].append(v)
        emit = rng.random() < 0.5
        ops.append(dict(op=ACC_OP_ADD, addr=a, init=int(init), emit=int(emit), data=v))
        if emit:
            expected.append(exact_sum_fp32(contrib[a]))
    out = []

    def feed():
        yield from send(dut.sink, ops, rng)
        while len(out) < len(expected):
            yield
        for _ in range(100):                  # and any extra result
            yield

    run_simulation(dut, [feed(), collect(dut.source, out, rng, ["data"], ready_p=0.6)])
    assert len(expected) > 100
    assert [o["data"] for o in out] == expected

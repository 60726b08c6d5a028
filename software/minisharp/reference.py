"""Reference model of MS_ACC_EXACT_FP32_MAG277: exact rational sum, rounded once to FP32.

Written from the IEEE-754 definition with fractions.Fraction, independently of the hardware's limb
arithmetic: decode every binary32 to an exact rational, add them exactly, round the exact sum once to
nearest-even binary32 (overflow to +/-Inf past FLT_MAX). Special values: any NaN, or +Inf together with
-Inf, gives the canonical quiet NaN 0x7FC00000; otherwise an Inf input gives that Inf; an exact zero sum
is -0 only when every input is -0 (IEEE round-to-nearest), else +0.
"""
from fractions import Fraction

from cores.minisharp.common import (
    ACC_FLAGS, ACC_LSB_EXP, FP32_QNAN, FP32_PINF, FP32_NINF, PARTIAL_ELEMENT_BYTES, PARTIAL_MAG_BITS,
    PARTIAL_VALUE_BITS,
)

FLT_MAX = Fraction(2 ** 24 - 1, 1) * Fraction(2) ** (127 - 23)


def fp32_to_fraction(bits):
    """Exact value of a finite binary32 bit pattern (None for Inf/NaN)."""
    sign = -1 if bits >> 31 else 1
    exp = (bits >> 23) & 0xFF
    man = bits & 0x7FFFFF
    if exp == 0xFF:
        return None
    if exp == 0:
        return sign * Fraction(man) / Fraction(2) ** 149
    return sign * Fraction((1 << 23) | man) * Fraction(2) ** (exp - 150)


def fraction_to_fp32(q, negative_zero=False):
    """Round an exact rational once to nearest-even binary32 and return its bit pattern."""
    if q == 0:
        return 0x80000000 if negative_zero else 0
    sign = 0x80000000 if q < 0 else 0
    a = abs(q)
    # exponent e with 2^e <= a < 2^(e+1)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    quantum_exp = max(e, -126) - 23          # weight of the last significand bit
    n = a / Fraction(2) ** quantum_exp
    floor = n.numerator // n.denominator
    rem = n - floor
    if rem > Fraction(1, 2) or (rem == Fraction(1, 2) and floor & 1):
        floor += 1
    value = floor * Fraction(2) ** quantum_exp
    if value > FLT_MAX:
        return sign | FP32_PINF
    if floor < (1 << 23):                    # subnormal (or rounded up to the smallest normal below)
        return sign | floor
    if floor == (1 << 24):                   # rounding carried into the next binade
        floor >>= 1
        quantum_exp += 1
    biased = quantum_exp + 23 + 127
    return sign | (biased << 23) | (floor - (1 << 23))


def exact_sum_fp32(values):
    """Exact FP32 sum of binary32 bit patterns, with the special-value rules of the module docstring."""
    values = list(values)
    nan = pinf = ninf = False
    total = Fraction(0)
    for v in values:
        q = fp32_to_fraction(v)
        if q is None:
            if v & 0x7FFFFF:
                nan = True
            elif v >> 31:
                ninf = True
            else:
                pinf = True
        else:
            total += q
    if nan or (pinf and ninf):
        return FP32_QNAN
    if pinf:
        return FP32_PINF
    if ninf:
        return FP32_NINF
    all_negzero = len(values) > 0 and all(v == 0x80000000 for v in values)
    return fraction_to_fp32(total, negative_zero=all_negzero)


# The traps of hierarchical exactness, one FP32 value per rank (4 ranks) an element: double rounding
# (1 + 2^-24 + 2^-60), an intermediate overflow (FLT_MAX + FLT_MAX - FLT_MAX), cancellation (1e30 + 1 - 1e30),
# subnormals (twice), every input -0. Summed at once they round to the flat exact sum; rounded per group of
# ranks first (FP32 partials), the first three go wrong.
TRAPS = [
    [0x3F800000, 0x33800000, 0x21800000, 0x00000000],
    [0x7F7FFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000000],
    [0x7149F2CA, 0x3F800000, 0xF149F2CA, 0x00000000],
    [0x00000001, 0x00000001, 0x80000001, 0x00000003],
    [0x00000001, 0x80000200, 0x00800000, 0x007FFFFF],
    [0x80000000, 0x80000000, 0x80000000, 0x80000000],
]


def reduce_vectors(vectors):
    """Element-wise exact sum of equal-length lists of binary32 bit patterns."""
    return [exact_sum_fp32(col) for col in zip(*vectors)]


# Exact partials (MS_FMT_EXACT) ------------------------------------------------------------------------
# A partial is (N, flags): the exact sum N * 2^-149 of some FP32 values and the set of ACC_FLAGS that hold
# for them (nan: a NaN was seen; pinf / ninf: +Inf / -Inf; negzero: every value was -0). Written from the
# format's definition (cores/minisharp/common.py), with Python integers.

SCALE = Fraction(2) ** -ACC_LSB_EXP       # 2^149


def partial_of(values):
    """The exact partial of FP32 bit patterns."""
    n, flags = 0, set()
    values = list(values)
    for v in values:
        q = fp32_to_fraction(v)
        if q is None:
            flags.add("nan" if v & 0x7FFFFF else ("ninf" if v >> 31 else "pinf"))
        else:
            n += int(q * SCALE)
    if values and all(v == 0x80000000 for v in values):
        flags.add("negzero")
    return n, frozenset(flags)


def add_partials(partials):
    """The partial of the union of the values of `partials` (their sum; flags OR'ed, negzero AND'ed)."""
    partials = list(partials)
    n = sum(p[0] for p in partials)
    flags = set().union(*(p[1] - {"negzero"} for p in partials)) if partials else set()
    if partials and all("negzero" in p[1] for p in partials):
        flags.add("negzero")
    return n, frozenset(flags)


def partial_to_fp32(partial):
    """Round a partial once to FP32, with the special-value rules of exact_sum_fp32."""
    n, flags = partial
    if "nan" in flags or ("pinf" in flags and "ninf" in flags):
        return FP32_QNAN
    if "pinf" in flags:
        return FP32_PINF
    if "ninf" in flags:
        return FP32_NINF
    return fraction_to_fp32(Fraction(n) / SCALE, negative_zero="negzero" in flags)


def encode_partial(partial):
    """A partial's 40-byte wire element. Raises ValueError when |N| >= 2^PARTIAL_MAG_BITS."""
    n, flags = partial
    if not -(1 << PARTIAL_MAG_BITS) <= n < (1 << PARTIAL_MAG_BITS):
        raise ValueError(f"partial sum out of range: |N| >= 2^{PARTIAL_MAG_BITS}")
    fl = sum(1 << ACC_FLAGS.index(f) for f in flags)
    value = (fl << PARTIAL_VALUE_BITS) | (n & ((1 << PARTIAL_VALUE_BITS) - 1))
    return value.to_bytes(PARTIAL_ELEMENT_BYTES, "big")


def decode_partial(element):
    """(N, flags) of a 40-byte wire element; raises ValueError for an invalid one (reserved flag bits, or N
    out of range)."""
    value = int.from_bytes(element, "big")
    fl = value >> PARTIAL_VALUE_BITS
    n = value & ((1 << PARTIAL_VALUE_BITS) - 1)
    if n >> (PARTIAL_VALUE_BITS - 1):
        n -= 1 << PARTIAL_VALUE_BITS
    if fl >> len(ACC_FLAGS):
        raise ValueError(f"reserved flag bits set: {fl:#x}")
    if not -(1 << PARTIAL_MAG_BITS) <= n < (1 << PARTIAL_MAG_BITS):
        raise ValueError(f"partial sum out of range: |N| >= 2^{PARTIAL_MAG_BITS}")
    return n, frozenset(f for i, f in enumerate(ACC_FLAGS) if fl >> i & 1)

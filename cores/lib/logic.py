"""Small combinational helpers used by several cores, each written once, and `OneHotFSM`.

Every helper adds its statements to `module.comb` (and `module.sync` for a pointer) and returns signals.
"""
from functools import reduce
from operator import and_, or_

from migen import Cat, If, Mux, Signal
from migen.genlib.fsm import FSM


def reduce_or(values):
    """Bitwise OR of a list of values (0 for an empty list)."""
    values = list(values)
    return reduce(or_, values) if values else 0


def reduce_and(values):
    """Bitwise AND of a list of values (1 for an empty list; a 1-bit start value would mask a vector)."""
    values = list(values)
    return reduce(and_, values) if values else 1


def xorshift32(module, state):
    """The next state of Marsaglia's xorshift32 (13, 17, 5) after `state` (a 32-bit value)."""
    a, b, c = Signal(32), Signal(32), Signal(32)
    module.comb += [a.eq(state ^ (state << 13)[:32]), b.eq(a ^ (a >> 17)), c.eq(b ^ (b << 5)[:32])]
    return c


def delayed(module, value, cycles):
    """`value` through `cycles` registers (e.g. an address kept beside a block RAM's read data)."""
    for _ in range(cycles):
        reg = Signal(len(value))
        module.sync += reg.eq(value)
        value = reg
    return value


def index_bits(n):
    """Bits of an index into n entries (at least 1)."""
    return max(1, (n - 1).bit_length())


def pointer_mask(ptr, n):
    """The indices at or after `ptr` among n, as a mask (bit b = ptr <= b): what round_robin_pick_masked
    takes, e.g. from a register that follows a pointer."""
    return Cat(*[ptr <= b for b in range(n)])


def round_robin_pick_masked(module, req, above, n):
    """The first set bit of `req` (n bits) among the bits of `above` (a pointer_mask), else the first set bit
    of `req`: two fixed-priority picks (x & -x) and a multiplexer. Returns (valid, onehot); onehot is 0
    when no bit is set."""
    hi, hi_oh, lo_oh, onehot, valid = Signal(n), Signal(n), Signal(n), Signal(n), Signal()
    module.comb += [
        hi.eq(req & above),
        hi_oh.eq(hi & (~hi + 1)),
        lo_oh.eq(req & (~req + 1)),
        onehot.eq(Mux(hi != 0, hi_oh, lo_oh)),
        valid.eq(req != 0),
    ]
    return valid, onehot


def round_robin_pick(module, req, ptr, n):
    """The first set bit of `req` (n bits) at or after index `ptr`, wrapping. Returns (valid, index, onehot)."""
    valid, onehot = round_robin_pick_masked(module, req, pointer_mask(ptr, n), n)
    index = Signal(index_bits(n))
    module.comb += index.eq(onehot_index(onehot, n))
    return valid, index, onehot


def round_robin(module, req, n):
    """Round-robin arbiter over `req` (n bits) with its own pointer, which moves one past each grant.
    Returns (valid, index, onehot) of this cycle's grant."""
    ptr = Signal(index_bits(n))
    valid, index, onehot = round_robin_pick(module, req, ptr, n)
    module.sync += If(valid, ptr.eq(Mux(index == n - 1, 0, index + 1)))
    return valid, index, onehot


def onehot_index(onehot, n):
    """Index of the set bit of a one-hot value of n bits (OR of the indices of the set bits)."""
    return Cat(*[reduce_or([onehot[b] for b in range(n) if (b >> k) & 1]) for k in range(index_bits(n))])


def first_set(module, bits, n):
    """(any, index, onehot) of the lowest set bit of `bits` (n bits); index and onehot are 0 when none is.
    A priority chain (bit i is first when no lower bit is set), then an OR of the chosen index."""
    onehot, index, any_ = Signal(n), Signal(index_bits(n)), Signal()
    first = [bits[i] & ~reduce_or([bits[j] for j in range(i)]) if i else bits[0] for i in range(n)]
    module.comb += [
        onehot.eq(Cat(*first)),
        any_.eq(reduce_or([bits[i] for i in range(n)])),
        index.eq(reduce_or([Mux(first[i], i, 0) for i in range(n)])),
    ]
    return any_, index, onehot


def shift_add(x, k):
    """x * k for a constant k >= 1, as a sum of shifted copies of x (no multiplier: yosys maps a product to
    a DSP block, far slower than an adder on ECP5)."""
    if k < 1:
        raise ValueError(f"shift_add needs a constant >= 1, got {k}")
    return sum(x << i for i in range(k.bit_length()) if k >> i & 1)


class OneHotFSM(FSM):
    """Migen's FSM with its state register marked for one-hot recoding by yosys (`fsm_encoding`): each state
    is a flip-flop of its own, so a state's decode is one bit, not a LUT of the binary state (Migen gives
    the register an initial value, which yosys's FSM pass then ignores: the state is IDLE from the first
    reset, as every SoC's CRG asserts one)."""
    def do_finalize(self):
        super().do_finalize()
        self.state.attr.add(("fsm_encoding", "one-hot"))

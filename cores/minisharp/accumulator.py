"""MS_ACC_EXACT_FP32_MAG277: exact FP32 summation in a RAM of accumulators.

Each accumulator covers the 277 bit weights 2^-149 .. 2^127 of finite FP32 values as ACC_LIMBS limbs of 32
position bits. A limb is stored signed with ceil(log2 max_ranks)+1 guard bits, so up to max_ranks
additions never overflow it and no carry has to cross limbs while accumulating (carry chunking): adding an
FP32 is one 24-bit shift into at most two adjacent limbs and short per-limb adds. Carries are resolved once,
when the result is read out, by a pipeline that then rounds the exact sum once to nearest-even FP32.
"""
from functools import reduce
from operator import or_

from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.block_ram import BlockRAM
from cores.minisharp.common import (ACC_LIMBS, ACC_LIMB_BITS, ACC_FLAGS, FP32_QNAN, FP32_PINF, FP32_NINF,
                                    PARTIAL_ELEMENT_BYTES, PARTIAL_TOP_EXTRA, PARTIAL_VALUE_BITS, limb_width)

ACC_OP_ADD  = 0      # add the lanes' FP32 values (`data`)
ACC_OP_READ = 1      # send the stored sums
ACC_OP_ADDP = 2      # add an exact partial (`pdata`, one MS_FMT_EXACT element; builds with partials)
ACC_OP_PASS = 3      # send `data` through unchanged (an FP32 value, summed alone and rounded: itself;
                     # NaNs canonical); the RAM is neither read for it nor written


def round_latency(carry_limbs):
    """Cycles of the read-out pipeline resolving `carry_limbs` limbs a stage: carries, sign, normalise, round."""
    return -(-ACC_LIMBS // carry_limbs) + 9


def acc_state_bits(max_ranks, top_extra=0):
    """Bits of one lane's accumulator state: signed limbs (the top one `top_extra` bits wider) and sticky
    flags."""
    return ACC_LIMBS * limb_width(max_ranks) + top_extra + len(ACC_FLAGS)


class _Decode(Module):
    """FP32 -> per-limb magnitudes (significand shifted into place), sign, special-value flags.
    Two registered steps: the fields (hidden bit, shift, specials), then the shifted significand; the limb
    select is comb: outputs follow `x` by two cycles."""
    def __init__(self, x):
        self.mags = [Signal(ACC_LIMB_BITS) for _ in range(ACC_LIMBS)]
        self.negative = Signal()
        self.flags = {f: Signal() for f in ACC_FLAGS}

        # # #

        e, m, s = x[23:31], x[0:23], x[31]
        special, neg1 = Signal(), Signal()
        sig = Signal(24)
        sh = Signal(8)
        flags1 = {f: Signal() for f in ACC_FLAGS}
        self.sync += [
            special.eq(e == 0xFF),
            sig.eq(Mux(e == 0, m, Cat(m, 1))),
            sh.eq(Mux(e == 0, 0, e - 1)),         # subnormals sit at exponent 1
            neg1.eq(s),
            flags1["nan"].eq((e == 0xFF) & (m != 0)),
            flags1["pinf"].eq((e == 0xFF) & (m == 0) & ~s),
            flags1["ninf"].eq((e == 0xFF) & (m == 0) & s),
            flags1["negzero"].eq(x == 0x80000000),
        ]
        shifted = Signal(ACC_LIMB_BITS + 24)
        limb = Signal(3)
        special2 = Signal()
        self.sync += [
            shifted.eq(sig << sh[0:5]), limb.eq(sh[5:]), special2.eq(special),
            self.negative.eq(neg1), [self.flags[f].eq(flags1[f]) for f in ACC_FLAGS],
        ]
        lo, hi = shifted[:ACC_LIMB_BITS], shifted[ACC_LIMB_BITS:]
        for k, mag in enumerate(self.mags):
            self.comb += [
                mag.eq(0),
                If(~special2,
                    If(limb == k, mag.eq(lo)),
                    If(limb == k - 1, mag.eq(hi)) if k else [],
                ),
            ]


def _lzc(x):
    """(all zero, leading zero count) of a power-of-two-wide Value, as a balanced tree."""
    n = len(x)
    if n == 2:
        return x == 0, x[1] == 0
    zh, ch = _lzc(x[n // 2:])
    zl, cl = _lzc(x[:n // 2])
    return zh & zl, Mux(zh, Cat(cl, C(1, 1)), Cat(ch, C(0, 1)))


class _Round(Module):
    """Accumulator state -> FP32 bits, rounded once to nearest-even. Pipelined: one state per cycle,
    latency round_latency(carry_limbs) cycles. `valid_i` travels with the data to `valid_o`.
    carry_limbs: limbs whose carries are resolved in one stage (each limb's add feeds the next one's carry in
    the same cycle); fewer stages, fewer flip-flops (every stage holds the whole state), a longer path. The
    last stage must take a single limb, so that the zero flags of the digits below each limb come from
    registered digits: (ACC_LIMBS - 1) must be a multiple of carry_limbs."""
    def __init__(self, state, valid_i, max_ranks, carry_limbs, top_extra=0):
        vw = len(valid_i)
        self.valid_o = Signal(vw)
        self.result = Signal(32)
        # after the carry stages: the exact sum as a MS_FMT_EXACT element (flags, 24-bit top, 9 digits) and
        # the valid/tag bits that travel with it
        self.exact = Signal(8 * PARTIAL_ELEMENT_BYTES)
        self.exact_valid = Signal(vw)
        lw = limb_width(max_ranks)
        widths = [lw] * (ACC_LIMBS - 1) + [lw + top_extra]
        self.latency = round_latency(carry_limbs)

        # # #

        offs = [sum(widths[:k]) for k in range(ACC_LIMBS + 1)]
        limbs = [state[offs[k]:offs[k + 1]] for k in range(ACC_LIMBS)]
        flags = state[offs[-1]:]
        digits, lowz, carry, valid, fl = self._resolve_carries(limbs, flags, valid_i, widths, carry_limbs)

        top_bits = PARTIAL_VALUE_BITS - ACC_LIMBS * ACC_LIMB_BITS
        top = Cat(carry, Replicate(carry[-1], max(0, top_bits - len(carry))))[:top_bits]
        self.comb += [
            self.exact.eq(Cat(*digits, top, fl)),
            self.exact_valid.eq(valid),
        ]
        # Sums of 2^288 (x 2^-149) or more in magnitude (only partial inputs reach them): the carry is more
        # than a sign; the result overflows to Inf.
        huge = [Signal() for _ in range(7)]      # in step with sign, ..2b, ..2c, ..3, ..4, ..4b, ..5
        self.sync += huge[0].eq((carry != 0) & (carry != -1)), [b.eq(a) for a, b in zip(huge, huge[1:])]
        # Sign and magnitude: negative sums are negated as ~D + 1, the +1 reaching digit k when all lower
        # digits are zero (the registered lowz flag, no long carry chain).
        neg = carry < 0
        mag = [Signal(ACC_LIMB_BITS) for _ in range(ACC_LIMBS)]
        sign, valid2, fl2 = Signal(), Signal(vw), Signal(len(ACC_FLAGS))
        for k in range(ACC_LIMBS):
            self.sync += mag[k].eq(Mux(neg, ~digits[k] + lowz[k], digits[k]))
        self.sync += sign.eq(neg), valid2.eq(valid), fl2.eq(fl)

        # Non-zero flags of the magnitude digits.
        nz = [Signal() for _ in range(ACC_LIMBS)]
        magr = [Signal(ACC_LIMB_BITS) for _ in range(ACC_LIMBS)]
        lowhi_zero = Signal()
        sign2b, valid2b, fl2b = Signal(), Signal(vw), Signal(len(ACC_FLAGS))
        self.sync += [
            [z.eq(m != 0) for z, m in zip(nz, mag)], [r.eq(m) for r, m in zip(magr, mag)],
            lowhi_zero.eq(mag[0][24:] == 0),
            sign2b.eq(sign), valid2b.eq(valid2), fl2b.eq(fl2),
        ]

        # Leading non-zero digit t (one-hot, registered), then a 64-bit window (digit t, digit t-1) and a
        # sticky bit for the digits below it.
        top1 = [Signal() for _ in range(ACC_LIMBS)]
        magt = [Signal(ACC_LIMB_BITS) for _ in range(ACC_LIMBS)]
        sticky_t, is_zero_t, small_t = Signal(), Signal(), Signal()
        sign2c, valid2c, fl2c = Signal(), Signal(vw), Signal(len(ACC_FLAGS))
        top1_c = [nz[k] & ~reduce(or_, nz[k + 1:], C(0, 1)) for k in range(ACC_LIMBS)]
        self.sync += [
            [a.eq(b) for a, b in zip(top1, top1_c)], [a.eq(b) for a, b in zip(magt, magr)],
            sticky_t.eq(reduce(or_, [top1_c[k] & reduce(or_, nz[:k - 1]) for k in range(2, ACC_LIMBS)])),
            is_zero_t.eq(~reduce(or_, nz)),
            small_t.eq(~reduce(or_, nz[1:]) & lowhi_zero),
            sign2c.eq(sign2b), valid2c.eq(valid2b), fl2c.eq(fl2b),
        ]
        t = Signal(max=ACC_LIMBS)
        window = Signal(2 * ACC_LIMB_BITS)
        sticky = Signal()
        is_zero, small = Signal(), Signal()
        sign3, valid3, fl3 = Signal(), Signal(vw), Signal(len(ACC_FLAGS))
        wins = [Mux(top1[k], Cat(magt[k - 1] if k else C(0, ACC_LIMB_BITS), magt[k]), 0) for k in range(ACC_LIMBS)]
        self.sync += [
            t.eq(reduce(or_, [Mux(top1[k], k, 0) for k in range(1, ACC_LIMBS)])),
            window.eq(reduce(or_, wins)),
            sticky.eq(sticky_t), is_zero.eq(is_zero_t), small.eq(small_t),
            sign3.eq(sign2c), valid3.eq(valid2c), fl3.eq(fl2c),
        ]
        self._round_window(window, t, sticky, is_zero, small, sign3, valid3, fl3, huge[-1])

    def _resolve_carries(self, limbs, flags, valid, widths, carry_limbs):
        """Carry propagation, carry_limbs limbs a stage (a chain of about carry_limbs x (lw + 1) bits).
        Returns, registered after the last stage: digits (digits[k] = low 32 bits of limb k), lowz, the
        carry out of the top limb (signed), valid and flags. Each stage also registers lowz[k] = "digits
        0..k-1 are all zero" for every k up to its first limb, from the digits registered so far (off the
        adders), for the negation that follows."""
        vw = len(valid)
        digits, lowz = [], [C(1, 1)]
        tw = widths[-1]
        carry = Signal((tw - ACC_LIMB_BITS + 1, True))
        self.comb += carry.eq(0)
        pending = [Signal((w, True)) for w in widths]
        self.comb += [p.eq(l) for p, l in zip(pending, limbs)]
        fl = flags
        for k0 in range(0, ACC_LIMBS, carry_limbs):
            group = range(k0, min(k0 + carry_limbs, ACC_LIMBS))
            c, new_digits = carry, []
            for k in group:
                total = Signal((widths[k] + 1, True))
                self.comb += total.eq(pending[k] + c)
                new_digits.append(total[:ACC_LIMB_BITS])
                c = total >> ACC_LIMB_BITS
            n_digits = [Signal(ACC_LIMB_BITS) for _ in range(group[-1] + 1)]
            lowz_next = list(lowz)
            for m in range(len(lowz), k0 + 1):
                lowz_next.append(lowz_next[m - 1] & (digits[m - 1] == 0))
            n_lowz = [Signal() for _ in lowz_next]
            n_pending = [Signal((w, True)) for w in widths]
            n_carry = Signal((tw - ACC_LIMB_BITS + 1, True))
            n_valid, n_fl = Signal(vw, name="n_valid"), Signal(len(ACC_FLAGS), name="n_fl")
            self.sync += [
                [nd.eq(d) for nd, d in zip(n_digits, digits + new_digits)],
                [nz.eq(z) for nz, z in zip(n_lowz, lowz_next)],
                n_carry.eq(c),
                [n_pending[i].eq(pending[i]) for i in range(group[-1] + 1, ACC_LIMBS)],
                n_valid.eq(valid), n_fl.eq(fl),
            ]
            digits, lowz, pending, carry, valid, fl = n_digits, n_lowz, n_pending, n_carry, n_valid, n_fl
        return digits, lowz, carry, valid, fl

    def _round_window(self, window, t, sticky, is_zero, small, sign, valid, fl, huge):
        """The window (digit t, digit t-1: the leading non-zero digit and the one below) normalised, rounded
        to nearest-even with the sticky bit of the digits below, assembled as FP32 on result/valid_o
        (special values from the flags, zero, subnormals: small, overflow: huge). Five stages."""
        vw = len(valid)
        nf = len(ACC_FLAGS)
        # Normalise the window: leading zeros of the top digit, then shift.
        lz = Signal(max=ACC_LIMB_BITS)
        top = window[ACC_LIMB_BITS:]
        lzv = Signal(max=ACC_LIMB_BITS)
        self.comb += lzv.eq(_lzc(top)[1])
        p = Signal(10)          # position of the leading one (weight 2^(p-149))
        win4, t4 = Signal(2 * ACC_LIMB_BITS, name="win4"), Signal(max=ACC_LIMBS, name="t4")
        sticky4, is_zero4, small4 = Signal(name="sticky4"), Signal(name="is_zero4"), Signal(name="small4")
        sign4, valid4, fl4 = Signal(name="sign4"), Signal(vw, name="valid4"), Signal(nf, name="fl4")
        self.sync += [
            lz.eq(lzv), win4.eq(window), t4.eq(t), sticky4.eq(sticky),
            is_zero4.eq(is_zero), small4.eq(small), sign4.eq(sign), valid4.eq(valid), fl4.eq(fl),
        ]
        # Shift (registered), then significand, round and sticky bits.
        norm = Signal(2 * ACC_LIMB_BITS)
        p4b, sticky4b, small_bits4b = Signal(10, name="p4b"), Signal(name="sticky4b"), Signal(24, name="small_bits4b")
        is_zero4b, small4b, sign4b = Signal(name="is_zero4b"), Signal(name="small4b"), Signal(name="sign4b")
        valid4b, fl4b = Signal(vw, name="valid4b"), Signal(nf, name="fl4b")
        self.comb += p.eq(t4 * ACC_LIMB_BITS + (ACC_LIMB_BITS - 1) - lz)
        # p - 22 is the biased exponent of 2^(p-149) (normal results only: p >= 24 past the `small` case).
        self.sync += [
            norm.eq(win4 << lz), p4b.eq(p - 22), sticky4b.eq(sticky4),
            small_bits4b.eq(win4[ACC_LIMB_BITS:ACC_LIMB_BITS + 24]),
            is_zero4b.eq(is_zero4), small4b.eq(small4), sign4b.eq(sign4), valid4b.eq(valid4), fl4b.eq(fl4),
        ]
        sig, rnd, stk = Signal(24, name="sig"), Signal(name="rnd"), Signal(name="stk")
        small_bits = Signal(24)
        is_zero5, small5, sign5 = Signal(name="is_zero5"), Signal(name="small5"), Signal(name="sign5")
        valid5, fl5 = Signal(vw, name="valid5"), Signal(nf, name="fl5")
        p5 = Signal(10)
        self.sync += [
            sig.eq(norm[-24:]), rnd.eq(norm[-25]), stk.eq((norm[:-25] != 0) | sticky4b),
            small_bits.eq(small_bits4b), p5.eq(p4b),
            is_zero5.eq(is_zero4b), small5.eq(small4b), sign5.eq(sign4b), valid5.eq(valid4b), fl5.eq(fl4b),
        ]

        # Assemble: (p - 22) << 23 | fraction, +1 to round up (the carry runs into the exponent by itself).
        body = Signal(34)
        sel6 = Signal(3)
        sign6, valid6 = Signal(name="sign6"), Signal(vw, name="valid6")
        nan_f, pinf_f, ninf_f, negzero_f = (fl5[ACC_FLAGS.index(f)] for f in ACC_FLAGS)
        self.sync += [
            body.eq(Cat(sig[:23], p5) + (rnd & (stk | sig[0]))),
            sign6.eq(sign5), valid6.eq(valid5),
            If(nan_f | (pinf_f & ninf_f), sel6.eq(0)
            ).Elif(pinf_f, sel6.eq(1)
            ).Elif(ninf_f, sel6.eq(2)
            ).Elif(huge, sel6.eq(7)
            ).Elif(is_zero5, sel6.eq(Mux(negzero_f, 4, 3))
            ).Elif(small5, sel6.eq(5)
            ).Else(sel6.eq(6)),
        ]
        small6 = Signal(24)
        self.sync += small6.eq(small_bits)
        self.sync += [
            self.valid_o.eq(valid6),
            Case(sel6, {
                0: self.result.eq(FP32_QNAN),
                1: self.result.eq(FP32_PINF),
                2: self.result.eq(FP32_NINF),
                3: self.result.eq(0),
                4: self.result.eq(0x80000000),
                5: self.result.eq(Cat(small6, C(0, 7), sign6)),
                7: self.result.eq(Cat(C(FP32_PINF, 31), sign6)),
                "default": If(body >= FP32_PINF,
                        self.result.eq(Cat(C(FP32_PINF, 31), sign6))
                    ).Else(
                        self.result.eq(Cat(body[:31], sign6))
                    ),
            })
        ]


def acc_op_layout(lanes, depth, partials=False):
    """The bank's op stream: op (ACC_OP_*), addr, init, emit, data (`lanes` FP32); with partials, xout (the
    emitted result is the exact element, not its rounding) and pdata (an ADDP's element)."""
    return ([("op", 2), ("addr", bits_for(depth - 1)), ("init", 1), ("emit", 1), ("data", 32 * lanes)] +
            ([("xout", 1), ("pdata", 8 * PARTIAL_ELEMENT_BYTES)] if partials else []))


def acc_result_layout(lanes, partials=False):
    """The bank's results: `lanes` FP32 in data; with partials, data is 320 bits: an exact element (exact=1)
    or an FP32 in its low 32 bits."""
    if partials:
        return [("data", 8 * PARTIAL_ELEMENT_BYTES), ("exact", 1)]
    return [("data", 32 * lanes)]


class MSAccumulatorBank(LiteXModule):
    """A RAM of `depth` words of `lanes` exact FP32 accumulators (MS_ACC_EXACT_FP32_MAG277).

    sink ops: ADD (addr, init, data = lanes FP32) adds element-wise, `init` starting from zero, and with
    `emit` also sends the new sums (rounded once to FP32) on `source`; READ (addr) sends the stored sums.
    Results leave in op order. Pipeline: r0 registers the op, r1 the RAM address and the op's data, r2 the
    RAM's address register and the FP32 fields, r3 the RAM's output register and the shifted significand,
    r4 a plain copy of the RAM output next to the adders and one addend per limb, and adds per limb, r5
    writes back and feeds the rounding pipeline.
    Throughput: one op per cycle; an op waits in r0 only while an ADD to the same address is in r1..r4 (its
    write-back would come after this op's RAM read; consecutive addresses never wait), and an emitting op
    only when `out_depth` results are outstanding.
    Latency: a result enters the output FIFO 6 + round_latency(carry_limbs) cycles after its op is accepted.
    Parameters: lanes >= 1, depth >= 2, max_ranks (additions per accumulator) 1..1024, carry_limbs (limbs
    resolved per stage of the rounding pipelines: 1, 2, 4 or 8; default 1 for one lane, the fastest, and 2
    for more lanes, where each lane's pipeline holds about 1.4k flip-flops fewer), partials (ADDP and exact
    results; one lane only; the top limb PARTIAL_TOP_EXTRA bits wider).
    """
    def __init__(self, lanes=1, depth=256, max_ranks=256, out_depth=32, carry_limbs=None, partials=False):
        if lanes < 1:
            raise ValueError(f"lanes must be >= 1, got {lanes}")
        if partials and lanes != 1:
            raise ValueError(f"exact partials need lanes == 1, got {lanes}")
        if carry_limbs is None:
            carry_limbs = 1 if lanes == 1 else 2
        if carry_limbs < 1 or (ACC_LIMBS - 1) % carry_limbs:
            raise ValueError(f"carry_limbs must divide {ACC_LIMBS - 1} (the last stage takes one limb), "
                             f"got {carry_limbs}")
        if depth < 2:
            raise ValueError(f"depth must be >= 2, got {depth}")
        if not 1 <= max_ranks <= 1024:
            raise ValueError(f"max_ranks must be in 1..1024 (288-bit window), got {max_ranks}")
        self.sink = stream.Endpoint(acc_op_layout(lanes, depth, partials))
        aw = len(self.sink.addr)
        self.source = stream.Endpoint(acc_result_layout(lanes, partials))
        self.lanes, self.depth = lanes, depth
        extra = PARTIAL_TOP_EXTRA if partials else 0
        sw = acc_state_bits(max_ranks, extra)
        lw = limb_width(max_ranks)
        widths = [lw] * (ACC_LIMBS - 1) + [lw + extra]

        # # #

        # Read at the r1 address, data out of the RAM's two registers in r3; a read never meets the write to
        # its address (hazard stall).
        self.ram = ram = BlockRAM(sw * lanes, depth)

        # Pipeline registers: valid, op, addr, init, emit per stage r0..r5.
        st = [dict(valid=Signal(), op=Signal(2), addr=Signal(aw), init=Signal(), emit=Signal(), xout=Signal())
              for _ in range(6)]
        r0_data, r1_data = Signal(32 * lanes), Signal(32 * lanes, reset_less=True)
        pw = 8 * PARTIAL_ELEMENT_BYTES
        r0_pdata, r1_pdata = Signal(pw if partials else 1), Signal(pw if partials else 1, reset_less=True)
        r5_state = Signal(sw * lanes)

        # Result FIFO and credits.
        self.fifo = fifo = stream.SyncFIFO(acc_result_layout(lanes, partials), out_depth, buffered=True)
        self.comb += fifo.source.connect(self.source)
        outstanding = Signal(max=out_depth + 1)

        # r0 issues its op (the RAM read) unless an ADD to its address is in r1..r4 (that write-back would
        # come after the read): then r0 holds and a bubble enters r1. The match of an op against the ops
        # ahead of it is registered (stall0) as the op enters r0 or holds, so sink.ready comes from registers.
        stall0, adv0 = Signal(), Signal()
        self.comb += adv0.eq(~(st[0]["valid"] & stall0))
        emits = Signal()
        self.comb += emits.eq((self.sink.op == ACC_OP_READ) | (self.sink.op == ACC_OP_PASS) | self.sink.emit)
        credit = Signal()
        self.comb += credit.eq(~emits | (outstanding != out_depth))
        self.comb += self.sink.ready.eq(adv0 & credit)
        accept = Signal()
        self.comb += accept.eq(self.sink.valid & self.sink.ready)

        rd_issue = accept & emits
        rd_done = self.source.valid & self.source.ready
        # Both successors come from the register; the late issue/done signals only select.
        out_up, out_dn = Signal.like(outstanding), Signal.like(outstanding)
        self.comb += out_up.eq(outstanding + 1), out_dn.eq(outstanding - 1)
        self.sync += If(rd_issue & ~rd_done, outstanding.eq(out_up)).Elif(rd_done & ~rd_issue, outstanding.eq(out_dn))

        def add_to(addr, r):
            return r["valid"] & ((r["op"] == ACC_OP_ADD) | (r["op"] == ACC_OP_ADDP)) & (r["addr"] == addr)
        self.sync += [
            If(accept,      # r0 -> r1, the new op -> r0; it will meet the ops now in r0..r3 in r1..r4
                st[0]["valid"].eq(1), st[0]["op"].eq(self.sink.op), st[0]["addr"].eq(self.sink.addr),
                st[0]["init"].eq(self.sink.init | (self.sink.op == ACC_OP_PASS)), st[0]["emit"].eq(self.sink.emit),
                st[0]["xout"].eq(self.sink.xout if partials else 0),
                r0_data.eq(self.sink.data), r0_pdata.eq(self.sink.pdata if partials else 0),
                stall0.eq(reduce(or_, [add_to(self.sink.addr, r) for r in st[:4]]))
            ).Elif(adv0,
                st[0]["valid"].eq(0), stall0.eq(0)
            ).Else(         # r0 holds; the ops now in r1..r3 move to r2..r4
                stall0.eq(reduce(or_, [add_to(st[0]["addr"], r) for r in st[1:4]]))
            ),
            r1_data.eq(r0_data),     # the op's data while it is in r1 (r0 holds it until the op leaves)
            r1_pdata.eq(r0_pdata),
            [st[1][k].eq(st[0][k]) for k in st[0] if k != "valid"],
            st[1]["valid"].eq(st[0]["valid"] & adv0),
        ]
        for a, b in zip(st[2:], st[1:-1]):
            self.sync += [a[k].eq(b[k]) for k in a]
        self.comb += [
            ram.adr_r.eq(st[1]["addr"]),
            ram.adr_w.eq(st[5]["addr"]), ram.dat_w.eq(r5_state),
            ram.we.eq(st[5]["valid"] & ((st[5]["op"] == ACC_OP_ADD) | (st[5]["op"] == ACC_OP_ADDP))),
        ]
        # An ADDP's element reaches the limb addends in r3, as a decoded FP32 does.
        pd2, pd3 = Signal.like(r1_pdata), Signal.like(r1_pdata)
        self.sync += pd2.eq(r1_pdata), pd3.eq(pd2)

        rounds = []
        for ln in range(lanes):
            rounds.append(self._add_lane(st, r1_data[32 * ln:32 * ln + 32], pd3, ram.dat_r[sw * ln:sw * (ln + 1)],
                                         r5_state[sw * ln:sw * (ln + 1)], widths, max_ranks, carry_limbs, partials))
        self.latency = 6 + rounds[0].latency
        if partials:
            # Exact results leave the rounding pipeline after its carry stages and wait for their turn here
            # (results stay in op order: each emitting op gives one result at the pipeline's end).
            self.xfifo = stream.SyncFIFO([("data", pw)], 16)
        self._add_results(rounds, partials)

    def _add_lane(self, st, fp32, pdata, old_state, new_state, widths, max_ranks, carry_limbs, partials):
        """One lane's adders (r3, r4: `fp32` or the ADDP's `pdata` added to `old_state`, the RAM's output;
        the sum registered as `new_state` in r5) and its rounding pipeline (returned)."""
        sw = len(old_state)
        offs = [sum(widths[:k]) for k in range(ACC_LIMBS + 1)]
        # r3: the RAM output is registered again (`old`, r4) next to the adders; the decoded FP32 (fields
        # registered in r2, shifted significand in r3) is registered as one addend per limb (r4): m, or ~m
        # with a carry in for -m (one carry chain per limb). A READ adds nothing (addends 0, flags
        # neutral), so r5 needs no op multiplexer.
        dec = _Decode(fp32)
        self.submodules += dec
        is_add = (st[3]["op"] == ACC_OP_ADD) | (st[3]["op"] == ACC_OP_PASS)
        addend, cin = [Signal(w, name="addend") for w in widths], Signal(name="cin")
        vfl = {f: Signal(name=f"vfl_{f}") for f in ACC_FLAGS}
        old = Signal(sw, reset_less=True)
        fp32_addend = [Mux(is_add, Mux(dec.negative, ~Cat(m, C(0, w - ACC_LIMB_BITS)), m), 0)
                       for m, w in zip(dec.mags, widths)]
        fp32_flags = {f: Mux(is_add, dec.flags[f], f == "negzero") for f in ACC_FLAGS}
        if partials:
            # N's digits; the top limb also takes N[311:288] (sign-extended) above its digit
            is_addp = st[3]["op"] == ACC_OP_ADDP
            top = pdata[ACC_LIMBS * ACC_LIMB_BITS:PARTIAL_VALUE_BITS]
            p_addend = [pdata[32 * k:32 * k + 32] for k in range(ACC_LIMBS - 1)]
            p_addend.append(Cat(pdata[32 * (ACC_LIMBS - 1):32 * ACC_LIMBS],
                                Replicate(top[-1], widths[-1] - ACC_LIMB_BITS - len(top)), top)[:widths[-1]]
                            if widths[-1] - ACC_LIMB_BITS > len(top) else
                            Cat(pdata[32 * (ACC_LIMBS - 1):32 * ACC_LIMBS], top)[:widths[-1]])
            p_flags = {f: pdata[PARTIAL_VALUE_BITS + i] for i, f in enumerate(ACC_FLAGS)}
            fp32_addend = [Mux(is_addp, pa, fa) for pa, fa in zip(p_addend, fp32_addend)]
            fp32_flags = {f: Mux(is_addp, p_flags[f], fp32_flags[f]) for f in ACC_FLAGS}
        self.sync += [
            [a.eq(x) for a, x in zip(addend, fp32_addend)],
            cin.eq(is_add & dec.negative),
            [vfl[f].eq(fp32_flags[f]) for f in ACC_FLAGS],
            old.eq(old_state),
        ]

        # r4: per-limb add (carry chunking: no carry crosses limbs), sticky flags.
        old_limbs = [old[offs[k]:offs[k + 1]] for k in range(ACC_LIMBS)]
        old_fl = {f: old[offs[-1] + i] for i, f in enumerate(ACC_FLAGS)}
        init = st[4]["init"]
        new_limbs = [Signal(w + 1) for w in widths]
        new_fl = {f: Signal(name=f"new_fl_{f}") for f in ACC_FLAGS}
        self.comb += [nl.eq(Cat(C(1, 1), Mux(init, 0, ol)) + Cat(cin, a))     # bit 0: the carry in
                      for nl, ol, a in zip(new_limbs, old_limbs, addend)]
        self.comb += [new_fl[f].eq(Mux(init, 0, old_fl[f]) | vfl[f]) for f in ("nan", "pinf", "ninf")]
        self.comb += new_fl["negzero"].eq(Mux(init, 1, old_fl["negzero"]) & vfl["negzero"])
        self.sync += new_state.eq(
            Cat(*[nl[1:w + 1] for nl, w in zip(new_limbs, widths)], *[new_fl[f] for f in ACC_FLAGS]))

        emit5 = st[5]["valid"] & ((st[5]["op"] == ACC_OP_READ) | (st[5]["op"] == ACC_OP_PASS) | st[5]["emit"])
        extra = PARTIAL_TOP_EXTRA if partials else 0
        rnd = _Round(new_state, Cat(emit5, st[5]["xout"]), max_ranks, carry_limbs, extra)
        self.submodules += rnd
        return rnd

    def _add_results(self, rounds, partials):
        """The lanes' results into the result FIFO; with partials, the exact ones through xfifo."""
        fifo = self.fifo
        out_valid, out_xout = rounds[0].valid_o[0], rounds[0].valid_o[1]
        self.comb += fifo.sink.valid.eq(out_valid)
        if partials:
            xfifo, xv = self.xfifo, rounds[0].exact_valid
            self.comb += [
                xfifo.sink.valid.eq(xv[0] & xv[1]), xfifo.sink.data.eq(rounds[0].exact),
                xfifo.source.ready.eq(out_valid & out_xout),
                fifo.sink.exact.eq(out_xout),
                fifo.sink.data.eq(Mux(out_xout, xfifo.source.data, rounds[0].result)),
            ]
        else:
            self.comb += fifo.sink.data.eq(Cat(*[r.result for r in rounds]))

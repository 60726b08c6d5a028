"""RIFL Layer 2 byte packing: byte masks and beat figures, the packers (BytePacker, FramePacker), and the
framing of cells as Layer 2 packets and back (L2Framer, L2Deframer)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.rifl.common import (
    L2_HEADER_BITS, L2_HEADER_BYTES, L2_PACKET_BYTES, SEGMENT_BYTES, check_frame_bits, check_l2_data_width,
    l2_cell_layout, payload_bytes, user_layout)
from cores.rifl.l2.parser import L2UnitParser


def _header_bytes(header):
    """The header's bytes in sending order (the first byte holds total | remain)."""
    return [header[8 * (L2_HEADER_BYTES - 1 - k):8 * (L2_HEADER_BYTES - k)] for k in range(L2_HEADER_BYTES)]


def byte_mask(module, n, nbytes):
    """A signal with the low min(n, nbytes) bytes of an nbytes-byte word set, as a case over n: a comparison
    per byte after synthesis, where `(1 << 8 n) - 1` is a carry chain through the whole word."""
    mask = Signal(8 * nbytes)
    cases = {k: mask.eq(2**(8 * k) - 1) for k in range(nbytes)}
    cases["default"] = mask.eq(2**(8 * nbytes) - 1)
    module.comb += Case(n, cases)
    return mask


def byte_enables(module, n, nbytes):
    """A signal with the low min(n, nbytes) bits set (one a byte), as byte_mask."""
    mask = byte_mask(module, n, nbytes)
    return Cat(*[mask[8 * k] for k in range(nbytes)])


def beat_figures(module, base, sub, W):
    """The figures of a byte count value = base - sub (sub <= base, sub <= W, W a power of two) for its next
    W-byte beat: (min(value, W), value <= W, byte enables of min(value, W)), from a short difference of base's
    low bits and a zero test of its high bits, so that no carry chain through base comes before them."""
    b = log2_int(W) + 2
    hi_zero, low = Signal(), Signal(b + 1)
    n = Signal(max=W + 1)
    end = Signal()
    module.comb += [
        hi_zero.eq(base[b:] == 0),
        low.eq(base[:b] - sub),                 # value when hi_zero (base < 4 W)
        n.eq(Mux(hi_zero & (low < W), low, W)),
        end.eq(hi_zero & (low <= W)),
    ]
    return n, end, byte_enables(module, n, W)


class BytePacker(LiteXModule):
    """Packs chunks of 0..in_bytes bytes (sink: data, n; byte k = data[8k+7:8k]) into beats of `size` bytes
    (source: data, bytes above `size` zero), `size` (one of `sizes`, default 1..out_bytes) being set by the
    user for the next beat. Buffer of in_bytes + out_bytes bytes; takes a chunk and gives a beat every cycle;
    latency 1 cycle. The shift amounts and the level compares come from registers (the level, the level
    less each of `sizes` and the compares, all updated with the level; `size`, which users set from
    registers, selects among them): the handshake (`source.ready`, `sink.valid`) only selects between the
    shifted words. clean: the sink's bytes from n on are zero (no mask on the way in). ahead: the next level
    and its figures are computed for each outcome of the handshake (no beat or a beat of each size leaves, a
    chunk comes in or not) from registers and sink.n, the handshake selecting one set (no carry chain after
    it), else from the next level (an adder after the handshake, and fewer LUTs). (FramePacker: a packer
    whose sink.ready is a register.)"""
    def __init__(self, in_bytes, out_bytes, sizes=None, clean=False, ahead=False):
        self.sink = sink = stream.Endpoint([("data", 8 * in_bytes), ("n", bits_for(in_bytes))])
        self.source = source = stream.Endpoint([("data", 8 * out_bytes)])
        self.size = Signal(bits_for(out_bytes))

        # # #

        B = in_bytes + out_bytes
        sizes = sorted(set(sizes or range(1, out_bytes + 1)))
        buf = Signal(8 * B)
        level = Signal(max=B + 1)
        after = {k: Signal(max=B + 1) for k in sizes}           # level - k
        full = {k: Signal() for k in sizes}                     # level >= k
        fits = {k: Signal(reset=1) for k in sizes}              # level <= B - in_bytes + k
        space = Signal(reset=1)                                 # level <= B - in_bytes
        popped = Signal(max=B + 1)                  # the level after a beat leaves
        pop, push = Signal(), Signal()
        room = Signal()                             # popped <= B - in_bytes
        chunk = Signal(8 * in_bytes)
        kept = Signal(8 * B)                        # the buffer after a beat leaves
        self.comb += [
            source.data.eq(buf & byte_mask(self, self.size, out_bytes)),
            chunk.eq(sink.data if clean else sink.data & byte_mask(self, sink.n, in_bytes)),
            Case(self.size, {k: [
                source.valid.eq(full[k]),
                room.eq(fits[k]),
                popped.eq(after[k]),
                kept.eq(buf >> 8 * k),
            ] for k in sizes}),
            pop.eq(source.valid & source.ready),
            sink.ready.eq(Mux(pop, room, space)),
            push.eq(sink.valid & sink.ready),
        ]
        self.sync += buf.eq(Mux(pop, kept, buf) |
                            Mux(push, Mux(pop, chunk << Cat(C(0, 3), popped), chunk << Cat(C(0, 3), level)), 0)[:8 * B])

        def figures(value):
            return [level.eq(value),
                    [after[k].eq(value - k) for k in sizes],
                    [full[k].eq(value >= k) for k in sizes],
                    [fits[k].eq(value <= B - in_bytes + k) for k in sizes],
                    space.eq(value <= B - in_bytes)]

        def candidate(base, with_push):
            value = Signal(max=B + 1)
            self.comb += value.eq(base + sink.n if with_push else base)
            return figures(value)

        if ahead:
            self.sync += If(pop,
                Case(self.size, {k: If(push, candidate(after[k], True)).Else(candidate(after[k], False))
                                 for k in sizes}),
            ).Elif(push, candidate(level, True))
        else:
            level_next = Signal(max=B + 1)
            self.comb += level_next.eq(Mux(pop, popped, level) + Mux(push, sink.n, 0))
            self.sync += figures(level_next)


class FramePacker(LiteXModule):
    """Packs chunks of 0..in_bytes bytes (sink: data, n; byte k = data[8k+7:8k], the bytes from n on zero)
    into beats of out_bytes bytes (source: data), for the L2 framer. Buffer of in_bytes + 2 * out_bytes bytes:
    sink.ready is a register (room for a chunk before a beat leaves), so the source's ready does not reach
    the sink's. A chunk goes in at the level, a leaving beat then shifts the buffer by the constant
    out_bytes: the handshake selects after the one shifter, which the level (a register) sets. grain (a power
    of two): every chunk's n and out_bytes are multiples of it, so the shifter moves whole grains (fewer
    multiplexer levels). Takes a chunk and gives a beat every cycle; the beats leave back to back while the
    chunks bring at least out_bytes a cycle. Latency 1 cycle."""
    def __init__(self, in_bytes, out_bytes, grain=1):
        if grain & (grain - 1) or in_bytes % grain or out_bytes % grain or not 0 < out_bytes:
            raise ValueError(f"FramePacker needs a power-of-two grain dividing in_bytes and out_bytes > 0, got "
                             f"grain {grain!r}, in_bytes {in_bytes!r}, out_bytes {out_bytes!r}")
        self.sink = sink = stream.Endpoint([("data", 8 * in_bytes), ("n", bits_for(in_bytes))])
        self.source = source = stream.Endpoint([("data", 8 * out_bytes)])

        # # #

        B = in_bytes + 2 * out_bytes
        g = log2_int(grain)
        buf, filled = Signal(8 * B), Signal(8 * B)
        level = Signal(max=B + 1)
        popped = Signal(max=B + 1)                  # level - out_bytes
        full, space = Signal(), Signal(reset=1)     # level >= out_bytes, level <= B - in_bytes
        pop, push = Signal(), Signal()
        level_next = Signal(max=B + 1)
        self.comb += [
            source.valid.eq(full),
            source.data.eq(buf[:8 * out_bytes]),
            sink.ready.eq(space),
            pop.eq(source.valid & source.ready),
            push.eq(sink.valid & sink.ready),
            filled.eq(buf | Mux(push, sink.data << Cat(C(0, 3 + g), level[g:]), 0)[:8 * B]),
            level_next.eq(Mux(pop, popped, level) + Mux(push, sink.n, 0)),
        ]
        self.sync += [
            buf.eq(Mux(pop, filled >> 8 * out_bytes, filled)),
            level.eq(level_next),
            popped.eq(level_next - out_bytes),
            full.eq(level_next >= out_bytes),
            space.eq(level_next <= B - in_bytes),
        ]


class L2Framer(LiteXModule):
    """Layer 2 packets from cells: sink l2_cell_layout(data_width), a cell = the Layer 2 header (read on the
    first beat) beside SEGMENT_BYTES of segment in SEGMENT_BYTES * 8 / data_width beats (counted; `last` is
    not looked at); source user_layout(frame_bits): the L2_PACKET_BYTES-byte Layer 1 packet (header, then the
    segment) in full beats but the last (its bytes past L2_PACKET_BYTES zero); the header goes into the packer
    (FramePacker) with the first beat, zero padding to whole beats with the last. Throughput:
    one cell beat a cycle; the Layer 1 beats leave back to back when data_width >= 8 * payload bytes.
    Latency: 1 cycle."""
    def __init__(self, frame_bits, data_width):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        W = data_width // 8
        P = payload_bytes(frame_bits)
        self.sink = sink = stream.Endpoint(l2_cell_layout(data_width))
        self.source = source = stream.Endpoint(user_layout(frame_bits))

        # # #

        nbeats = -(-L2_PACKET_BYTES // P)
        last_bytes = L2_PACKET_BYTES - (nbeats - 1) * P
        # The unit's last cell beat brings `pad` zero bytes more, so that the packer always gives P bytes (one
        # size: no choice before its shifts and compares); the Layer 1 packet's last beat says last_bytes.
        # The chunks (header + W, W, W + pad) and P are even (frame_bits >= 64 a power of two): grain 2.
        pad = nbeats * P - L2_PACKET_BYTES
        self.packer = fp = FramePacker(max(L2_HEADER_BYTES, pad) + W, P, grain=2)
        beats = SEGMENT_BYTES // W
        assert beats >= 2
        beat = Signal(max=beats)
        first = Signal(reset=1)                     # registered: beat == 0 (no compare before the packer)
        tail = Signal()                             # registered: beat == beats - 1
        self.comb += [
            fp.sink.valid.eq(sink.valid),
            sink.ready.eq(fp.sink.ready),
            fp.sink.data.eq(Mux(first, Cat(*_header_bytes(sink.header), sink.data), sink.data)),
            fp.sink.n.eq(Mux(first, L2_HEADER_BYTES + W, Mux(tail, W + pad, W))),
        ]
        self.sync += If(sink.valid & sink.ready,
            beat.eq(Mux(tail, 0, beat + 1)),
            first.eq(tail),
            tail.eq(beat == beats - 2),
        )
        ubeat = Signal(max=nbeats)
        final = Signal()                            # registered: the unit's last beat is next
        self.comb += [
            source.valid.eq(fp.source.valid),
            source.data.eq(fp.source.data),
            source.nbytes.eq(Mux(final, last_bytes, P)),
            source.last.eq(final),
            fp.source.ready.eq(source.ready),
        ]
        self.sync += If(source.valid & source.ready,
            If(final, ubeat.eq(0), final.eq(0)).Else(ubeat.eq(ubeat + 1), final.eq(ubeat == nbeats - 2)),
        )


class L2Deframer(LiteXModule):
    """Cells from Layer 2 packets, the inverse of L2Framer: sink user_layout(frame_bits) (Layer 1 packets of
    L2_PACKET_BYTES; a shorter one is completed with zeros, a longer one truncated: `malformed`, see
    L2UnitParser), source l2_cell_layout(data_width): the header on every beat of its cell, the segment in
    SEGMENT_BYTES * 8 / data_width beats, `last` on the final one. Throughput: one Layer 1 beat a cycle when
    data_width >= 8 * payload bytes. Latency: 2 cycles."""
    def __init__(self, frame_bits, data_width):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        W = data_width // 8
        P = payload_bytes(frame_bits)
        self.sink = stream.Endpoint(user_layout(frame_bits))
        self.source = source = stream.Endpoint(l2_cell_layout(data_width))

        # # #

        self.parser = parser = L2UnitParser(frame_bits)
        self.packer = pk = BytePacker(P, W, sizes=(W,), clean=True)
        self.headers = hdr = stream.SyncFIFO([("header", L2_HEADER_BITS)], 2)
        self.events = parser.events
        beats = SEGMENT_BYTES // W
        beat = Signal(max=beats)
        # The packer holds fewer bytes than a segment (P + W < SEGMENT_BYTES), so a unit's header enters the
        # FIFO before its body's bytes leave the packer, and the cell before it has left (its header popped)
        # before the next unit's first beat: the FIFO has room at every unit's first beat and holds the header
        # of every beat the packer gives. Neither handshake waits for the FIFO's level.
        assert P + W < SEGMENT_BYTES
        self.comb += [
            self.sink.connect(parser.sink),
            parser.go.eq(parser.valid & pk.sink.ready),
            pk.sink.valid.eq(parser.go),
            pk.sink.data.eq(parser.body_data),
            pk.sink.n.eq(parser.body_n),
            hdr.sink.valid.eq(parser.go & parser.first),
            hdr.sink.header.eq(parser.hdr_now),
            pk.size.eq(W),
            source.valid.eq(pk.source.valid),
            source.header.eq(hdr.source.header),
            source.data.eq(pk.source.data),
            pk.source.ready.eq(source.ready),
            hdr.source.ready.eq(source.valid & source.ready & source.last),
        ]
        self.sync += If(source.valid & source.ready,
            beat.eq(Mux(source.last, 0, beat + 1)),
            source.last.eq(~source.last & (beat == beats - 2)),     # a register: beats >= 2 (P + W < 256)
        )

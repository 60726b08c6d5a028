"""RIFL Layer 2 endpoint in gateware: segmentation of upper-layer packets into Layer 2 packets (header +
256-byte segment, one Layer 1 packet each) and reassembly, bit-exact with software/rifl/reference.py."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRField, CSRStorage

from cores.lib.block_ram import BlockRAM
from cores.lib.buffers import RegisteredBuffer, SkidBuffer
from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import (
    L2_DST_PORTS, L2_HEADER, L2_HEADER_BITS, L2_HEADER_BYTES, L2_LENGTH_BYTES, L2_LENGTH_OFFSET,
    L2_MAX_PACKET_BYTES, L2_PACKET_BYTES, L2_RX_CONTEXTS, L2_RX_CONTEXTS_MAX, L2_RX_COUNTERS, L2_RX_PARAMS,
    L2_RX_TIMEOUT, L2_RX_TIMEOUT_BITS, L2_RX_TIMEOUT_STEPS, L2_TX_COUNTERS, L2_TX_PARAMS,
    MAX_HOPS, SEGMENT_BYTES, check_frame_bits, check_l2_data_width, l2_data_layout, l2_segments,
    l2_cell_layout, payload_bytes, user_layout)


def _bytes(value, n):
    return [value[8 * k:8 * k + 8] for k in range(n)]


def _header_bytes(header):
    """The header's bytes in sending order (the first byte holds total | remain)."""
    return [header[8 * (L2_HEADER_BYTES - 1 - k):8 * (L2_HEADER_BYTES - k)] for k in range(L2_HEADER_BYTES)]


def reply_route_statements(header, reply):
    """Statements setting `reply` to cores.rifl.common.reply_route(header): a case over Total Hops (0..5,
    anything else gives 0) of rotations, reversal and negation modulo 256 of the Dst Port bytes."""
    ports = [L2_HEADER.field(header, name) for name in L2_DST_PORTS]
    cases = {"default": reply.eq(0)}
    for t in range(MAX_HOPS + 1):
        k = -t % MAX_HOPS
        orig = ports[k:] + ports[:k]
        back = [(C(0, 8) - p)[:8] for p in reversed(orig[:t])] + [C(0, 8)] * (MAX_HOPS - t)
        cases[t] = reply.eq(L2_HEADER.value(total_hops=t, remain_hops=t, **dict(zip(L2_DST_PORTS, back))))
    return Case(L2_HEADER.field(header, "total_hops"), cases)


def key_form(header):
    """The reply route of `header` (cores.rifl.common.reply_route) up to a bijection, for comparisons: Total
    Hops (0 above MAX_HOPS, whose reply route is 0) and the Dst Ports the reply route is made of (the last t
    for Total Hops t, which it negates in reverse order), the others zero. Two headers have the same reply
    route iff they have the same form, a LUT level where the reply route has carry chains."""
    t = L2_HEADER.field(header, "total_hops")
    ports = [L2_HEADER.field(header, name) for name in L2_DST_PORTS]
    return Cat(Mux(t <= MAX_HOPS, t, 0),
               *[Mux((t >= MAX_HOPS - i) & (t <= MAX_HOPS), p, 0) for i, p in enumerate(ports)])


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


class L2Segmenter(LiteXModule):
    """Layer 2 segmentation: upper-layer packets in, Layer 2 packets out as Layer 1 packets.

    sink: `data` beats of data_width bits (L2_DATA_WIDTHS) with params `length` (bytes, 1..
    L2_MAX_PACKET_BYTES) and `route` (the 48-bit Layer 2 header); the beats of a packet are full except
    the last. source: cores.rifl.common.user_layout(frame_bits) with `last`, for RIFLEndpoint.sink: each
    L2 packet is L2_PACKET_BYTES bytes (header, then the segment of the stream length prefix | packet |
    zero padding), in full beats except the last.
    Bad input: length 0 or too large drops the packet; `last` before `length` bytes completes the packet
    with the rest of that beat and zeros, beats after `length` bytes are dropped; both counted. Throughput: one upper-layer beat a cycle plus
    one cycle per packet (length prefix) and per segment (header); for data_width >= 8 * payload bytes
    the Layer 1 beats leave back to back (line rate). Latency: 4 cycles from a packet's first beat to its
    first Layer 1 beat, 2 of them the registered input stage and the registered buffer (both handshakes
    from flip-flops) before the framer; the source's ready reaches only a skid register.
    """
    def __init__(self, frame_bits=256, data_width=64, with_csr=False):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        W = data_width // 8
        self.sink = sink = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_TX_PARAMS))
        self.source = source = stream.Endpoint(user_layout(frame_bits))
        ev = {name: Signal() for name, _ in L2_TX_COUNTERS}

        # # #

        # Stage 0: the input registered (1 cycle) with what stage 1 needs of `length` (its check and the
        # segments), so that stage 1 decides from registers.
        derived = [("length_ok", 1), ("segments", 9)]
        self.input_buffer = ib = stream.Buffer(stream.EndpointDescription(
            l2_data_layout(data_width), L2_TX_PARAMS + derived), pipe_valid=True)
        padded = Signal(8 * L2_LENGTH_BYTES + 1)
        self.comb += [
            sink.connect(ib.sink),
            # In a 17-bit signal: in Verilog the sum would take the 16-bit width of `length` and wrap for
            # lengths above 65278 (Migen's simulator does not show it).
            padded.eq(sink.length + L2_LENGTH_BYTES + SEGMENT_BYTES - 1),
            ib.sink.length_ok.eq((sink.length != 0) & (sink.length <= L2_MAX_PACKET_BYTES)),
            ib.sink.segments.eq(padded >> 8),
        ]
        inp = ib.source

        # Stage 1: the segment stream (length prefix, packet, zero padding to whole segments) in W-byte beats.
        # Every packet beat but the last is full, so the stream is the packet's beats moved by the prefix's
        # L2_LENGTH_BYTES: a beat is the bytes carried from the previous one and the low bytes of this one
        # (the last masked to the packet), then beats of the carried bytes and zeros until the packet's whole
        # segments are out. No packer: a register of carried bytes and two down-counters, `rem` (packet bytes
        # to come, with its next beat's byte enables and end flag) and `beats` (stream beats to come, with a
        # registered last flag), whose next values are computed from registers for the handshake to select.
        rem = Signal(8 * L2_LENGTH_BYTES)
        en_data = Signal(W)                                        # byte enables of min(rem, W)
        rem_end = Signal()                                         # rem <= W
        seg_beats = SEGMENT_BYTES // W
        beats = Signal(max=(L2_MAX_PACKET_BYTES // SEGMENT_BYTES + 2) * seg_beats)
        beats_last = Signal()                                      # beats == 1
        carry = Signal(8 * L2_LENGTH_BYTES)
        kept = 8 * (W - L2_LENGTH_BYTES)                           # bits of a packet beat in its stream beat
        trail = Signal()
        load = Signal()                                            # a packet starts: rem, beats loaded
        sent, sent_data = Signal(), Signal()                       # a stream beat, a packet beat, sent
        data = Signal(8 * W)
        self.routes = routes = stream.SyncFIFO([("route", L2_HEADER_BITS), ("segments", 9)], 4, buffered=True)
        self.stream_buffer = sb = RegisteredBuffer([("data", 8 * W)])
        self.comb += [
            routes.sink.route.eq(inp.route),
            routes.sink.segments.eq(inp.segments),
            data.eq(inp.data & Cat(*[Replicate(en_data[k], 8) for k in range(W)])),
        ]

        def set_rem(base, sub):
            _, end, en = beat_figures(self, base, sub, W)
            return [rem.eq(base - sub), en_data.eq(en), rem_end.eq(end)]

        self.sync += [
            If(load, set_rem(inp.length, 0)).Elif(sent_data, set_rem(rem, W)),
            If(load,
                beats.eq(inp.segments << log2_int(seg_beats)),
                beats_last.eq(0),                                  # a segment is seg_beats >= 4 beats
                carry.eq(Cat(inp.length[8:], inp.length[:8])),
            ).Elif(sent,
                beats.eq(beats - 1),
                beats_last.eq(beats == 2),
                carry.eq(Mux(sent_data, data[kept:], 0)),
            ),
        ]
        self.fsm = fsm = FSM(reset_state="LENGTH")
        fsm.act("LENGTH",
            If(inp.valid,
                If(~inp.length_ok,
                    ev["bad_length"].eq(1),
                    NextState("DROP"),
                ).Else(
                    routes.sink.valid.eq(1),
                    If(routes.sink.ready,
                        ev["packets"].eq(1),
                        load.eq(1),
                        NextState("DATA"),
                    ),
                ),
            ),
        )
        # A packet ending (last, or its length reached) leaves the stream beats of its carried bytes and its
        # padding, if any; an early last leaves at least one.
        fsm.act("DATA",
            sb.sink.valid.eq(inp.valid),
            sb.sink.data.eq(Cat(carry, data[:kept])),
            inp.ready.eq(sb.sink.ready),
            If(inp.valid & sb.sink.ready,
                sent.eq(1),
                sent_data.eq(1),
                If(inp.last | rem_end,
                    ev["length_errors"].eq(~rem_end | ~inp.last),
                    NextValue(trail, ~inp.last),
                    If(~beats_last, NextState("PAD")).Elif(~inp.last, NextState("DROP")).Else(
                        NextState("LENGTH")),
                ),
            ),
        )
        fsm.act("PAD",
            sb.sink.valid.eq(1),
            sb.sink.data.eq(carry),
            If(sb.sink.ready,
                sent.eq(1),
                If(beats_last, If(trail, NextState("DROP")).Else(NextState("LENGTH"))),
            ),
        )
        fsm.act("DROP",
            inp.ready.eq(1),
            If(inp.valid & inp.last, NextState("LENGTH")),
        )

        # Stage 2: the segment stream's beats through a registered handshake (valid and ready: 1 cycle), then a
        # header before every SEGMENT_BYTES of them, packed into Layer 1 beats.
        self.framer = framer = L2Framer(frame_bits, data_width)
        self.output_skid = skid = SkidBuffer(user_layout(frame_bits))
        beat = Signal(max=seg_beats)
        done = Signal(9)
        seg_end = Signal()
        self.comb += [
            framer.sink.valid.eq(sb.source.valid),
            framer.sink.header.eq(routes.source.route),
            framer.sink.data.eq(sb.source.data),
            framer.sink.last.eq(beat == seg_beats - 1),
            sb.source.ready.eq(framer.sink.ready),
            framer.source.connect(skid.sink),
            skid.source.connect(source),
            seg_end.eq(sb.source.valid & framer.sink.ready & (beat == seg_beats - 1)),
        ]
        self.sync += If(sb.source.valid & framer.sink.ready,
            beat.eq(beat + 1),
            If(beat == seg_beats - 1, beat.eq(0)),
        )
        # Whether the segment is its packet's last, registered: `done` and the route at the FIFO's head change
        # only at the end of a segment, SEGMENT_BYTES / W >= 4 cycles apart, and a route is written before
        # its packet's first beat reaches the framer.
        last_seg = Signal()
        self.comb += If(seg_end,
            ev["segments"].eq(1),
            routes.source.ready.eq(last_seg),
        )
        self.sync += [
            last_seg.eq(done == routes.source.segments - 1),
            If(seg_end, If(last_seg, done.eq(0)).Else(done.eq(done + 1))),
        ]

        add_counters(self, L2_TX_COUNTERS, ev)
        if with_csr:
            add_counter_csrs(self, L2_TX_COUNTERS)


def _cat_fields(*fields):
    """Cat of (signal, width) pairs, LSB first, leaving out zero-width fields (Migen prints a zero-width
    slice as a backward part-select)."""
    return Cat(*[s[:w] for s, w in fields if w])


FREE, OPEN, DONE = 1, 2, 4         # reassembly context states (one-hot: a state's test is one bit)


def _first_index(module, vec, idx, n, sync=None):
    """idx = the lowest i with vec[i] set (unchanged if none), comb or, with `sync` (a condition), registered."""
    statements = [If(vec[i], idx.eq(i)) for i in reversed(range(n))]
    if sync is None:
        module.comb += statements
    else:
        module.sync += If(sync, statements)


def read_plan(module, W, M, length):
    """The packet store's read plan of a packet of `length` bytes (data_width W bytes, memory words of M
    bytes): [(name, signal)] set in `module`: left (stream bytes to read: the prefix and the packet up to
    whole beats), take (the first word's bytes), more (more words follow); and its first two output beats:
    only (the first is the last), en (its byte enables), rest (the bytes after it), rest_last, rest_en (the
    second beat's)."""
    left, take, more = Signal(8 * L2_LENGTH_BYTES + 1), Signal(bits_for(M)), Signal()
    only, en, rest, rest_last = Signal(), Signal(W), Signal(8 * L2_LENGTH_BYTES), Signal()
    module.comb += [
        left.eq(Cat(C(L2_LENGTH_BYTES, log2_int(W)), (length + W - 1)[log2_int(W):])),
        take.eq(Mux(left < M, left, M)),
        more.eq(left > M),
        only.eq(length <= W),
        en.eq(byte_enables(module, length, W)),
        rest.eq(length - W),
        rest_last.eq(length <= 2 * W),
    ]
    return [("left", left), ("take", take), ("more", more), ("only", only), ("en", en), ("rest", rest),
            ("rest_last", rest_last), ("rest_en", byte_enables(module, rest, W))]


class L2UnitParser(LiteXModule):
    """The reassembler's input: Layer 1 beats (sink, user_layout(frame_bits)) into units of L2_PACKET_BYTES
    (one Layer 2 packet), a beat a cycle. A Layer 1 packet that ends early is completed with zero beats, one
    that runs past the unit is truncated (its beats dropped up to `last`): `malformed`.

    `valid`: a beat of the unit is there (a zero beat while completing); `go` (in): it is taken. Per unit:
    `hdr` and `key` (its reply route) registered at beat 0, `hdr_now` the header of the current beat
    (valid at beat 0), `length` (the length prefix, registered at its beat: `length_now` is the value
    registered when `length_load`; `length_raw` the same bytes before the zero beats' fill, `length_zero`:
    the beat is a zero beat, so length_now = 0 if length_zero else length_raw). `body_data` / `body_n`: the bytes of the beat that belong to the segment body (from the length
    prefix on; the bytes from body_n on are zero). Position: `at_decision` (the beat at which the unit's context is decided: key and length
    are registered by then), `start` (beat 0 is taken), `hold` (between beat 0 and the decision).
    """
    def __init__(self, frame_bits):
        P = payload_bytes(frame_bits)
        U = L2_PACKET_BYTES
        nbeats = -(-U // P)
        jd = L2_LENGTH_OFFSET // P                 # beat holding the length prefix
        jk = jd + 1                                # beat of the decision: key and length are registered
        assert L2_HEADER_BYTES <= P and jk < nbeats
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.valid = Signal()
        self.go = go = Signal()
        self.hdr = hdr = Signal(L2_HEADER_BITS)
        self.key = key = Signal(L2_HEADER_BITS)
        self.length = length = Signal(8 * L2_LENGTH_BYTES)
        self.length_now = Signal(8 * L2_LENGTH_BYTES)
        self.length_raw = Signal(8 * L2_LENGTH_BYTES)
        self.length_zero = Signal()
        self.length_load = Signal()
        self.body_data = Signal(8 * P)
        self.body_n = Signal(max=P + 1)
        self.at_decision = at_dec = Signal()
        self.pre_decision = Signal()
        self.start = Signal()
        self.hold = Signal()
        self.first = Signal()
        self.hdr_now = hdr_now = Signal(L2_HEADER_BITS)
        self.events = ev = {"segments": Signal(), "malformed": Signal()}

        # # #

        key_now = Signal(L2_HEADER_BITS)
        beat = Signal(max=nbeats)
        fill = Signal()      # the Layer 1 packet ended early: zero beats complete the unit
        drop = Signal()      # it runs past the unit: its beats are dropped up to `last`
        data = Signal(8 * P)
        self.comb += [
            data.eq(Mux(fill, 0, sink.data)),
            self.valid.eq(fill | (sink.valid & ~drop)),
        ]
        by = _bytes(data, P)
        # Beat 0 is never a fill beat (fill ends with the unit): its header (and the length, when at beat 0)
        # from sink.data, without the fill mux.
        by0 = _bytes(sink.data, P)
        self.comb += [
            hdr_now.eq(Cat(*reversed(by0[:L2_HEADER_BYTES]))),
            reply_route_statements(hdr_now, key_now),
        ]
        # The beat's position flags are registers that move with `beat` (set from the next beat's number), so
        # no compare of the beat counter lies between `go` and the body's byte count (the packer's level).
        next_beat = Signal(max=nbeats)
        self.comb += next_beat.eq(Mux(beat == nbeats - 1, 0, beat + 1))
        at_start, final, past_start, in_hold = Signal(), Signal(), Signal(), Signal()
        flags = [(self.first, lambda b: b == 0), (at_start, lambda b: b == jd), (at_dec, lambda b: b == jk),
                 (self.pre_decision, lambda b: b == jk - 1), (final, lambda b: b == nbeats - 1),
                 (past_start, lambda b: b > jd), (in_hold, lambda b: (b != 0) & (b <= jk))]
        for flag, at in flags:
            flag.reset = Constant(int(at(0)), 1)
            self.sync += If(go, flag.eq(at(next_beat)))
        lo = L2_LENGTH_OFFSET % P
        self.comb += [
            If(at_start,
                self.body_data.eq(data >> 8 * lo),
                self.body_n.eq(P - lo),
            ).Elif(past_start,
                self.body_data.eq(Mux(final, data[:8 * (U - P * (nbeats - 1))], data)),
                self.body_n.eq(Mux(final, U - P * (nbeats - 1), P)),
            ),
            sink.ready.eq(drop | (go & ~fill)),
            self.start.eq(go & self.first),
            self.length_now.eq(Cat(*[(by0 if jd == 0 else by)[(L2_LENGTH_OFFSET + k) % P] for k in (1, 0)])),
            self.length_raw.eq(Cat(*[by0[(L2_LENGTH_OFFSET + k) % P] for k in (1, 0)])),
            self.length_zero.eq(fill if jd else 0),
            self.length_load.eq(go & at_start),
            self.hold.eq((go & self.first) | in_hold),
        ]
        self.sync += [
            If(drop & sink.valid & sink.last, drop.eq(0)),
            If(go,
                If(final, beat.eq(0), fill.eq(0)).Else(beat.eq(beat + 1)),
                If(~fill & sink.last & ~final, fill.eq(1)),
                If(~fill & ~sink.last & final, drop.eq(1)),
                If(self.first, hdr.eq(hdr_now), key.eq(key_now)),
                If(at_start, length.eq(self.length_now)),
            ),
        ]
        self.comb += [
            ev["segments"].eq(go & final),
            ev["malformed"].eq(go & ~fill & (sink.last != final)),
        ]


class L2ContextTable(LiteXModule):
    """The reassembler's contexts and skip entries, and the decision taken for each unit.

    n_sources contexts (FREE -> OPEN while segments arrive -> DONE until delivered) of `slots` segments
    (packets up to max_packet bytes), keyed by the reply route, and n_sources skip entries (key, segments
    left to drop). The key matches (compared in key_form, the skip entries holding that form) of hdr_now
    are registered at beat 0 or, late_match, at the beat before the decision (`pre_decision`) from partial
    matches (MATCH_CHUNK bits each) of its form registered at beat 0 (`beat0`), each register loaded every
    cycle its beat is offered, the last when it is taken; at
    `decide` the unit (key, hdr, length) continues an OPEN context, is skipped, or is a first
    segment that takes a FREE context or is dropped (bad length, too long, none free: its continuation
    segments enter a skip entry). `wait`: a first segment finds no FREE context while one is DONE (which
    frees itself once delivered; that state is registered, so the wait ends one cycle after the context
    is freed). The decision: ctx, seg (segment index), keep (store the body), complete
    (the packet's last segment).
    Timeout: a tick every timeout_cycles / L2_RX_TIMEOUT_STEPS cycles (paused while `stalled`) ages OPEN
    contexts and skip entries; a decision resets its entry's age; an entry L2_RX_TIMEOUT_STEPS + 1 ticks
    old expires, one a cycle, outside `hold` (an OPEN context's key then enters a skip entry).
    `out_beat` / `out_last` / `out_ctx`: a beat of context out_ctx's packet left the reassembler; its last
    one frees the context. `lookup` -> lookup_length, lookup_header, lookup_key: a context's packet
    parameters (for the output). `length_now` / `length_zero` / `length_load`: the length being registered
    (0 if length_zero, else length_now; its checks are registered with it). plan: a function (module,
    length) -> [(name, signal)] of figures of a packet's length (`read_plan`), computed from the registered
    length and registered the cycle after, written to the context a decision allocates the cycle after
    the decision (read only once the packet is complete) and kept per context: lookup_plan[name] (the
    looked up context's).
    """
    MATCH_CHUNK = 4     # bits of a registered partial key match (late_match)

    def __init__(self, n_sources, slots, max_packet, plan=None, late_match=False):
        n = n_sources
        cb = bits_for(n - 1)
        self.hdr_now = hdr_now = Signal(L2_HEADER_BITS)
        self.key = key = Signal(L2_HEADER_BITS)
        self.hdr = hdr = Signal(L2_HEADER_BITS)
        self.length = length = Signal(8 * L2_LENGTH_BYTES)
        self.length_now = length_now = Signal(8 * L2_LENGTH_BYTES)
        self.length_zero = length_zero = Signal()
        self.length_load = Signal()
        self.start = Signal()
        self.decide = dec = Signal()
        self.beat0 = Signal()
        self.pre_decision = Signal()
        self.at_decision = Signal()
        self.hold = hold = Signal()
        self.stalled = Signal()
        self.timeout_cycles = Signal(L2_RX_TIMEOUT_BITS)
        self.wait = wait = Signal()
        self.ctx = Signal(cb)
        self.seg = Signal(max(log2_int(slots), 1))
        self.keep = Signal()
        self.complete = complete = Signal()
        self.out_beat = Signal()
        self.out_last = Signal()
        self.out_ctx = Signal(cb)
        self.lookup = Signal(cb)
        self.lookup_length = Signal(8 * L2_LENGTH_BYTES)
        self.lookup_header = Signal(L2_HEADER_BITS)
        self.lookup_key = Signal(L2_HEADER_BITS)
        self.events = ev = {name: Signal() for name in ("packets", "bad_length", "no_context", "too_long", "orphans",
                                                        "untracked", "timeouts")}

        # # #

        st = Array(Signal(3, reset=FREE, name=f"ctx{i}_state") for i in range(n))
        c_key = Array(Signal(L2_HEADER_BITS, name=f"ctx{i}_key") for i in range(n))
        c_hdr = Array(Signal(L2_HEADER_BITS, name=f"ctx{i}_header") for i in range(n))
        c_len = Array(Signal(8 * L2_LENGTH_BYTES, name=f"ctx{i}_length") for i in range(n))
        c_seg = Array(Signal(max=slots + 1, name=f"ctx{i}_segment") for i in range(n))
        c_left = Array(Signal(8, name=f"ctx{i}_left") for i in range(n))    # segments to come
        c_fin = Array(Signal(name=f"ctx{i}_final") for i in range(n))      # c_left == 1 (while OPEN)
        s_on = Array(Signal(name=f"skip{i}_valid") for i in range(n))
        s_key = Array(Signal(len(key_form(hdr)), name=f"skip{i}_key") for i in range(n))     # key_form
        c_form = Array(Signal(len(key_form(hdr)), name=f"ctx{i}_form") for i in range(n))    # key_form(c_hdr)
        form = Signal(len(key_form(hdr)))           # key_form(hdr), registered with it (at `start`)
        s_left = Array(Signal(8, name=f"skip{i}_left") for i in range(n))
        s_one = Array(Signal(name=f"skip{i}_one") for i in range(n))       # s_left == 1

        # Key matches are registered at the beat before the decision (`pre_decision`: in every cycle that beat
        # is offered, the last time when it is taken, so the handshake is not their enable), from the form
        # registered at beat 0 (`beat0`, likewise) when that is a later beat, else from the header's form at
        # beat 0: open contexts and skip entries change only at decisions and timeouts, which never fall
        # between a unit's beat 0 being taken and its decision; free/DONE states are taken live.
        hit_now, s_hit_now = Signal(n), Signal(n)
        form_now = Signal(len(key_form(hdr_now)))
        free, closed, s_free = Signal(n), Signal(n), Signal(n)
        hit_i, free_i, s_free_i = Signal(cb), Signal(cb), Signal(cb)
        self.comb += [
            form_now.eq(key_form(hdr_now)),
            free.eq(Cat(*[st[i][0] for i in range(n)])),
            closed.eq(Cat(*[st[i][2] for i in range(n)])),
            s_free.eq(~Cat(*s_on)),
        ]
        if late_match:
            # The key compares split in MATCH_CHUNK-bit partial matches of the header's form, registered at
            # beat 0 (`beat0`, each cycle the beat is offered, the last when it is taken): the entries' keys
            # do not change from then to the decision, as the states above; at the beat before the decision
            # the registered partial matches and the live states make the matches.
            fw = len(form_now)
            chunks = [(a, min(a + self.MATCH_CHUNK, fw)) for a in range(0, fw, self.MATCH_CHUNK)]
            c_part = [Signal(len(chunks), name=f"ctx{i}_match") for i in range(n)]
            s_part = [Signal(len(chunks), name=f"skip{i}_match") for i in range(n)]
            self.sync += If(self.beat0,
                [c_part[i].eq(Cat(*[c_form[i][a:b] == form_now[a:b] for a, b in chunks])) for i in range(n)],
                [s_part[i].eq(Cat(*[s_key[i][a:b] == form_now[a:b] for a, b in chunks])) for i in range(n)],
            )
            self.comb += [
                hit_now.eq(Cat(*[st[i][1] & (c_part[i] == 2**len(chunks) - 1) for i in range(n)])),
                s_hit_now.eq(Cat(*[s_on[i] & (s_part[i] == 2**len(chunks) - 1) for i in range(n)])),
            ]
        else:
            self.comb += [
                hit_now.eq(Cat(*[st[i][1] & (c_form[i] == form_now) for i in range(n)])),
                s_hit_now.eq(Cat(*[s_on[i] & (s_key[i] == form_now) for i in range(n)])),
            ]
        _first_index(self, hit_now, hit_i, n, sync=self.pre_decision)
        # the first matches one-hot too: each entry's update at the decision is enabled by its bit (no read
        # multiplexer before the update's logic)
        hit_oh, s_hit_oh = Signal(n), Signal(n)
        self.sync += If(self.pre_decision, [oh[i].eq(vec[i] & (vec[:i] == 0) if i else vec[i])
                                            for oh, vec in ((hit_oh, hit_now), (s_hit_oh, s_hit_now)) for i in range(n)])
        for vec, idx in ((free, free_i), (s_free, s_free_i)):
            _first_index(self, vec, idx, n)
        # The unit's case, registered with the matches: it continues an open context, is skipped, or is a first
        # segment.
        cont, skip, first = Signal(), Signal(), Signal()
        self.sync += If(self.beat0, form.eq(form_now))
        self.sync += If(self.pre_decision,
            cont.eq(hit_now != 0),
            skip.eq((hit_now == 0) & (s_hit_now != 0)),
            first.eq((hit_now == 0) & (s_hit_now == 0)),
        )

        bad_len, too_long, no_ctx, alloc, to_skip = (Signal() for _ in range(5))
        len_bad, len_long = Signal(), Signal()      # `length`'s checks, registered with it
        len_multi, len_fin = Signal(), Signal()         # more than one segment, at most two
        len_skip = Signal(8)                            # segments after the first
        # The plan, from the registered length, registered in the cycle after (`len_plan`), is written to the
        # context allocated at a decision in the cycle after it (read only once the packet is complete).
        plan_now = plan(self, length) if plan else []
        len_plan = [Signal(len(sig), name=f"len_{name}") for name, sig in plan_now]
        c_plan = [Array(Signal(len(sig), name=f"ctx{i}_{name}") for i in range(n)) for name, sig in plan_now]
        plan_we, plan_ctx = Signal(), Signal(cb)
        self.lookup_plan = {}
        for (name, sig), reg, arr in zip(plan_now, len_plan, c_plan):
            self.lookup_plan[name] = Signal(len(sig), name=f"lookup_{name}")
            self.comb += self.lookup_plan[name].eq(arr[self.lookup])
            self.sync += [reg.eq(sig), If(plan_we, arr[plan_ctx].eq(reg))]
        # The checks of a zero length (a zero beat completing a short Layer 1 packet) are constants: the
        # zero case does not lie between the beat's bytes and the carry chains.
        self.sync += If(self.length_load,
            If(length_zero,
                len_bad.eq(1), len_long.eq(0), len_multi.eq(0), len_fin.eq(1), len_skip.eq(0),
            ).Else(
                len_bad.eq((length_now == 0) | (length_now > L2_MAX_PACKET_BYTES)),
                len_long.eq(length_now > max_packet),
                # from the length itself, the stream (length + prefix) not summed first: one carry chain each
                len_multi.eq(length_now > SEGMENT_BYTES - L2_LENGTH_BYTES),       # stream > SEGMENT_BYTES
                len_fin.eq(length_now <= 2 * SEGMENT_BYTES - L2_LENGTH_BYTES),    # stream <= 2 SEGMENT_BYTES
                len_skip.eq((length_now + L2_LENGTH_BYTES - 1) >> 8),             # ceil(stream / SEGMENT_BYTES) - 1
            ),
        )
        # `busy` (no FREE context, one DONE), registered: a cycle late, but between decisions states only
        # leave OPEN and DONE (expiry, delivery), so a stale `busy` can only hold a unit one cycle longer, never
        # let it pass while every context is busy (and the cycle before a decision beat has no decision).
        busy = Signal()
        self.sync += busy.eq((free == 0) & (closed != 0))
        self.comb += [
            bad_len.eq(first & len_bad),
            too_long.eq(first & ~bad_len & len_long),
            wait.eq(first & ~len_bad & ~len_long & busy),
            no_ctx.eq(first & ~bad_len & ~too_long & (free == 0) & (closed == 0)),
            alloc.eq(first & ~bad_len & ~too_long & (free != 0)),
            to_skip.eq((too_long | no_ctx) & len_multi),
            complete.eq(Mux(cont, c_fin[hit_i], ~len_multi)),
            self.ctx.eq(Mux(cont, hit_i, free_i)),
            self.seg.eq(Mux(cont, c_seg[hit_i], 0)),
            self.keep.eq(cont | alloc),
        ]

        # Idle timeout: a shared tick every timeout / L2_RX_TIMEOUT_STEPS cycles (paused while the sink is
        # stalled by the reassembler) ages OPEN contexts and skip entries; a segment's decision resets its
        # entry's age. An entry aged L2_RX_TIMEOUT_STEPS + 1 ticks expires, one context a cycle, outside the
        # window between a unit's beat 0 (key matches registered) and its decision.
        age_max = L2_RX_TIMEOUT_STEPS + 1
        tb = log2_int(L2_RX_TIMEOUT_STEPS)
        c_age = Array(Signal(max=age_max + 1, name=f"ctx{i}_age") for i in range(n))
        s_age = Array(Signal(max=age_max + 1, name=f"skip{i}_age") for i in range(n))
        c_aged = Array(Signal(name=f"ctx{i}_aged") for i in range(n))      # c_age == age_max
        s_aged = Array(Signal(name=f"skip{i}_aged") for i in range(n))     # s_age == age_max
        prescale = Signal(L2_RX_TIMEOUT_BITS - tb)
        tick, expire = Signal(), Signal()
        old, s_old = Signal(n), Signal(n)
        old_i = Signal(cb)
        self.comb += [
            old.eq(Cat(*[st[i][1] & c_aged[i] for i in range(n)])),
            s_old.eq(Cat(*[s_on[i] & s_aged[i] for i in range(n)])),
            expire.eq(~hold & (old != 0)),
        ]
        _first_index(self, old, old_i, n)
        self.sync += [
            If(~self.stalled,
                If(prescale + 1 >= self.timeout_cycles[tb:], prescale.eq(0), tick.eq(1)).Else(
                    prescale.eq(prescale + 1), tick.eq(0)),
            ).Else(tick.eq(0)),
            [If(tick & ~c_aged[i], c_age[i].eq(c_age[i] + 1), c_aged[i].eq(c_age[i] == age_max - 1))
             for i in range(n)],
            [If(tick & ~s_aged[i], s_age[i].eq(s_age[i] + 1), s_aged[i].eq(s_age[i] == age_max - 1))
             for i in range(n)],
            [If(~hold & s_old[i], s_on[i].eq(0)) for i in range(n)],
            If(expire,
                st[old_i].eq(FREE),
                If(s_free != 0, s_on[s_free_i].eq(1)),
            ),
        ]
        # The fields of the first free context and of the first free skip entry are written every cycle with
        # what an allocation (or a skip entry's creation) at this cycle would put there: a free entry's fields
        # are never read, so only the state (and the skip entry's valid flag) waits for the decision, and
        # the decision's fan-out is that of the state bits. A skip entry is created at a decision (the unit's
        # key) or by an expiry (the expired context's), never both in a cycle (no expiry during `hold`).
        self.sync += [
            If(free != 0,
                c_age[free_i].eq(0), c_aged[free_i].eq(0),
                c_key[free_i].eq(key),
                c_hdr[free_i].eq(hdr),
                c_form[free_i].eq(form),
                c_len[free_i].eq(length),
                c_seg[free_i].eq(1),
                c_left[free_i].eq(len_skip),
                c_fin[free_i].eq(len_fin),
            ),
            If(s_free != 0,
                If(self.at_decision,
                    s_key[s_free_i].eq(form),
                    s_left[s_free_i].eq(len_skip),
                    s_one[s_free_i].eq(len_fin),
                ).Else(
                    s_key[s_free_i].eq(c_form[old_i]),
                    s_left[s_free_i].eq(c_left[old_i]),
                    s_one[s_free_i].eq(c_fin[old_i]),
                ),
                s_age[s_free_i].eq(0), s_aged[s_free_i].eq(0),
            ),
        ]
        self.sync += [
            plan_we.eq(dec & alloc),
            plan_ctx.eq(free_i),
            If(dec,
                [If(cont & hit_oh[i],
                    c_age[i].eq(0), c_aged[i].eq(0),
                    c_seg[i].eq(c_seg[i] + 1),
                    c_left[i].eq(c_left[i] - 1),
                    c_fin[i].eq(c_left[i] <= 2),
                    If(c_fin[i], st[i].eq(DONE)),         # complete
                ) for i in range(n)],
                If(alloc, st[free_i].eq(Mux(complete, DONE, OPEN))),
                [If(skip & s_hit_oh[i],
                    s_age[i].eq(0), s_aged[i].eq(0),
                    s_left[i].eq(s_left[i] - 1),
                    s_one[i].eq(s_left[i] == 2),
                    If(s_one[i], s_on[i].eq(0)),
                ) for i in range(n)],
                If(to_skip & (s_free != 0), s_on[s_free_i].eq(1)),
            ),
            If(self.out_beat, If(self.out_last, st[self.out_ctx].eq(FREE))),
        ]
        self.comb += [
            self.lookup_length.eq(c_len[self.lookup]),
            self.lookup_header.eq(c_hdr[self.lookup]),
            self.lookup_key.eq(c_key[self.lookup]),
            ev["packets"].eq(dec & alloc),
            ev["bad_length"].eq(dec & bad_len),
            ev["no_context"].eq(dec & no_ctx),
            ev["too_long"].eq(dec & too_long),
            ev["orphans"].eq(dec & skip),
            ev["untracked"].eq(((dec & to_skip) | expire) & (s_free == 0)),
            ev["timeouts"].eq(expire),
        ]


class L2PacketStore(LiteXModule):
    """The reassembler's packet memory: segment bodies in, whole packets out, in completion order.

    units (sink): one entry a unit, in unit order: ctx, seg (segment index in the context), keep (store
    the body, else drop it), complete (the packet's last segment). words (sink, always ready): the units'
    bodies, SEGMENT_BYTES / M words of M bytes each; segment k of context c is stored at (c, k).
    The words of complete packets are read back to back into a packer that drops the 2-byte length
    prefix and cuts data_width beats (source: l2_data_layout(data_width) with L2_RX_PARAMS; a packet is
    read up to a whole number of beats, the bytes past its end masked). `lookup` (out) -> length, header,
    reply (in): the parameters of the next packet's context. `out_beat` / `out_last` / `out_ctx`: a beat left on
    source, whether it was its packet's last, and its context. The memory is a `BlockRAM` (on ECP5 the
    DP16KD's output register holds the read word); skid registers (no cycle added) after the output packer
    and after the complete-packet FIFO keep the output's handshake off the read pipeline's enable and the
    FIFO's read. planned: the next packet's read plan
    (`read_plan` of its length) is an input too, `plan` (name -> signal), else it is computed from `length`.
    """
    def __init__(self, data_width, n_sources, slots, word_bytes, planned=False):
        W, M = data_width // 8, word_bytes
        n = n_sources
        cb = bits_for(n - 1)
        WPS = SEGMENT_BYTES // M                   # words per segment
        lw, ls = log2_int(WPS), log2_int(slots)
        self.units = stream.Endpoint([("ctx", cb), ("seg", max(ls, 1)), ("keep", 1), ("complete", 1)])
        self.words = words = stream.Endpoint([("data", 8 * M)])
        self.source = source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))
        self.lookup = Signal(cb)
        self.length = Signal(8 * L2_LENGTH_BYTES)
        self.header = Signal(L2_HEADER_BITS)
        self.reply = Signal(L2_HEADER_BITS)
        self.out_beat = Signal()
        self.out_last = Signal()
        self.out_ctx = Signal(cb)
        self.events = ev = {"delivered": Signal()}

        # # #

        # Writing: one word a cycle at (context, segment, word).
        self.unit_fifo = units = stream.SyncFIFO(self.units.description, 4)
        # The read data leaves through two registers (BlockRAM: the block RAM's own, lowered on ECP5 to the
        # DP16KD's address and output registers), enabled by `advance`. A word is read only once its packet is
        # complete and its context is written again only after the packet has left: a read never meets a
        # write to its address (other reads, of unused data, may).
        ram_re = Signal()
        self.ram = ram = BlockRAM(8 * M, n * slots * WPS, re=ram_re)
        self.done = done = stream.SyncFIFO([("ctx", cb)], max(n, 2))      # complete packets, in order
        wword = Signal(max(lw, 1))
        unit_end = Signal()
        self.comb += [
            self.units.connect(units.sink),
            words.ready.eq(1),
            unit_end.eq(wword == WPS - 1),
            ram.adr_w.eq(_cat_fields((wword, lw), (units.source.seg, ls), (units.source.ctx, cb))),
            ram.dat_w.eq(words.data),
            ram.we.eq(words.valid & units.source.valid & units.source.keep),
            units.source.ready.eq(words.valid & unit_end),
            done.sink.valid.eq(words.valid & unit_end & units.source.valid & units.source.keep &
                               units.source.complete),
            done.sink.ctx.eq(units.source.ctx),
        ]
        self.sync += If(words.valid, wword.eq(Mux(unit_end, 0, wword + 1)))

        # Reading: the words of complete packets back to back (the first word of a packet in the cycle its
        # context leaves `next`), registered after the block RAM (its output is slow: 1 cycle), then its prefix
        # dropped and its bytes past the packet masked (1 cycle), into a packer that cuts data_width beats.
        # Beside the parameters, each packet's first two output beats decided ahead (computed from `next`'s
        # registers): whether each is the packet's last, their byte enables, the bytes left after the first.
        self.params = params = stream.SyncFIFO([("ctx", cb)] + L2_RX_PARAMS + [
            ("only", 1), ("en", W), ("rest", 8 * L2_LENGTH_BYTES), ("rest_last", 1), ("rest_en", W)], 4)
        self.out_packer = op = BytePacker(M, W, sizes=(W,), clean=True, ahead=True)
        nb = 8 * L2_LENGTH_BYTES + 1
        # The next complete packet registered with its parameters and read plan (1 cycle): stream bytes to
        # read (the prefix and the packet up to whole beats), the first word's bytes, more words to come.
        # Between them a skid buffer (a registered ready, no cycle added): the read's handshake (from the output's
        # ready through the packers) stops at it, before the FIFO's read.
        self.done_skid = skid = stream.PipeReady([("ctx", cb)])
        self.next = nx = stream.Buffer([("ctx", cb)] + L2_RX_PARAMS + [
            ("left", nb), ("take", bits_for(M)), ("more", 1), ("only", 1), ("en", W), ("rest", 8 * L2_LENGTH_BYTES),
            ("rest_last", 1), ("rest_en", W)], pipe_valid=True)
        if planned:
            self.plan = {name: Signal(len(sig), name=f"plan_{name}") for name, sig in read_plan(LiteXModule(), W, M,
                                                                                             self.length)}
        else:
            self.plan = dict(read_plan(self, W, M, self.length))
        self.comb += [
            done.source.connect(skid.sink),
            self.lookup.eq(skid.source.ctx),
            nx.sink.valid.eq(skid.source.valid),
            skid.source.ready.eq(nx.sink.ready),
            nx.sink.ctx.eq(skid.source.ctx),
            nx.sink.length.eq(self.length),
            nx.sink.header.eq(self.header),
            nx.sink.reply.eq(self.reply),
            [getattr(nx.sink, name).eq(sig) for name, sig in self.plan.items()],
        ]
        # The packet being read: its next word and what is left, with the next word's bytes (min(left, M))
        # and whether more words follow (left > M) registered beside it.
        f_active = Signal()
        f_ctx = Signal(cb)
        f_word = Signal(max(lw + ls, 1))
        f_left = Signal(nb)                                    # stream bytes of the packet not yet read
        f_take = Signal(max=M + 1)
        f_more = Signal()
        r_ctx = Signal(cb)
        r_word = Signal(max(lw + ls, 1))
        r_left = Signal(nb)
        r_take = Signal(max=M + 1)
        r_more = Signal()
        can, advance, issue = Signal(), Signal(), Signal()
        # params.sink.ready (its level is not its depth) as a register of its own, updated with the level
        p_room = Signal(reset=1)
        self.sync += p_room.eq(Mux(params.source.valid & params.source.ready, 1,
                                   Mux(params.sink.valid & params.sink.ready, params.level != params.depth - 1,
                                       params.level != params.depth)))
        pend, pend_first = Signal(), Signal()      # a word is read (block-RAM output)
        pend_n = Signal(max=M + 1)
        raw, raw_valid, raw_first = ram.dat_r, Signal(), Signal()   # the word (the block RAM's output register)
        raw_n = Signal(max=M + 1)
        word, word_n = Signal(8 * M), Signal(max=M + 1)  # then its prefix dropped, the bytes past n zeroed
        word_valid = Signal()
        self.comb += [
            r_ctx.eq(Mux(f_active, f_ctx, nx.source.ctx)),
            r_word.eq(Mux(f_active, f_word, 0)),
            r_left.eq(Mux(f_active, f_left, nx.source.left)),
            r_take.eq(Mux(f_active, f_take, nx.source.take)),
            r_more.eq(Mux(f_active, f_more, nx.source.more)),
            can.eq(f_active | (nx.source.valid & p_room)),
            advance.eq(~word_valid | op.sink.ready),
            issue.eq(advance & can),
            ram_re.eq(advance),
            ram.adr_r.eq(_cat_fields((r_word, lw + ls), (r_ctx, cb))),
            nx.source.ready.eq(issue & ~f_active),
            params.sink.valid.eq(issue & ~f_active),
            params.sink.ctx.eq(nx.source.ctx),
            params.sink.length.eq(nx.source.length),
            params.sink.header.eq(nx.source.header),
            params.sink.reply.eq(nx.source.reply),
            [getattr(params.sink, name).eq(getattr(nx.source, name))
             for name in ("only", "en", "rest", "rest_last", "rest_en")],
            op.sink.valid.eq(word_valid),
            op.sink.data.eq(word),
            op.sink.n.eq(word_n),
        ]
        self.sync += [
            If(advance,
                word_valid.eq(raw_valid),
                word.eq(Mux(raw_first, raw >> 8 * L2_LENGTH_BYTES, raw) & byte_mask(self, raw_n, M)),
                word_n.eq(raw_n),
                raw_valid.eq(pend),
                raw_first.eq(pend_first),
                raw_n.eq(pend_n),
                pend.eq(issue),
                pend_first.eq(~f_active),
                pend_n.eq(r_take - Mux(f_active, 0, L2_LENGTH_BYTES)),
            ),
            If(issue,
                f_active.eq(r_more),
                f_ctx.eq(r_ctx),
                f_word.eq(r_word + 1),
                # read on only if r_more (left > M, so take = M): from r_left, no compare after a subtraction
                f_left.eq(r_left - M),
                f_take.eq(Mux(r_left < 2 * M, r_left - M, M)),
                f_more.eq(r_left > 2 * M),
            ),
        ]

        # Output: beats of W bytes, the packet's last one holding the rest of its length. Each packet is
        # read up to a whole number of beats, so the packer's beat size is constant (no size -> valid ->
        # shifter chain); the bytes after the packet's end are masked. The last beat frees the context.
        # The beat's last flag and byte enables are registered a beat ahead (from the parameter FIFO for a
        # packet's first two beats): the remaining-byte compares are off the output path.
        started = Signal()
        out_rem = Signal(8 * L2_LENGTH_BYTES)                  # bytes left from the current beat on
        rem_last, rem_en = Signal(), Signal(W)
        en = Signal(W)
        # params.source.valid (its level is not 0) as a register of its own, updated with the level: no decode
        # of the level on the output's handshake
        p_any = Signal()
        self.sync += p_any.eq(Mux(params.sink.valid & params.sink.ready, 1,
                                  Mux(params.source.valid & params.source.ready, params.level != 1, params.level != 0)))
        # A skid register after the packer: a beat the output refuses is kept there, so the packer's handshake
        # (and behind it the read pipeline's) is registers' (no cycle added).
        sk_valid, sk_data, out_ready = Signal(), Signal(8 * W), Signal()
        self.sync += [
            If(~sk_valid, sk_data.eq(op.source.data)),
            sk_valid.eq(Mux(sk_valid, ~out_ready, op.source.valid & ~out_ready)),
        ]
        self.comb += [
            source.last.eq(Mux(started, rem_last, params.source.only)),
            en.eq(Mux(started, rem_en, params.source.en)),
            op.size.eq(W),
            out_ready.eq(source.ready & p_any),
            source.valid.eq((sk_valid | op.source.valid) & p_any),
            source.data.eq(Mux(sk_valid, sk_data, op.source.data) & Cat(*[Replicate(en[k], 8) for k in range(W)])),
            source.length.eq(params.source.length),
            source.header.eq(params.source.header),
            source.reply.eq(params.source.reply),
            op.source.ready.eq(~sk_valid),
            params.source.ready.eq(source.valid & source.ready & source.last),
            self.out_beat.eq(source.valid & source.ready),
            self.out_last.eq(source.last),
            self.out_ctx.eq(params.source.ctx),
            ev["delivered"].eq(params.source.ready),
        ]
        self.sync += If(source.valid & source.ready,
            started.eq(~source.last),
            If(started,
                out_rem.eq(out_rem - W),
                rem_last.eq(out_rem <= 2 * W),
                rem_en.eq(byte_enables(self, out_rem - W, W)),
            ).Else(
                out_rem.eq(params.source.rest),
                rem_last.eq(params.source.rest_last),
                rem_en.eq(params.source.rest_en),
            ),
        )


class L2Reassembler(LiteXModule):
    """Layer 2 reassembly per source: Layer 2 packets in (from RIFLEndpoint.source), upper-layer packets out.

    sink: user_layout(frame_bits) with `last`, one L2 packet per Layer 1 packet. source: `data` beats of
    data_width bits (full except the last), params `length`, `header` (as received in the first segment)
    and `reply` (its reply route, cores.rifl.common.reply_route, computed in gateware).

    Segments of different sources may arrive interleaved (behind a switch); those of one source arrive in
    order. `n_sources` contexts (1..L2_RX_CONTEXTS_MAX) are keyed by the reply route of the received
    header: a segment whose key has an open context continues its packet, any other segment starts one
    (its length prefix is read) and takes a free context. Each context owns a block-RAM region of
    max_packet (1..L2_MAX_PACKET_BYTES) bytes rounded up to a power of two of segments, where segment k
    of a packet is stored at k * SEGMENT_BYTES; a context is freed when its packet has left on source.
    Complete packets leave whole, in completion order, one after the other (store and forward per packet).

    A first segment finding no free context waits (back-pressure) while a complete packet holds one,
    since that context frees itself once the packet has left; if every context is still assembling it
    is dropped (`no_context`), as one longer than max_packet (`too_long`), and its key is entered in one
    of n_sources skip entries, which drop its continuation segments (`orphans`); with every skip entry
    busy too the drop is counted in `untracked`. A first segment with length 0 or too large is dropped
    (`bad_length`). A Layer 1 packet shorter than L2_PACKET_BYTES is completed with zeros, a longer one
    truncated (`malformed`).
    Timeout: a context assembling a packet (OPEN) that gets no segment for more than `timeout` cycles
    (at most (1 + 1/L2_RX_TIMEOUT_STEPS) x `timeout`; cycles with the sink stalled by the reassembler
    do not count, each taken out a cycle later: the pause is registered) is freed, its partial packet discarded (`timeouts`), and its key entered in a skip
    entry for its remaining segments, so late continuations are dropped (`orphans`); a skip entry idle
    as long frees itself too, so a source silent for 2.5 x `timeout` starts afresh. `timeout`: multiple
    of L2_RX_TIMEOUT_STEPS in [2 L2_RX_TIMEOUT_STEPS, 2^L2_RX_TIMEOUT_BITS), run-time CSR `timeout` if with_csr.
    Throughput: one Layer 1 beat a cycle on sink; on source one beat a cycle within a packet and at most
    one idle cycle between packets (the packet's words are read from the 2-byte length prefix on, up to
    a whole number of beats), so with data_width >= 8 * payload bytes a segment leaves in no more cycles
    than its Layer 1 packet took to arrive. Latency: a packet's first beat leaves 8 cycles after its last
    Layer 1 beat (F = 256; 7 at F = 128), 3 of them the read pipeline's: the next packet's read plan, the
    block RAM's output and the word's prefix drop and mask, each registered.
    Submodules: parser (L2UnitParser), contexts (L2ContextTable), body_packer (BytePacker), store
    (L2PacketStore).
    """
    def __init__(self, frame_bits=256, data_width=64, n_sources=L2_RX_CONTEXTS, max_packet=L2_MAX_PACKET_BYTES,
                 timeout=L2_RX_TIMEOUT, with_csr=False):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        if not isinstance(n_sources, int) or not 1 <= n_sources <= L2_RX_CONTEXTS_MAX:
            raise ValueError(f"n_sources must be an integer in [1, {L2_RX_CONTEXTS_MAX}], got {n_sources!r}")
        if not isinstance(max_packet, int) or not 1 <= max_packet <= L2_MAX_PACKET_BYTES:
            raise ValueError(f"max_packet must be an integer in [1, {L2_MAX_PACKET_BYTES}], got {max_packet!r}")
        if not isinstance(timeout, int) or timeout % L2_RX_TIMEOUT_STEPS or \
                not 2 * L2_RX_TIMEOUT_STEPS <= timeout < 2**L2_RX_TIMEOUT_BITS:
            raise ValueError(f"timeout must be a multiple of {L2_RX_TIMEOUT_STEPS} in [{2 * L2_RX_TIMEOUT_STEPS}, "
                             f"2**{L2_RX_TIMEOUT_BITS}), got {timeout!r}")
        W = data_width // 8
        P = payload_bytes(frame_bits)
        M = max(W, 1 << (P - 1).bit_length())      # memory word bytes: >= P, divides SEGMENT_BYTES
        S = 1 << (l2_segments(max_packet) - 1).bit_length()    # segment slots per context
        self.n_sources, self.max_packet, self.timeout = n_sources, max_packet, timeout
        self.memory_bytes = n_sources * S * SEGMENT_BYTES
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.source = source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))
        if with_csr:
            self._timeout = CSRStorage(fields=[CSRField("cycles", size=L2_RX_TIMEOUT_BITS, reset=timeout,
                description="Idle timeout of an assembling context or skip entry, in cycles (a multiple of "
                            f"{L2_RX_TIMEOUT_STEPS}: the low bits are ignored).")])

        # # #

        # Layer 1 beats -> units; each unit's context decided at its decision beat, before its first body word
        # leaves the body packer (segment bodies: length prefix, packet, padding, SEGMENT_BYTES each, packed
        # into M-byte words); the words go to the packet store.
        self.parser = inp = L2UnitParser(frame_bits)
        self.contexts = ctxs = L2ContextTable(n_sources, S, max_packet, plan=lambda m, length: read_plan(m, W, M, length),
                                              late_match=L2_LENGTH_OFFSET // P >= 1)
        self.body_packer = wp = BytePacker(P, M, sizes=(M,), clean=True, ahead=True)
        self.store = store = L2PacketStore(data_width, n_sources, S, M, planned=True)
        # the timeout's pause, registered (a cycle late): the sink's handshake does not reach the prescaler
        stalled = Signal()
        self.sync += stalled.eq(sink.valid & ~sink.ready)
        self.comb += [
            sink.connect(inp.sink),
            [getattr(ctxs, name).eq(getattr(inp, name))
             for name in ("hdr_now", "key", "hdr", "length", "length_zero", "length_load", "start",
                          "hold", "at_decision")],
            ctxs.length_now.eq(inp.length_raw),
            ctxs.beat0.eq(inp.first),
            ctxs.pre_decision.eq(inp.pre_decision),
            ctxs.decide.eq(inp.go & inp.at_decision),
            ctxs.stalled.eq(stalled),
            ctxs.timeout_cycles.eq(self._timeout.storage if with_csr else C(timeout, L2_RX_TIMEOUT_BITS)),
            wp.size.eq(M),
            wp.sink.data.eq(inp.body_data),
            wp.sink.n.eq(inp.body_n),
            wp.sink.valid.eq(inp.valid & (~inp.at_decision | (store.units.ready & ~ctxs.wait))),
            store.units.valid.eq(inp.valid & inp.at_decision & wp.sink.ready & ~ctxs.wait),
            store.units.ctx.eq(ctxs.ctx),
            store.units.seg.eq(ctxs.seg),
            store.units.keep.eq(ctxs.keep),
            store.units.complete.eq(ctxs.complete),
            inp.go.eq(wp.sink.valid & wp.sink.ready),
            wp.source.connect(store.words),
            ctxs.lookup.eq(store.lookup),
            store.length.eq(ctxs.lookup_length),
            store.header.eq(ctxs.lookup_header),
            store.reply.eq(ctxs.lookup_key),
            [store.plan[name].eq(sig) for name, sig in ctxs.lookup_plan.items()],
            [getattr(ctxs, name).eq(getattr(store, name)) for name in ("out_beat", "out_last", "out_ctx")],
            store.source.connect(source),
        ]
        add_counters(self, L2_RX_COUNTERS, {**inp.events, **ctxs.events, **store.events})
        if with_csr:
            add_counter_csrs(self, L2_RX_COUNTERS)

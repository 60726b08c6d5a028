"""RIFL Layer 2 transmit side: the segmenter (upper-layer packets into Layer 2 packets)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.buffers import RegisteredBuffer, SkidBuffer
from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import (
    L2_HEADER_BITS, L2_LENGTH_BYTES, L2_MAX_PACKET_BYTES, L2_TX_COUNTERS, L2_TX_PARAMS, SEGMENT_BYTES,
    check_frame_bits, check_l2_data_width, l2_data_layout, user_layout)
from cores.rifl.l2.pack import L2Framer, beat_figures


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
        self.source = stream.Endpoint(user_layout(frame_bits))
        ev = {name: Signal() for name, _ in L2_TX_COUNTERS}

        # # #

        inp = self._input_stage(sink, data_width)
        self._segment_stream(inp, W, ev)
        self._framing(frame_bits, data_width, W, ev)
        add_counters(self, L2_TX_COUNTERS, ev)
        if with_csr:
            add_counter_csrs(self, L2_TX_COUNTERS)

    def _input_stage(self, sink, data_width):
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
        return ib.source

    def _segment_stream(self, inp, W, ev):
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

    def _framing(self, frame_bits, data_width, W, ev):
        routes, sb, source = self.routes, self.stream_buffer, self.source
        seg_beats = SEGMENT_BYTES // W
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

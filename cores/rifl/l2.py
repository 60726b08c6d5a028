"""RIFL Layer 2 endpoint in gateware: segmentation of upper-layer packets into Layer 2 packets (header +
256-byte segment, one Layer 1 packet each) and reassembly, bit-exact with software/rifl/l2.py."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStatus

from cores.rifl.common import (
    L2_FIRST_DATA_OFFSET, L2_HEADER_BITS, L2_HEADER_BYTES, L2_LENGTH_BYTES, L2_LENGTH_OFFSET,
    L2_MAX_PACKET_BYTES, L2_PACKET_BYTES, L2_RX_PARAMS, L2_TX_PARAMS, MAX_HOPS, SEGMENT_BYTES,
    check_frame_bits, check_l2_data_width, l2_data_layout, payload_bytes, user_layout)

TX_COUNTERS = [
    ("packets", "upper-layer packets segmented"),
    ("segments", "Layer 2 packets (segments) sent"),
    ("bad_length", "packets dropped: length 0 or above L2_MAX_PACKET_BYTES"),
    ("length_errors", "packets whose `last` disagreed with `length` (zero-padded or truncated to length)"),
]
RX_COUNTERS = [
    ("packets", "upper-layer packets started (first segments)"),
    ("segments", "Layer 2 packets (segments) received"),
    ("bad_length", "first segments dropped: length prefix 0 or above L2_MAX_PACKET_BYTES"),
    ("malformed", "Layer 1 packets not L2_PACKET_BYTES long (completed with zeros or truncated)"),
    ("interleaved", "continuation segments whose header differs from their packet's first segment"),
]


def _bytes(value, n):
    return [value[8 * k:8 * k + 8] for k in range(n)]


def _header_bytes(header):
    """The header's bytes in sending order (the first byte holds total | remain)."""
    return [header[8 * (L2_HEADER_BYTES - 1 - k):8 * (L2_HEADER_BYTES - k)] for k in range(L2_HEADER_BYTES)]


def reply_route_statements(header, reply):
    """Statements setting `reply` to cores.rifl.common.reply_route(header): a case over Total Hops (0..5,
    anything else gives 0) of rotations, reversal and negation modulo 256 of the Dst Port bytes."""
    total = header[L2_HEADER_BITS - 4:]
    ports = _header_bytes(header)[1:]                 # DP1..DP5
    cases = {"default": reply.eq(0)}
    for t in range(MAX_HOPS + 1):
        k = -t % MAX_HOPS
        orig = ports[k:] + ports[:k]
        back = [(C(0, 8) - p)[:8] for p in reversed(orig[:t])] + [C(0, 8)] * (MAX_HOPS - t)
        cases[t] = reply.eq(Cat(*reversed(back), C(t, 4), C(t, 4)))
    return Case(total, cases)


class BytePacker(LiteXModule):
    """Packs chunks of 0..in_bytes bytes (sink: data, n; byte k = data[8k+7:8k]) into beats of `size` bytes
    (source: data, bytes above `size` zero), `size` (1..out_bytes) being set by the user for the next beat.
    Buffer of in_bytes + out_bytes bytes; takes a chunk and gives a beat every cycle; latency 1 cycle."""
    def __init__(self, in_bytes, out_bytes):
        self.sink = sink = stream.Endpoint([("data", 8 * in_bytes), ("n", bits_for(in_bytes))])
        self.source = source = stream.Endpoint([("data", 8 * out_bytes)])
        self.size = Signal(bits_for(out_bytes))

        # # #

        B = in_bytes + out_bytes
        buf = Signal(8 * B)
        level = Signal(max=B + 1)
        shift = Signal(max=out_bytes + 1)
        after = Signal(max=B + 1)
        chunk = Signal(8 * in_bytes)
        self.comb += [
            source.valid.eq(level >= self.size),
            source.data.eq(buf & ((C(1, 8 * out_bytes + 1) << Cat(C(0, 3), self.size)) - 1)),
            shift.eq(Mux(source.valid & source.ready, self.size, 0)),
            after.eq(level - shift),
            sink.ready.eq(after <= out_bytes),
            chunk.eq(Mux(sink.valid & sink.ready, sink.data & ((C(1, 8 * in_bytes + 1) << Cat(C(0, 3), sink.n)) - 1), 0)),
        ]
        self.sync += [
            buf.eq((buf >> Cat(C(0, 3), shift)) | (chunk << Cat(C(0, 3), after))[:8 * B]),
            level.eq(after + Mux(sink.valid & sink.ready, sink.n, 0)),
        ]


def _add_counters(module, counters, events):
    module.counters = {name: Signal(32, name=name) for name, _ in counters}
    for name, _ in counters:
        module.sync += If(events[name], module.counters[name].eq(module.counters[name] + 1))


def _add_counter_csrs(module, counters):
    for name, desc in counters:
        csr = CSRStatus(32, name=name, description=desc)
        setattr(module, "_" + name, csr)
        module.comb += csr.status.eq(module.counters[name])


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
    the Layer 1 beats leave back to back (line rate). Latency: 3 cycles.
    """
    def __init__(self, frame_bits=256, data_width=64, with_csr=False):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        W = data_width // 8
        P = payload_bytes(frame_bits)
        self.sink = sink = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_TX_PARAMS))
        self.source = source = stream.Endpoint(user_layout(frame_bits))
        ev = {name: Signal() for name, _ in TX_COUNTERS}

        # # #

        # Stage 1: the segment stream (length prefix, packet, zero padding to whole segments) in W-byte beats.
        self.stream_packer = sp = BytePacker(W, W)
        self.routes = routes = stream.SyncFIFO([("route", L2_HEADER_BITS), ("segments", 9)], 4)
        rem = Signal(8 * L2_LENGTH_BYTES)
        pad = Signal(8 * L2_LENGTH_BYTES + 1)    # a packet ending early pads up to its whole length
        trail = Signal()
        nseg = Signal(9)
        length_ok = Signal()
        n_data = Signal(max=W + 1)
        n_pad = Signal(max=W + 1)
        pad_after = Signal(8 * L2_LENGTH_BYTES + 1)
        self.comb += [
            sp.size.eq(W),
            nseg.eq((sink.length + L2_LENGTH_BYTES + SEGMENT_BYTES - 1) >> 8),
            length_ok.eq((sink.length != 0) & (sink.length <= L2_MAX_PACKET_BYTES)),
            n_data.eq(Mux(rem < W, rem, W)),
            n_pad.eq(Mux(pad < W, pad, W)),
            routes.sink.route.eq(sink.route),
            routes.sink.segments.eq(nseg),
        ]
        self.fsm = fsm = FSM(reset_state="LENGTH")
        fsm.act("LENGTH",
            If(sink.valid,
                If(~length_ok,
                    ev["bad_length"].eq(1),
                    NextState("DROP"),
                ).Else(
                    sp.sink.valid.eq(routes.sink.ready),
                    sp.sink.data.eq(Cat(sink.length[8:], sink.length[:8])),
                    sp.sink.n.eq(L2_LENGTH_BYTES),
                    routes.sink.valid.eq(sp.sink.ready),
                    If(sp.sink.ready & routes.sink.ready,
                        ev["packets"].eq(1),
                        NextValue(rem, sink.length),
                        NextValue(pad, (nseg << 8) - L2_LENGTH_BYTES - sink.length),
                        NextState("DATA"),
                    ),
                ),
            ),
        )
        fsm.act("DATA",
            sp.sink.valid.eq(sink.valid),
            sp.sink.data.eq(sink.data),
            sp.sink.n.eq(n_data),
            sink.ready.eq(sp.sink.ready),
            pad_after.eq(pad + Mux(sink.last, rem - n_data, 0)),
            If(sink.valid & sp.sink.ready,
                NextValue(rem, rem - n_data),
                NextValue(pad, pad_after),
                If(sink.last | (rem == n_data),
                    ev["length_errors"].eq((rem != n_data) | ~sink.last),
                    NextValue(trail, ~sink.last),
                    If(pad_after != 0, NextState("PAD")).Elif(~sink.last, NextState("DROP")).Else(NextState("LENGTH")),
                ),
            ),
        )
        fsm.act("PAD",
            sp.sink.valid.eq(1),
            sp.sink.n.eq(n_pad),
            If(sp.sink.ready,
                NextValue(pad, pad - n_pad),
                If(pad == n_pad, If(trail, NextState("DROP")).Else(NextState("LENGTH"))),
            ),
        )
        fsm.act("DROP",
            sink.ready.eq(1),
            If(sink.valid & sink.last, NextState("LENGTH")),
        )

        # Stage 2: a header before every SEGMENT_BYTES of the segment stream, packed into Layer 1 beats.
        self.frame_packer = fp = BytePacker(W, P)
        beats = SEGMENT_BYTES // W
        beat = Signal(max=beats)
        done = Signal(9)
        self.framer = framer = FSM(reset_state="HEADER")
        framer.act("HEADER",
            fp.sink.valid.eq(routes.source.valid),
            fp.sink.data.eq(Cat(*_header_bytes(routes.source.route))),
            fp.sink.n.eq(L2_HEADER_BYTES),
            If(routes.source.valid & fp.sink.ready, NextState("SEGMENT")),
        )
        framer.act("SEGMENT",
            fp.sink.valid.eq(sp.source.valid),
            fp.sink.data.eq(sp.source.data),
            fp.sink.n.eq(W),
            sp.source.ready.eq(fp.sink.ready),
            If(sp.source.valid & fp.sink.ready,
                NextValue(beat, beat + 1),
                If(beat == beats - 1,
                    NextValue(beat, 0),
                    ev["segments"].eq(1),
                    NextState("HEADER"),
                    If(done == routes.source.segments - 1,
                        routes.source.ready.eq(1), NextValue(done, 0),
                    ).Else(
                        NextValue(done, done + 1),
                    ),
                ),
            ),
        )
        nbeats = -(-L2_PACKET_BYTES // P)
        ubeat = Signal(max=nbeats)
        final = Signal()                            # registered: the unit's last beat is next
        self.comb += [
            fp.size.eq(Mux(final, L2_PACKET_BYTES - (nbeats - 1) * P, P)),
            source.valid.eq(fp.source.valid),
            source.data.eq(fp.source.data),
            source.nbytes.eq(fp.size),
            source.last.eq(final),
            fp.source.ready.eq(source.ready),
        ]
        self.sync += If(source.valid & source.ready,
            If(final, ubeat.eq(0), final.eq(0)).Else(ubeat.eq(ubeat + 1), final.eq(ubeat == nbeats - 2)),
        )

        _add_counters(self, TX_COUNTERS, ev)
        if with_csr:
            _add_counter_csrs(self, TX_COUNTERS)


class L2Reassembler(LiteXModule):
    """Layer 2 reassembly: Layer 2 packets in (from RIFLEndpoint.source), upper-layer packets out.

    sink: user_layout(frame_bits) with `last`, one L2 packet per Layer 1 packet. source: `data` beats of
    data_width bits (full except the last), params `length`, `header` (as received in the first segment)
    and `reply` (its reply route, cores.rifl.common.reply_route, computed in gateware).
    Segments of one packet must arrive one after the other (a point-to-point link, or one sender at a
    time through switches); a continuation segment with another header is counted (`interleaved`).
    Bad input: a Layer 1 packet shorter than L2_PACKET_BYTES is completed with zeros, a longer one
    truncated (`malformed`); a first segment with length 0 or too large is dropped (`bad_length`).
    Throughput: one Layer 1 beat a cycle. Latency: 2 cycles.
    """
    def __init__(self, frame_bits=256, data_width=64, with_csr=False):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        W = data_width // 8
        P = payload_bytes(frame_bits)
        U = L2_PACKET_BYTES
        nbeats = -(-U // P)
        jd = L2_LENGTH_OFFSET // P                 # beat holding the length prefix and the first data byte
        assert jd == (L2_FIRST_DATA_OFFSET - 1) // P and L2_HEADER_BYTES <= P
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.source = source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))
        ev = {name: Signal() for name, _ in RX_COUNTERS}

        # # #

        beat = Signal(max=nbeats)
        fill = Signal()      # the Layer 1 packet ended early: zero beats complete the unit
        drop = Signal()      # it runs past the unit: its beats are dropped up to `last`
        data = Signal(8 * P)
        vvalid = Signal()
        self.comb += [
            data.eq(Mux(fill, 0, sink.data)),
            vvalid.eq(fill | (sink.valid & ~drop)),
        ]
        by = _bytes(data, P)
        hdr = Signal(L2_HEADER_BITS)
        hdr_now = Signal(L2_HEADER_BITS)
        self.comb += hdr_now.eq(Mux(beat == 0, Cat(*reversed(by[:L2_HEADER_BYTES])), hdr))
        pkt_hdr = Signal(L2_HEADER_BITS)
        pkt_rem = Signal(8 * L2_LENGTH_BYTES)       # packet bytes not yet in a segment (0: a packet starts)
        seg_rem = Signal(max=SEGMENT_BYTES + 1)     # data bytes still to come in this segment
        first = Signal()
        length = Signal(8 * L2_LENGTH_BYTES)
        total = Signal(8 * L2_LENGTH_BYTES)
        seg_data = Signal(max=SEGMENT_BYTES + 1)
        cap = Signal(max=SEGMENT_BYTES + 1)
        bad_len = Signal()
        off = Signal(max=P)
        n_first = Signal(max=P + 1)
        self.comb += [
            first.eq(pkt_rem == 0),
            length.eq(Cat(by[(L2_LENGTH_OFFSET + 1) % P], by[L2_LENGTH_OFFSET % P])),
            total.eq(Mux(first, length, pkt_rem)),
            cap.eq(Mux(first, SEGMENT_BYTES - L2_LENGTH_BYTES, SEGMENT_BYTES)),
            seg_data.eq(Mux(total < cap, total, cap)),
            bad_len.eq(first & ((length == 0) | (length > L2_MAX_PACKET_BYTES))),
            off.eq(Mux(first, L2_FIRST_DATA_OFFSET % P, L2_HEADER_BYTES % P)),
            n_first.eq(Mux(P - off < seg_data, P - off, seg_data)),
        ]

        self.params = params = stream.SyncFIFO(L2_RX_PARAMS, 4)
        self.packer = rp = BytePacker(P, W)
        reply = Signal(L2_HEADER_BITS)
        self.comb += [
            reply_route_statements(hdr_now, reply),
            params.sink.length.eq(length),
            params.sink.header.eq(hdr_now),
            params.sink.reply.eq(reply),
        ]
        at_start = beat == jd
        push = Signal()
        chunk_n = Signal(max=P + 1)
        self.comb += [
            push.eq(at_start & first & ~bad_len),
            If(at_start,
                rp.sink.data.eq(data >> Cat(C(0, 3), off)),
                chunk_n.eq(Mux(bad_len, 0, n_first)),
            ).Elif(beat > jd,
                rp.sink.data.eq(data),
                chunk_n.eq(Mux(seg_rem < P, seg_rem, P)),
            ),
            rp.sink.n.eq(chunk_n),
        ]
        go = Signal()
        self.comb += [
            go.eq(vvalid & ((chunk_n == 0) | rp.sink.ready) & (~push | params.sink.ready)),
            rp.sink.valid.eq(vvalid & (chunk_n != 0) & (~push | params.sink.ready)),
            params.sink.valid.eq(vvalid & push & ((chunk_n == 0) | rp.sink.ready)),
            sink.ready.eq(drop | (go & ~fill)),
        ]
        final = beat == nbeats - 1
        self.sync += [
            If(drop & sink.valid & sink.last, drop.eq(0)),
            If(go,
                If(final, beat.eq(0), fill.eq(0)).Else(beat.eq(beat + 1)),
                If(~fill & sink.last & ~final, fill.eq(1)),
                If(~fill & ~sink.last & final, drop.eq(1)),
                If(beat == 0, hdr.eq(hdr_now)),
                If(at_start,
                    If(bad_len,
                        seg_rem.eq(0),
                    ).Else(
                        seg_rem.eq(seg_data - n_first),
                        pkt_rem.eq(total - seg_data),
                        If(first, pkt_hdr.eq(hdr_now)),
                    ),
                ).Elif(beat > jd,
                    seg_rem.eq(seg_rem - chunk_n),
                ),
            ),
        ]
        self.comb += [
            ev["segments"].eq(go & final),
            ev["packets"].eq(go & push),
            ev["bad_length"].eq(go & at_start & bad_len),
            ev["malformed"].eq(go & ~fill & (sink.last != final)),
            ev["interleaved"].eq(go & at_start & ~first & (hdr_now != pkt_hdr)),
        ]

        # Output: beats of W bytes, the packet's last one holding the rest of its length.
        started = Signal()
        out_rem = Signal(8 * L2_LENGTH_BYTES)
        cur = Signal(8 * L2_LENGTH_BYTES)
        self.comb += [
            cur.eq(Mux(started, out_rem, params.source.length)),
            rp.size.eq(Mux(cur < W, cur, W)),
            source.valid.eq(rp.source.valid & params.source.valid),
            source.data.eq(rp.source.data),
            source.last.eq(cur <= W),
            source.length.eq(params.source.length),
            source.header.eq(params.source.header),
            source.reply.eq(params.source.reply),
            rp.source.ready.eq(source.ready & params.source.valid),
            params.source.ready.eq(source.valid & source.ready & source.last),
        ]
        self.sync += If(source.valid & source.ready,
            started.eq(~source.last),
            out_rem.eq(cur - W),
        )

        _add_counters(self, RX_COUNTERS, ev)
        if with_csr:
            _add_counter_csrs(self, RX_COUNTERS)

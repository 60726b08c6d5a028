"""On-chip Layer 2 traffic of the RIFL network block: a packet's content as a function of its source and flow
sequence number (L2PacketShape), a generator per host to the other hosts in turn, and a checker per host."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.rifl.common import CHK_COUNTERS, L2_HEADER_BITS, L2_RX_PARAMS, L2_TX_PARAMS, l2_data_layout, reply_route
from cores.rifl.l2 import byte_mask
from cores.rifl.traffic import mix32, packet_end, sequence_check
from cores.rifl_net.common import NET_LENGTH_BITS, NET_MIN_LENGTH


class L2PacketShape(LiteXModule):
    """The upper-layer packets of the network block's generators and checkers: for host `src`, flow sequence
    number `seq` and beat `beat`, the beat's `data` (data_width bits) and the packet's `length`
    (NET_MIN_LENGTH + the low NET_LENGTH_BITS of a hash, bytes); the bytes past the packet are zero. Beat 0
    starts with src (16 bits) and seq (32 bits); the rest are hash lanes. `last`: `beat` is the packet's last."""
    def __init__(self, data_width):
        W = data_width // 8
        self.src = Signal(16)
        self.seq = Signal(32)
        self.beat = Signal(16)
        self.data = Signal(data_width)
        self.length = Signal(16)
        self.last = Signal()

        # # #

        h = mix32(self, self.seq ^ Cat(C(0x5A, 8), self.src[:8], C(0xC3, 16)))
        self.comb += [
            self.length.eq(NET_MIN_LENGTH + h[:NET_LENGTH_BITS]),
            self.last.eq((self.beat + 1) * W >= self.length),
        ]
        lanes = [mix32(self, self.seq ^ Cat(C(k, 4), self.beat[:12], self.src)) for k in range(data_width // 32)]
        rest = Cat(*lanes)
        left = Signal(17)                  # bytes of the packet from this beat on (the last beat's rest is zero)
        self.comb += [
            left.eq(self.length - self.beat * W),
            self.data.eq(Mux(self.beat == 0, Cat(self.src, self.seq, rest[48:]), rest) & byte_mask(self, left, W)),
        ]


class L2TrafficGenerator(LiteXModule):
    """Host `src`'s packets to the other hosts in turn (routes[k] the Layer 2 header of the k-th), a flow
    sequence number per destination, while `enable` (the current packet is finished) and below `limit`
    packets in all (0 = no limit). source: the L2Segmenter's sink, one beat a cycle. Counters: sent."""
    def __init__(self, src, routes, data_width):
        self.source = source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_TX_PARAMS))
        self.enable = Signal()
        self.limit = Signal(32)

        # # #

        self.shape = shape = L2PacketShape(data_width)
        self.counters = {"sent": Signal(32, name="sent")}
        sent = self.counters["sent"]
        slot = Signal(max=max(2, len(routes)))
        seqs = Array(Signal(32, name=f"seq{k}") for k in range(len(routes)))
        busy = Signal()
        self.comb += [
            shape.src.eq(src), shape.seq.eq(seqs[slot]),
            source.valid.eq(busy | (self.enable & ((self.limit == 0) | (sent < self.limit)))),
            source.data.eq(shape.data),
            source.last.eq(shape.last),
            source.length.eq(shape.length),
            source.route.eq(Array(C(r, L2_HEADER_BITS) for r in routes)[slot]),
        ]
        self.sync += If(source.valid & source.ready,
            If(shape.last,
                busy.eq(0), shape.beat.eq(0), sent.eq(sent + 1), seqs[slot].eq(seqs[slot] + 1),
                If(slot == len(routes) - 1, slot.eq(0)).Else(slot.eq(slot + 1)),
            ).Else(
                busy.eq(1), shape.beat.eq(shape.beat + 1),
            ),
        )


class L2TrafficChecker(LiteXModule):
    """Checks the packets a host's reassembler delivers (sink: its source) against L2PacketShape, per source:
    headers[s] is the Layer 2 header expected from source s as the last switch delivers it (the reference's,
    cores.rifl.common.l2_deliver), reply_route(headers[s]) its reply route. Counters (CHK_COUNTERS):
    delivered, lost (a flow's sequence jumped forward, by that many), duplicated, out_of_order, corrupted
    (content, length, `last`, delivered header, reply route or an unknown source)."""
    def __init__(self, n_hosts, headers, data_width):
        self.sink = sink = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))

        # # #

        self.comb += sink.ready.eq(1)
        self.shape = shape = L2PacketShape(data_width)
        first = Signal(reset=1)
        src, seq = Signal(16), Signal(32)
        # Signals, not slices of sink.data: a slice as an Array index on the left of a synchronous statement
        # is lowered by Migen's Verilog back end into an assignment to the sliced signal.
        sw = max(1, (n_hosts - 1).bit_length())
        got_src, got_seq, index = Signal(16), Signal(32), Signal(sw)
        self.comb += [
            got_src.eq(sink.data[:16]), got_seq.eq(sink.data[16:48]), index.eq(got_src[:sw]),
            shape.src.eq(Mux(first, got_src, src)), shape.seq.eq(Mux(first, got_seq, seq)),
        ]
        expected = Array(Signal(32, name=f"expected{s}") for s in range(n_hosts))
        exp = Signal(32)
        self.comb += exp.eq(expected[index])
        mismatch, bad = Signal(), Signal()
        expected_header = Array(C(h, L2_HEADER_BITS) for h in headers)[shape.src[:sw]]
        expected_reply = Array(C(reply_route(h), L2_HEADER_BITS) for h in headers)[shape.src[:sw]]
        self.comb += mismatch.eq((sink.data != shape.data) |
                                 (sink.length != shape.length) | (sink.last != shape.last) | (shape.src >= n_hosts) |
                                 (sink.header != expected_header) | (sink.reply != expected_reply))
        self.counters = cnt = {name: Signal(32, name=name) for name, _ in CHK_COUNTERS}
        self.sync += If(sink.valid & sink.ready,
            If(first,
                src.eq(got_src), seq.eq(got_seq),
                If(got_src < n_hosts, sequence_check(cnt, got_seq, exp, expected[index].eq)),
            ),
            packet_end(cnt, sink.last, first, shape, bad, mismatch),
        )

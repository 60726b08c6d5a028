"""RIFL SoC block: the link bench (two Layer 1 endpoints looped through two channel models) with on-chip
traffic generators and checkers in both directions and CSRs for error rates, link state and counters."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStorage, CSRStatus

from cores.lib.counters import add_counter_csrs
from cores.lib.header import csr_fields
from cores.lib.logic import reduce_and, xorshift32
from cores.rifl.common import (CHANNEL_RANDOM_MAX_BITS, CHK_COUNTERS, GEN_COUNTERS, L2_HEADER_BITS, L2_RX_PARAMS,
                               L2_TX_PARAMS, LOOPBACK_CONTROL, LOOPBACK_COUNTERS, LOOPBACK_DIR_COUNTERS,
                               LOOPBACK_ENDPOINTS, LOOPBACK_EP_COUNTERS, LOOPBACK_STATUS, NET_CONTROL, NET_LENGTH_BITS,
                               NET_MIN_LENGTH, l2_data_layout, l2_deliver, net_block_counters, payload_bytes,
                               reply_route, user_layout)
from cores.rifl.l2 import byte_mask
from cores.rifl.link_bench import RIFLLinkBench
from cores.rifl.network import RIFLNetwork
from cores.rifl.topology import one_switch

MIN_LAST_BYTES = 4            # the first beat carries the 32-bit packet sequence number

_DESCRIPTIONS = {
    "enable": "generators run (each ends its current packet on 0)",
    "down_ab": "channel A->B carries no signal",
    "down_ba": "channel B->A carries no signal",
    "burst": "bits inverted per error event (1..12)",
    "link_up_a": "endpoint A link up",
    "link_up_b": "endpoint B link up",
}
_NET_DESCRIPTIONS = {
    "enable": "generators run (each ends its current packet on 0)",
    "random": "channels make independent bit errors (ber<l> thresholds 1..4), else 1-bit bursts (threshold 1)",
}


def mix32(module, x):
    """Two xorshift32 rounds of a 32-bit expression (the generator's and checker's content function)."""
    return xorshift32(module, xorshift32(module, x))


class PacketShape(LiteXModule):
    """For packet sequence number `seq` and beat `beat`: expected data, nbytes and last. A packet has `nbeats`
    (1..8) beats, full but the last (MIN_LAST_BYTES..P bytes); the first beat starts with `seq`."""
    def __init__(self, frame_bits):
        P = payload_bytes(frame_bits)
        self.seq = Signal(32)
        self.beat = Signal(3)
        self.data = Signal(8 * P)
        self.nbytes = Signal(8)
        self.last = Signal()
        self.nbeats = Signal(4)

        # # #

        h = mix32(self, self.seq ^ 0x5A5A5A5A)
        v = Signal(8)
        last_n = Signal(8)
        self.comb += [
            self.nbeats.eq(1 + h[:3]),
            v.eq(h[8:16]),
            If(h[3] | (v >= P), last_n.eq(P)).Elif(v < MIN_LAST_BYTES, last_n.eq(MIN_LAST_BYTES)).Else(last_n.eq(v)),
            self.last.eq(self.beat == self.nbeats - 1),
            self.nbytes.eq(Mux(self.last, last_n, P)),
        ]
        lanes = []
        for k in range((8 * P + 31) // 32):
            lane = mix32(self, self.seq ^ Cat(C(k, 8), self.beat, C(0, 5), C(0x3C, 16)))
            lanes.append(Mux((self.beat == 0) & (k == 0), self.seq, lane) if k == 0 else lane)
        self.comb += self.data.eq(Cat(*lanes)[:8 * P])


class TrafficGenerator(LiteXModule):
    """Sends packets 0, 1, 2, ... of PacketShape on `source` while enabled (ends the current packet when
    disabled); `limit` packets (0 = no limit). One beat a cycle. Counters (GEN_COUNTERS, `counters[name]`):
    sent (packets; also the next packet's sequence number)."""
    def __init__(self, frame_bits):
        self.source = source = stream.Endpoint(user_layout(frame_bits))
        self.enable = Signal()
        self.limit = Signal(32)

        # # #

        self.shape = shape = PacketShape(frame_bits)
        # `sent` counts in the handshake below (its enable is that branch's condition), not as an add_counters
        # event: the event's expression would build other gates (rtl) for the same count.
        self.counters = {name: Signal(32, name=name) for name, _ in GEN_COUNTERS}
        sent = self.counters["sent"]
        busy = Signal()
        self.comb += [
            shape.seq.eq(sent),
            source.valid.eq(busy | (self.enable & ((self.limit == 0) | (sent < self.limit)))),
            source.data.eq(shape.data),
            source.nbytes.eq(shape.nbytes),
            source.last.eq(shape.last),
        ]
        self.sync += If(source.valid & source.ready,
            If(shape.last,
                busy.eq(0), shape.beat.eq(0), sent.eq(sent + 1),
            ).Else(
                busy.eq(1), shape.beat.eq(shape.beat + 1),
            ),
        )


def _sequence(cnt, got, expected, expect):
    """A checker's statements for a packet's sequence number `got` against `expected` (`expect(v)` sets the
    next expected): in order, lost (a forward jump, by that many), duplicated (the previous one) or out of
    order (any other backward jump). The counters are branches of the decision (a counter's enable is its
    branch's condition, `lost` adds the jump under its branch), not add_counters events: separate event
    expressions (and an added count for `lost`) would build other gates for the same counts."""
    return If(got == expected,
        expect(got + 1),
    ).Elif((got - expected)[31] == 0,
        cnt["lost"].eq(cnt["lost"] + (got - expected)), expect(got + 1),
    ).Elif(got == expected - 1,
        cnt["duplicated"].eq(cnt["duplicated"] + 1),
    ).Else(
        cnt["out_of_order"].eq(cnt["out_of_order"] + 1),
    )


def _packet_end(cnt, last, first, shape, bad, mismatch):
    """A checker's statements for a beat: on the last, the packet is delivered or corrupted (any beat
    mismatched); otherwise the next beat of `shape`."""
    return If(last,
        first.eq(1), shape.beat.eq(0), bad.eq(0),
        If(bad | mismatch,
            cnt["corrupted"].eq(cnt["corrupted"] + 1),
        ).Else(
            cnt["delivered"].eq(cnt["delivered"] + 1),
        ),
    ).Else(
        first.eq(0), shape.beat.eq(shape.beat + 1), bad.eq(bad | mismatch),
    )


class TrafficChecker(LiteXModule):
    """Checks packets from `sink` against PacketShape. Counters (CHK_COUNTERS, `counters[name]`): delivered,
    lost (sequence jumps forward, by that many), duplicated (previous sequence again), out_of_order (other
    backward jumps) and corrupted (content, nbytes or last differ). `ready_rate` (0 = always) accepts a
    beat when an 8-bit PRNG is below it. Latency: the beat is registered before it is compared (the compares
    start from a register, not from the endpoint's FIFO read), so the counters follow one cycle later."""
    def __init__(self, frame_bits, seed=0x1234567):
        P = payload_bytes(frame_bits)
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.ready_rate = Signal(8)

        # # #

        self.pipe = pipe = stream.PipeValid(user_layout(frame_bits))
        self.comb += sink.connect(pipe.sink)
        beat = pipe.source
        rng = Signal(32, reset=seed)
        self.sync += rng.eq(xorshift32(self, rng))
        self.comb += beat.ready.eq((self.ready_rate == 0) | (rng[:8] < self.ready_rate))

        self.shape = shape = PacketShape(frame_bits)
        first = Signal(reset=1)
        seq = Signal(32)
        expected = Signal(32)
        bad = Signal()
        got = Signal(32)
        self.comb += [
            got.eq(beat.data[:32]),
            shape.seq.eq(Mux(first, got, seq)),
        ]
        byte_ok = [(beat.data[8 * k:8 * k + 8] == shape.data[8 * k:8 * k + 8]) | (k >= beat.nbytes) for k in range(P)]
        mismatch = Signal()
        self.comb += mismatch.eq((beat.nbytes != shape.nbytes) | (beat.last != shape.last) |
                                 ~reduce_and(byte_ok))
        self.counters = cnt = {name: Signal(32, name=name) for name, _ in CHK_COUNTERS}
        self.sync += If(beat.valid & beat.ready,
            If(first, seq.eq(got), _sequence(cnt, got, expected, expected.eq)),
            _packet_end(cnt, beat.last, first, shape, bad, mismatch),
        )


class RIFLLoopback(LiteXModule):
    """The link bench (endpoints A and B, channels A->B and B->A of `latency` cycles each) with a generator
    and a checker per direction. Parameters: frame_bits (F), latency (channel cycles, each way). CSRs:
    control (LOOPBACK_CONTROL: enable, down_ab, down_ba, burst), err_ab / err_ba (per-frame error threshold,
    probability * 2^32), limit (packets per generator, 0 = unlimited), rx_ready (slow-receiver rate, 0 =
    always ready), cycles, status (LOOPBACK_STATUS: link_up_a/b), and the LOOPBACK_COUNTERS
    (`counters[name]`): <dir>_<name> for dir in ab, ba (sent, delivered, lost, duplicated, out_of_order,
    corrupted, channel_errors) and <ep>_<name> for ep in a, b (LOOPBACK_EP_COUNTERS of the endpoint)."""
    def __init__(self, frame_bits=256, latency=8):
        self.control = CSRStorage(fields=csr_fields(LOOPBACK_CONTROL, _DESCRIPTIONS))
        self.err_ab = CSRStorage(32, description="A->B per-frame error probability * 2^32")
        self.err_ba = CSRStorage(32, description="B->A per-frame error probability * 2^32")
        self.limit = CSRStorage(32, description="packets each generator sends (0 = unlimited)")
        self.rx_ready = CSRStorage(8, description="checkers accept a beat with probability rx_ready/256 (0 = always)")
        self.cycles = CSRStatus(32, description="cycles since reset")
        self.status = CSRStatus(fields=csr_fields(LOOPBACK_STATUS, _DESCRIPTIONS))

        # # #

        self.link = link = RIFLLinkBench(frame_bits, latency, seeds=(0x1D872B41, 0x2F0B3A57))
        self.gen_ab = TrafficGenerator(frame_bits)
        self.gen_ba = TrafficGenerator(frame_bits)
        self.chk_ab = TrafficChecker(frame_bits, seed=0x7F4A7C15)
        self.chk_ba = TrafficChecker(frame_bits, seed=0x3C6EF372)
        cycles = Signal(32)
        self.sync += cycles.eq(cycles + 1)
        self.comb += [
            self.cycles.status.eq(cycles),
            self.status.fields.link_up_a.eq(link.a.link_up),    # a CSRStatus with fields drives .status
            self.status.fields.link_up_b.eq(link.b.link_up),    # from its field signals: drive those
            self.gen_ab.source.connect(link.a.sink), link.b.source.connect(self.chk_ab.sink),
            self.gen_ba.source.connect(link.b.sink), link.a.source.connect(self.chk_ba.sink),
        ]
        control = lambda name: LOOPBACK_CONTROL.field(self.control.storage, name)
        self.counters = {}
        for d, ch, gen, chk, thr in (("ab", link.ab, self.gen_ab, self.chk_ab, self.err_ab),
                                     ("ba", link.ba, self.gen_ba, self.chk_ba, self.err_ba)):
            self.comb += [
                ch.threshold.eq(thr.storage), ch.burst.eq(control("burst")), ch.down.eq(control(f"down_{d}")),
                gen.enable.eq(control("enable")), gen.limit.eq(self.limit.storage),
                chk.ready_rate.eq(self.rx_ready.storage),
            ]
            parts = {**gen.counters, **chk.counters, "channel_errors": ch.counters["errors"]}
            for name, _ in LOOPBACK_DIR_COUNTERS:
                self.counters[f"{d}_{name}"] = parts[name]
        for e, ep in zip(LOOPBACK_ENDPOINTS, (link.a, link.b)):
            for name in LOOPBACK_EP_COUNTERS:
                self.counters[f"{e}_{name}"] = ep.counters[name]
        add_counter_csrs(self, LOOPBACK_COUNTERS)


# The RIFL network block -------------------------------------------------------------------------------------

class L2PacketShape(LiteXModule):
    """The upper-layer packets of the network block's generators and checkers: for host `src`, flow sequence
    number `seq` and beat `beat`, the beat's `data` (data_width bits) and the packet's `length`
    (NET_MIN_LENGTH + the low NET_LENGTH_BITS of a hash, bytes); the bytes past the packet are zero. Beat 0 starts with src (16 bits) and seq
    (32 bits); the rest are hash lanes. `last`: `beat` is the packet's last."""
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
    replies[s] is the reply route expected from source s (the reference's). Counters (CHK_COUNTERS):
    delivered, lost (a flow's sequence jumped forward, by that many), duplicated, out_of_order, corrupted
    (content, length, `last`, reply route or an unknown source)."""
    def __init__(self, n_hosts, replies, data_width):
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
        self.comb += mismatch.eq((sink.data != shape.data) |
                                 (sink.length != shape.length) | (sink.last != shape.last) | (shape.src >= n_hosts) |
                                 (sink.reply != Array(C(r, L2_HEADER_BITS) for r in replies)[shape.src[:sw]]))
        self.counters = cnt = {name: Signal(32, name=name) for name, _ in CHK_COUNTERS}
        self.sync += If(sink.valid & sink.ready,
            If(first,
                src.eq(got_src), seq.eq(got_seq),
                If(got_src < n_hosts, _sequence(cnt, got_seq, exp, expected[index].eq)),
            ),
            _packet_end(cnt, sink.last, first, shape, bad, mismatch),
        )


class RIFLNetBlock(LiteXModule):
    """A RIFL network on chip: n hosts (RIFLHost: L2 segmenter and reassembler on an L1 endpoint) on one
    n-port RIFLSwitchNode, every link two RIFLChannels of `latency` cycles (RIFLNetwork), each host with an
    L2TrafficGenerator (to the other hosts in turn) and an L2TrafficChecker. Parameters: n, frame_bits,
    data_width (the hosts' upper layer and the fabric), latency.
    CSRs: control (NET_CONTROL: enable, random = independent bit errors, else 1-bit bursts), limit
    (packets per generator, 0 = unlimited), ber<l> for every link l (4 x 32 bits: the channel thresholds of
    both directions, software.rifl.demo.random_thresholds; bits 0-31 the per-frame threshold of bursts),
    down (bit c: channel c carries no signal), force (a 1 written to bit c: channel c's next data frame gets
    the undetectable codeword), status (link_up of every host), cycles, and net_block_counters(n)."""
    def __init__(self, n=4, frame_bits=64, data_width=64, latency=8):
        topo = one_switch(n)
        channels = 2 * len(topo.links)
        self.control = CSRStorage(fields=csr_fields(NET_CONTROL, _NET_DESCRIPTIONS))
        self.limit = CSRStorage(32, description="packets each generator sends (0 = unlimited)")
        self.bers = []
        for k in range(len(topo.links)):
            ber = CSRStorage(32 * CHANNEL_RANDOM_MAX_BITS, name=f"ber{k}",
                             description=f"link {k} error thresholds, both directions (threshold k at bits 32k)")
            setattr(self, f"ber{k}", ber)
            self.bers.append(ber)
        self.down = CSRStorage(channels, description="bit c: channel c carries no signal")
        self.force = CSRStorage(channels, description="writing a 1 to bit c forces a codeword on channel c")
        self.status = CSRStatus(n, description="bit h: host h's link is up")
        self.cycles = CSRStatus(32, description="cycles since reset")

        # # #

        self.net = net = RIFLNetwork(topo, frame_bits, latency, data_width, n_sources=max(4, n - 1),
                                     max_packet=NET_MIN_LENGTH + 2**NET_LENGTH_BITS)
        cycles = Signal(32)
        self.sync += cycles.eq(cycles + 1)
        self.comb += self.cycles.status.eq(cycles)
        control = lambda name: NET_CONTROL.field(self.control.storage, name)
        self.gens, self.chks = [], []
        for h, host in enumerate(net.hosts):
            others = [(h + 1 + j) % n for j in range(n - 1)]
            gen = L2TrafficGenerator(h, [topo.route(h, d) for d in others], data_width)
            replies = [reply_route(l2_deliver(topo.route(s, h))) if s != h else 0 for s in range(n)]
            chk = L2TrafficChecker(n, replies, data_width)
            setattr(self, f"gen{h}", gen)
            setattr(self, f"chk{h}", chk)
            self.gens.append(gen)
            self.chks.append(chk)
            self.comb += [
                gen.source.connect(host.sink), host.source.connect(chk.sink),
                gen.enable.eq(control("enable")), gen.limit.eq(self.limit.storage),
                self.status.status[h].eq(host.link_up),
            ]
        for c, ch in enumerate(net.channels):
            thr = self.bers[c // 2].storage
            self.comb += [
                ch.mode.eq(control("random")),
                ch.threshold.eq(thr[:32]), ch.burst.eq(1),
                *[t.eq(thr[32 * k:32 * k + 32]) for k, t in enumerate(ch.thresholds)],
                ch.down.eq(self.down.storage[c]),
                ch.force.eq(self.force.re & self.force.storage[c]),
            ]
        node = net.switches[0]
        endpoints = [host.endpoint for host in net.hosts] + [card.endpoint for card in node.cards]
        values = {}
        for h in range(n):
            values[f"h{h}_sent"] = self.gens[h].counters["sent"]
            for name, _ in CHK_COUNTERS:
                values[f"h{h}_{name}"] = self.chks[h].counters[name]
        sums = {"cells_in": [inp.counters["cells_in"] for inp in node.switch.inputs],
                "drop_full": [inp.counters["drop_full"] for inp in node.switch.inputs],
                "cells_out": [node.switch.counters["cells_out"]],
                "fc_voq_frames": [card.counters["fc_voq_sent"] for card in node.cards],
                "replays": [ep.counters["replays"] for ep in endpoints],
                "rx_errors": [ep.counters["rx_errors"] for ep in endpoints],
                "link_downs": [ep.counters["link_downs"] for ep in endpoints]}
        for name, parts in sums.items():
            values[name] = Signal(32, name=f"total_{name}")
            self.comb += values[name].eq(sum(parts))
        for c, ch in enumerate(net.channels):
            values[f"c{c}_errors"] = ch.counters["errors"]
            values[f"c{c}_undetected"] = ch.counters["undetected"]
        self.counters = values
        add_counter_csrs(self, net_block_counters(n, channels), values)


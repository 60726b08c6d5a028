"""RIFL SoC block: the link bench (two Layer 1 endpoints looped through two channel models) with on-chip
traffic generators and checkers in both directions and CSRs for error rates, link state and counters."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStorage, CSRStatus

from cores.lib.counters import add_counter_csrs
from cores.lib.header import csr_fields
from cores.lib.logic import reduce_and, xorshift32
from cores.rifl.common import (CHK_COUNTERS, GEN_COUNTERS, LOOPBACK_CONTROL, LOOPBACK_COUNTERS, LOOPBACK_DIR_COUNTERS,
                               LOOPBACK_ENDPOINTS, LOOPBACK_EP_COUNTERS, LOOPBACK_STATUS, payload_bytes, user_layout)
from cores.rifl.link_bench import RIFLLinkBench

MIN_LAST_BYTES = 4            # the first beat carries the 32-bit packet sequence number

_DESCRIPTIONS = {
    "enable": "generators run (each ends its current packet on 0)",
    "down_ab": "channel A->B carries no signal",
    "down_ba": "channel B->A carries no signal",
    "burst": "bits inverted per error event (1..12)",
    "link_up_a": "endpoint A link up",
    "link_up_b": "endpoint B link up",
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


class TrafficChecker(LiteXModule):
    """Checks packets from `sink` against PacketShape. Counters (CHK_COUNTERS, `counters[name]`): delivered,
    lost (sequence jumps forward, by that many), duplicated (previous sequence again), out_of_order (other
    backward jumps) and corrupted (content, nbytes or last differ). `ready_rate` (0 = always) accepts a
    beat when an 8-bit PRNG is below it."""
    def __init__(self, frame_bits, seed=0x1234567):
        P = payload_bytes(frame_bits)
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.ready_rate = Signal(8)

        # # #

        rng = Signal(32, reset=seed)
        self.sync += rng.eq(xorshift32(self, rng))
        self.comb += sink.ready.eq((self.ready_rate == 0) | (rng[:8] < self.ready_rate))

        self.shape = shape = PacketShape(frame_bits)
        first = Signal(reset=1)
        seq = Signal(32)
        expected = Signal(32)
        bad = Signal()
        got = Signal(32)
        self.comb += [
            got.eq(sink.data[:32]),
            shape.seq.eq(Mux(first, got, seq)),
        ]
        byte_ok = [(sink.data[8 * k:8 * k + 8] == shape.data[8 * k:8 * k + 8]) | (k >= sink.nbytes) for k in range(P)]
        mismatch = Signal()
        self.comb += mismatch.eq((sink.nbytes != shape.nbytes) | (sink.last != shape.last) |
                                 ~reduce_and(byte_ok))
        # The counters are branches of the decisions below (a counter's enable is its branch's condition,
        # `lost` adds the jump under its branch), not add_counters events: separate event expressions (and an
        # added count for `lost`) would build other gates for the same counts.
        self.counters = cnt = {name: Signal(32, name=name) for name, _ in CHK_COUNTERS}
        self.sync += If(sink.valid & sink.ready,
            If(first,
                seq.eq(got),
                If(got == expected,
                    expected.eq(got + 1),
                ).Elif((got - expected)[31] == 0,
                    cnt["lost"].eq(cnt["lost"] + (got - expected)), expected.eq(got + 1),
                ).Elif(got == expected - 1,
                    cnt["duplicated"].eq(cnt["duplicated"] + 1),
                ).Else(
                    cnt["out_of_order"].eq(cnt["out_of_order"] + 1),
                ),
            ),
            If(sink.last,
                first.eq(1), shape.beat.eq(0), bad.eq(0),
                If(bad | mismatch,
                    cnt["corrupted"].eq(cnt["corrupted"] + 1),
                ).Else(
                    cnt["delivered"].eq(cnt["delivered"] + 1),
                ),
            ).Else(
                first.eq(0), shape.beat.eq(shape.beat + 1), bad.eq(bad | mismatch),
            ),
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

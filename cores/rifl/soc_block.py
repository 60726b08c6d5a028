"""RIFL SoC block: the link bench (two Layer 1 endpoints looped through two channel models) with on-chip
traffic generators and checkers in both directions and CSRs for error rates, link state and counters."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField

from cores.lib.counters import add_counter_csrs
from cores.lib.logic import reduce_and, xorshift32
from cores.rifl.common import payload_bytes, user_layout
from cores.rifl.link import COUNTERS as EP_ALL_COUNTERS
from cores.rifl.link_bench import RIFLLinkBench

MAX_PACKET_BEATS = 8          # generated packets have 1..8 beats
MIN_LAST_BYTES = 4            # the first beat carries the 32-bit packet sequence number

CHK_COUNTERS = [
    ("delivered", "packets delivered intact"),
    ("lost", "packets missing (the sequence number jumped forward by that many)"),
    ("duplicated", "packets received again (the previous sequence number)"),
    ("out_of_order", "packets with any other backward sequence jump"),
    ("corrupted", "packets whose content, nbytes or last differ"),
]
EP_COUNTERS = ["tx_frames", "tx_replayed", "rx_frames", "rx_errors", "rx_discarded", "rx_overflow", "replays",
               "fc_on_sent", "fc_off_sent", "link_downs"]
# The block's counters: per direction (ab: A -> B, ba: B -> A) and per endpoint (a, b).
DIR_COUNTERS = [("sent", "packets sent by the generator")] + CHK_COUNTERS + [
    ("channel_errors", "frames corrupted by the channel")]
LOOPBACK_COUNTERS = (
    [(f"{d}_{name}", f"{d}: {desc}") for d in ("ab", "ba") for name, desc in DIR_COUNTERS] +
    [(f"{e}_{name}", f"endpoint {e.upper()}: {dict(EP_ALL_COUNTERS)[name]}") for e in ("a", "b") for name in EP_COUNTERS])


def mix32(module, x):
    """Two xorshift32 rounds of a 32-bit expression (the generator's and checker's content function)."""
    return xorshift32(module, xorshift32(module, x))


class PacketShape(LiteXModule):
    """For packet sequence number `seq` and beat `beat`: expected data, nbytes and last."""
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
    disabled); `limit` packets (0 = no limit). One beat a cycle."""
    def __init__(self, frame_bits):
        self.source = source = stream.Endpoint(user_layout(frame_bits))
        self.enable = Signal()
        self.limit = Signal(32)
        self.sent = Signal(32)

        # # #

        self.shape = shape = PacketShape(frame_bits)
        busy = Signal()
        self.comb += [
            shape.seq.eq(self.sent),
            source.valid.eq(busy | (self.enable & ((self.limit == 0) | (self.sent < self.limit)))),
            source.data.eq(shape.data),
            source.nbytes.eq(shape.nbytes),
            source.last.eq(shape.last),
        ]
        self.sync += If(source.valid & source.ready,
            If(shape.last,
                busy.eq(0), shape.beat.eq(0), self.sent.eq(self.sent + 1),
            ).Else(
                busy.eq(1), shape.beat.eq(shape.beat + 1),
            ),
        )


class TrafficChecker(LiteXModule):
    """Checks packets from `sink` against PacketShape: counts delivered, lost (sequence jumps forward),
    duplicated (previous sequence again), out_of_order (other backward jumps) and corrupted (content,
    nbytes or last differ). `ready_rate` (0 = always) accepts a beat when an 8-bit PRNG is below it."""
    def __init__(self, frame_bits, seed=0x1234567):
        P = payload_bytes(frame_bits)
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.ready_rate = Signal(8)
        for name, _ in CHK_COUNTERS:
            setattr(self, name, Signal(32, name=name))

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
        self.sync += If(sink.valid & sink.ready,
            If(first,
                seq.eq(got),
                If(got == expected,
                    expected.eq(got + 1),
                ).Elif((got - expected)[31] == 0,
                    self.lost.eq(self.lost + (got - expected)), expected.eq(got + 1),
                ).Elif(got == expected - 1,
                    self.duplicated.eq(self.duplicated + 1),
                ).Else(
                    self.out_of_order.eq(self.out_of_order + 1),
                ),
            ),
            If(sink.last,
                first.eq(1), shape.beat.eq(0), bad.eq(0),
                If(bad | mismatch, self.corrupted.eq(self.corrupted + 1)).Else(self.delivered.eq(self.delivered + 1)),
            ).Else(
                first.eq(0), shape.beat.eq(shape.beat + 1), bad.eq(bad | mismatch),
            ),
        )


class RIFLLoopback(LiteXModule):
    """The link bench (endpoints A and B, channels A->B and B->A of `latency` cycles each) with a generator
    and a checker per direction. Parameters: frame_bits (F), latency (channel cycles, each way). CSRs:
    control (enable, down_ab, down_ba, burst), err_ab / err_ba (per-frame error threshold, probability *
    2^32), limit (packets per generator, 0 = unlimited), rx_ready (slow-receiver rate, 0 = always ready),
    cycles, status (link_up_a/b), and the LOOPBACK_COUNTERS (`counters[name]`): <dir>_<name> for dir in ab,
    ba (sent, delivered, lost, duplicated, out_of_order, corrupted, channel_errors) and <ep>_<name> for ep
    in a, b (endpoint counters)."""
    def __init__(self, frame_bits=256, latency=8):
        self.control = CSRStorage(fields=[
            CSRField("enable", size=1, description="generators run (each ends its current packet on 0)"),
            CSRField("down_ab", size=1, description="channel A->B carries no signal"),
            CSRField("down_ba", size=1, description="channel B->A carries no signal"),
            CSRField("burst", size=4, offset=8, description="bits inverted per error event (1..12)"),
        ])
        self.err_ab = CSRStorage(32, description="A->B per-frame error probability * 2^32")
        self.err_ba = CSRStorage(32, description="B->A per-frame error probability * 2^32")
        self.limit = CSRStorage(32, description="packets each generator sends (0 = unlimited)")
        self.rx_ready = CSRStorage(8, description="checkers accept a beat with probability rx_ready/256 (0 = always)")
        self.cycles = CSRStatus(32, description="cycles since reset")
        self.status = CSRStatus(fields=[
            CSRField("link_up_a", size=1, description="endpoint A link up"),
            CSRField("link_up_b", size=1, description="endpoint B link up"),
        ])

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
        self.counters = {}
        for d, ch, gen, chk, thr in (("ab", link.ab, self.gen_ab, self.chk_ab, self.err_ab),
                                     ("ba", link.ba, self.gen_ba, self.chk_ba, self.err_ba)):
            self.comb += [
                ch.threshold.eq(thr.storage), ch.burst.eq(self.control.storage[8:12]),
                ch.down.eq(self.control.storage[1 if d == "ab" else 2]),
                gen.enable.eq(self.control.storage[0]), gen.limit.eq(self.limit.storage),
                chk.ready_rate.eq(self.rx_ready.storage),
            ]
            self.counters[f"{d}_sent"] = gen.sent
            for name, _ in CHK_COUNTERS:
                self.counters[f"{d}_{name}"] = getattr(chk, name)
            self.counters[f"{d}_channel_errors"] = ch.errors
        for e, ep in (("a", link.a), ("b", link.b)):
            for name in EP_COUNTERS:
                self.counters[f"{e}_{name}"] = ep.counters[name]
        add_counter_csrs(self, LOOPBACK_COUNTERS)

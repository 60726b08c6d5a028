"""On-chip traffic of the RIFL blocks: a packet's expected content as a function of its sequence number
(PacketShape), a generator of such packets and a checker that counts them delivered, lost, duplicated, out of
order or corrupted. The checker's statements (sequence_check, packet_end) serve the Layer 2 checker of
cores.rifl_net too."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import reduce_and, xorshift32
from cores.rifl.common import CHK_COUNTERS, GEN_COUNTERS, payload_bytes, user_layout

MIN_LAST_BYTES = 4            # the first beat carries the 32-bit packet sequence number


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


def sequence_check(cnt, got, expected, expect):
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


def packet_end(cnt, last, first, shape, bad, mismatch):
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
            If(first, seq.eq(got), sequence_check(cnt, got, expected, expected.eq)),
            packet_end(cnt, beat.last, first, shape, bad, mismatch),
        )

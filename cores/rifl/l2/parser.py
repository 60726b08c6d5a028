"""RIFL Layer 2 unit parser: Layer 1 beats into units of one Layer 2 packet each (header, reply route,
length prefix, segment body), for the reassembler and the deframer."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.rifl.common import (
    L2_DST_PORTS, L2_HEADER, L2_HEADER_BITS, L2_HEADER_BYTES, L2_LENGTH_BYTES, L2_LENGTH_OFFSET, L2_PACKET_BYTES,
    MAX_HOPS, payload_bytes, user_layout)


def _bytes(value, n):
    return [value[8 * k:8 * k + 8] for k in range(n)]


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

"""RIFL Layer 2 endpoint gateware (cores/rifl/l2/): segmenter output against the Python segmentation
(software/rifl/reference.py) byte for byte, reassembly round trips for lengths 1..4096 (every length next to a
segment boundary, random others) under random back-pressure, through two Layer 1 endpoints and noisy
channels, line rate, the gateware reply route against common.reply_route, and bad input."""
import random

import pytest
from migen import *
from migen.sim import passive, run_simulation

from litex.gen import LiteXModule

from cores.lib.logic import reduce_and
from cores.rifl import common as c
from cores.rifl.l2 import (BytePacker, FramePacker, L2Deframer, L2Framer, L2PacketStore, L2Reassembler,
                           L2Segmenter, L2UnitParser, key_form, reply_route_statements)
from cores.rifl.link_bench import RIFLLinkBench
from software.rifl import reference as ref
from tests.harness.rifl import collect_packets, send_beats, unit_beats
from tests.harness.streams import collect, send
from tests.harness.tiers import extended

pytestmark = pytest.mark.long        # the whole file: tens of seconds or more


def back_to_back(F, dw):
    """Segmenter -> reassembler, no link between them."""
    m = LiteXModule()
    m.seg, m.rea = L2Segmenter(F, dw), L2Reassembler(F, dw)
    m.comb += m.seg.source.connect(m.rea.sink)
    return m


def random_route(rng):
    total = rng.randint(0, c.MAX_HOPS)
    return c.l2_header_pack(total, rng.randint(0, total), [rng.randrange(256) for _ in range(c.MAX_HOPS)])


def boundary_lengths(limit=4096):
    """Every length whose prefixed stream ends one byte before, on, or one byte after a segment boundary."""
    out = set(range(1, 4))
    for k in range(1, limit // c.SEGMENT_BYTES + 2):
        for d in (-1, 0, 1):
            n = k * c.SEGMENT_BYTES - c.L2_LENGTH_BYTES + d
            if 1 <= n <= limit:
                out.add(n)
    return sorted(out | {limit})


def run_chain(packets, F=256, dw=256, latency=None, valid_p=1.0, ready_p=1.0, seed=1, err=0.0, cycles=None):
    """Send packets [(bytes, route, length_param)] through segmenter -> reassembler, back to back or (latency
    given) over the link bench with 3-bit error bursts A->B at per-frame probability `err`; returns (the
    segmenter's Layer 1 packets, the reassembler's packets, counters, cycle stamps of segmenter output beats)."""
    W, P = dw // 8, c.payload_bytes(F)
    if latency is None:
        dut = back_to_back(F, dw)
    else:
        dut = RIFLLinkBench(F, latency, seeds=(11, 13), l2_data_width=dw)
    units, received, stamps = [], [], []
    nunits = sum(c.l2_segments(L) for _, _, L in packets if 1 <= L <= c.L2_MAX_PACKET_BYTES)
    budget = cycles or 400 + 3 * nunits * (-(-c.L2_PACKET_BYTES // P)) * (1 if ready_p == 1.0 else 4)
    nexpected = sum(1 for _, _, L in packets if 1 <= L <= c.L2_MAX_PACKET_BYTES)

    @passive
    def src():
        rng = random.Random(seed)
        for data, route, length in packets:
            beats = [data[i:i + W] for i in range(0, len(data), W)]
            for i, b in enumerate(beats):
                while rng.random() > valid_p:
                    yield dut.seg.sink.valid.eq(0)
                    yield
                yield dut.seg.sink.valid.eq(1)
                yield dut.seg.sink.data.eq(int.from_bytes(b, "little"))
                yield dut.seg.sink.last.eq(i == len(beats) - 1)
                yield dut.seg.sink.length.eq(length)
                yield dut.seg.sink.route.eq(route)
                yield
                while not (yield dut.seg.sink.ready):
                    yield
        yield dut.seg.sink.valid.eq(0)

    @passive
    def mon_seg():
        cur = bytearray()
        for t in range(budget):
            s = dut.seg.source
            if (yield s.valid) and (yield s.ready):
                n = yield s.nbytes
                cur += (yield s.data).to_bytes(P, "little")[:n]
                stamps.append(t)
                if (yield s.last):
                    units.append(bytes(cur))
                    cur = bytearray()
            yield

    counters = {}

    def wait():
        if latency is not None:
            yield dut.ab.threshold.eq(int(err * 2**32))
            yield dut.ab.burst.eq(3)
            yield dut.ba.threshold.eq(int(err * 2**32))
        for _ in range(budget):
            if len(received) == nexpected and len(units) == nunits:
                break
            yield
        for _ in range(200):           # the rest of the last Layer 2 packet (padding) drains
            if (yield dut.rea.counters["segments"]) == nunits:
                break
            yield
        for side, m in (("tx", dut.seg), ("rx", dut.rea)):
            counters[side] = {}
            for k, v in m.counters.items():
                counters[side][k] = yield v
        if latency is not None:
            counters["b_rx_errors"] = yield dut.b.counters["rx_errors"]
            counters["ab_errors"] = yield dut.ab.counters["errors"]
    run_simulation(dut, [src(), mon_seg(), collect_packets(dut.rea.source, received, random.Random(seed + 1), dw,
                                                           ready_p), wait()])
    return units, received, counters, stamps


def make_packets(rng, lengths):
    out = []
    for n in lengths:
        out.append((bytes(rng.getrandbits(8) for _ in range(n)), random_route(rng), n))
    return out


def check_round_trip(packets, units, received, counters):
    """Segmenter output equals the Python segmentation; the reassembler restores every packet with its
    header and reply route (the Python reassembler fed the same units agrees)."""
    exp_units = [u for data, route, _ in packets for u in ref.segment(data, route)]
    assert units == exp_units
    assert len(received) == len(packets)
    for (data, route, _), (got, length, header, reply) in zip(packets, received):
        assert got == data and length == len(data) and header == route
        assert reply == c.reply_route(route)
    assert counters["tx"]["packets"] == counters["rx"]["packets"] == len(packets)
    assert counters["tx"]["segments"] == counters["rx"]["segments"] == len(exp_units)
    for k in ("bad_length", "length_errors"):
        assert counters["tx"][k] == 0
    for k in ("bad_length", "malformed", "no_context", "too_long", "orphans", "untracked"):
        assert counters["rx"][k] == 0


def test_byte_packer_random_chunks():
    """The packer's output stream equals the concatenated chunks, for random chunk and beat sizes."""
    rng = random.Random(3)
    dut = BytePacker(8, 5)
    chunks = [bytes(rng.getrandbits(8) for _ in range(rng.randint(0, 8))) for _ in range(150)]
    total = sum(len(x) for x in chunks)
    sizes, acc = [], 0
    while acc < total:
        sizes.append(min(rng.randint(1, 5), total - acc))
        acc += sizes[-1]
    got = []

    def src():
        for ch in chunks:
            yield dut.sink.valid.eq(1)
            yield dut.sink.data.eq(int.from_bytes(ch + bytes(rng.getrandbits(8) for _ in range(8 - len(ch))), "little"))
            yield dut.sink.n.eq(len(ch))
            yield
            while not (yield dut.sink.ready):
                yield
        yield dut.sink.valid.eq(0)

    def dst():
        r = random.Random(4)
        for size in sizes:
            yield dut.size.eq(size)
            while True:
                yield dut.source.ready.eq(r.random() < 0.7)
                yield
                if (yield dut.source.valid) and (yield dut.source.ready):
                    break
            word = (yield dut.source.data).to_bytes(5, "little")
            assert word[size:] == bytes(5 - size)
            got.append(word[:size])
    run_simulation(dut, [src(), dst()])
    assert b"".join(got) == b"".join(chunks)


class _PackerProbe(LiteXModule):
    """The L2 framer's packer (FramePacker, grain 2) behind ports CycleSim can carry: chunk byte k is `base + k`
    (a byte of the stream's running count), 0 from n on; the source gives its first byte and whether every byte
    follows it by one."""
    def __init__(self, in_bytes, out_bytes):
        self.dut = dut = FramePacker(in_bytes, out_bytes, grain=2)
        self.base, self.first, self.runs = Signal(8), Signal(8), Signal()
        out = [dut.source.data[8 * k:8 * k + 8] for k in range(out_bytes)]
        self.comb += [
            dut.sink.data.eq(Cat(*[Mux(k < dut.sink.n, self.base + k, 0)[:8] for k in range(in_bytes)])),
            self.first.eq(out[0]),
            self.runs.eq(reduce_and(out[k] == (out[0] + k)[:8] for k in range(1, out_bytes))),
        ]


@pytest.mark.parametrize("in_bytes,out_bytes,sizes", [(14, 6, (14, 8, 10)), (40, 30, (38, 32, 40))])
def test_framer_packer_in_verilog(in_bytes, out_bytes, sizes):
    """The L2 framer's packer (its chunk sizes at F = 64 and 256) in Verilog: its beats are the
    concatenated chunks under random valid/ready and empty chunks; with chunks of at least out_bytes offered
    every cycle and the source always ready, a beat leaves every cycle after the first."""
    from sim.verilated import CycleSim
    probe = _PackerProbe(in_bytes, out_bytes)
    dut = probe.dut
    ports = {"valid": (dut.sink.valid, True), "n": (dut.sink.n, True), "base": (probe.base, True),
             "ready": (dut.sink.ready, False), "o_valid": (dut.source.valid, False), "first": (probe.first, False),
             "runs": (probe.runs, False), "o_ready": (dut.source.ready, True)}
    sim = CycleSim(probe, ports, name=f"framer_packer_{in_bytes}_{out_bytes}")
    rng = random.Random(in_bytes)
    taken = got = 0                                     # bytes taken, beats given, over both phases
    try:
        for phase, (valid_p, ready_p, n_chunks) in enumerate([(0.7, 0.6, 3000), (1.0, 1.0, 400)]):
            lengths = [rng.choice(sizes + ((0,) if phase == 0 else ())) for _ in range(n_chunks)]
            start, sent, beats = sim.cycle, 0, []
            total = (taken + sum(lengths)) // out_bytes
            while got < total:
                assert sim.cycle - start < 10 * n_chunks, (phase, got, total)
                valid = sent < n_chunks and rng.random() < valid_p
                o_ready = int(rng.random() < ready_p)
                out = sim.step(valid=int(valid), n=lengths[sent] if valid else 0, base=taken % 256, o_ready=o_ready)
                if valid and out["ready"]:
                    taken += lengths[sent]
                    sent += 1
                if out["o_valid"] and o_ready:
                    assert out["runs"] and out["first"] == got * out_bytes % 256, (phase, got)
                    got += 1
                    beats.append(sim.cycle)
            assert sent == n_chunks
            if phase == 1:
                assert beats[-1] - beats[0] == len(beats) - 1, "beats not back to back"
    finally:
        sim.close()


@pytest.mark.parametrize("F,dw,limit", [(256, 256, 1100), extended(256, 256, 2048), extended(128, 64, 520),
                                         (512, 512, 520), (64, 64, 300)])
def test_round_trip_boundary_lengths(F, dw, limit):
    """Every length next to a segment boundary up to `limit` bytes (and 1..3): segmenter -> reassembler with
    random valid/ready; the segmenter's Layer 1 packets equal the Python segmentation. At F = 256, 1100 bytes
    (five segments) in `make test`, 2048 in `make test-long`."""
    rng = random.Random(F + dw)
    lengths = boundary_lengths(limit)
    rng.shuffle(lengths)
    packets = make_packets(rng, lengths)
    units, received, counters, _ = run_chain(packets, F, dw, valid_p=0.8, ready_p=0.7, seed=F)
    check_round_trip(packets, units, received, counters)


@pytest.mark.extended
def test_round_trip_random_lengths():
    rng = random.Random(21)
    packets = make_packets(rng, [rng.randint(1, 4096) for _ in range(3)] + [rng.randint(1, 300) for _ in range(6)])
    units, received, counters, _ = run_chain(packets, 256, 128, valid_p=0.6, ready_p=0.5, seed=22)
    check_round_trip(packets, units, received, counters)


def test_through_two_layer1_endpoints_with_errors():
    """Segmenter -> RIFL endpoint A -> channel with 3-bit error bursts -> endpoint B -> reassembler:
    every packet restored exactly once, in order, after replays."""
    rng = random.Random(31)
    packets = make_packets(rng, [1, 254, 255, 700, rng.randint(1, 600)])
    units, received, counters, _ = run_chain(packets, 256, 256, latency=4, valid_p=0.9, ready_p=0.6, seed=32,
                                             err=0.06)
    check_round_trip(packets, units, received, counters)
    assert counters["ab_errors"] > 3 and counters["b_rx_errors"] > 0


@pytest.mark.parametrize("F, dw, lengths", [(256, 256, [4094, 510, 4094]), (64, 64, [2046, 510, 2046])],
                         ids=["F256", "F64"])
def test_line_rate(F, dw, lengths):
    """F = 256 with 256-bit upper-layer beats, and F = 64 with 64-bit ones (as the RIFL network builds it):
    Layer 1 beats leave the segmenter back to back over packets of 16 (F = 256) or 8 (F = 64) segments and
    a short one between them (9 or 44 beats per 262-byte Layer 2 packet), and the reassembler keeps up."""
    rng = random.Random(41)
    packets = make_packets(rng, lengths)
    units, received, counters, stamps = run_chain(packets, F, dw, seed=42)
    check_round_trip(packets, units, received, counters)
    P = c.payload_bytes(F)
    beats = len(units) * -(-c.L2_PACKET_BYTES // P)
    assert len(stamps) == beats
    assert stamps[-1] - stamps[0] + 1 <= beats + 1    # at most one bubble (a 2-byte length prefix for 510 bytes)


def test_reply_route_gateware():
    rng = random.Random(51)

    class Top(Module):
        def __init__(self):
            self.header = Signal(c.L2_HEADER_BITS)
            self.reply = Signal(c.L2_HEADER_BITS)
            self.comb += reply_route_statements(self.header, self.reply)
    top = Top()
    headers = [random_route(rng) for _ in range(60)]
    headers += [c.l2_forward(c.l2_forward(c.l2_header_pack(2, 2, [3, 250])))]

    def proc():
        for h in headers:
            yield top.header.eq(h)
            yield
            assert (yield top.reply) == c.reply_route(h)
        yield top.header.eq(0xF0 << 40)             # Total Hops 15: no route
        yield
        assert (yield top.reply) == 0
    run_simulation(top, [proc()])


@pytest.mark.parametrize("F, dw", [(64, 256), (64, 64), (256, 512)])
def test_framer_deframer_cells_under_back_pressure(F, dw):
    """Cells through L2Framer -> L2Deframer (a line card's two halves, back to back) with random valid into
    the framer and a mostly stalled deframer output, so the deframer's packer fills and stops its parser
    with headers queued (its header FIFO never waits: the packer holds less than a segment). Every cell
    comes back whole, in order: its header on every beat, its data, `last` on its final beat only."""
    rng = random.Random(F * 7 + dw)
    m = LiteXModule()
    m.framer, m.deframer = L2Framer(F, dw), L2Deframer(F, dw)
    m.comb += m.framer.source.connect(m.deframer.sink)
    beats = c.SEGMENT_BYTES * 8 // dw
    cells = [(rng.getrandbits(c.L2_HEADER_BITS), [rng.getrandbits(dw) for _ in range(beats)]) for _ in range(10)]
    out = []

    def wait():
        for _ in range(len(cells) * c.L2_PACKET_BYTES * 8):
            if len(out) == len(cells) * beats:
                return
            yield
    run_simulation(m, [send(m.framer.sink, [dict(header=h, data=d) for h, ds in cells for d in ds], rng, 0.8,
                            passive=True),
                       collect(m.deframer.source, out, rng, ("header", "data", "last"), ready_p=0.25), wait()])
    assert out == [dict(header=h, data=d, last=int(k == beats - 1)) for h, ds in cells for k, d in enumerate(ds)]


def test_key_form():
    """Two headers have the same key_form iff the same reply route: pairs sharing ports with other hop
    counts, other unused ports, Total Hops above MAX_HOPS."""
    rng = random.Random(52)

    class Top(Module):
        def __init__(self):
            self.header = Signal(c.L2_HEADER_BITS)
            self.form = Signal(len(key_form(self.header)))
            self.comb += self.form.eq(key_form(self.header))
    top = Top()
    headers = [random_route(rng) for _ in range(40)]
    ports = [rng.randrange(256) for _ in range(c.MAX_HOPS)]
    for total in range(16):
        for remain in (0, total):
            for ps in (ports, ports[:-1] + [ports[-1] ^ 1], [ports[0] ^ 1] + ports[1:]):
                headers.append(c.L2_HEADER.pack(total_hops=total, remain_hops=remain, **dict(zip(c.L2_DST_PORTS, ps))))
    forms = {}

    def reply(h):                                   # the gateware's: 0 for Total Hops above MAX_HOPS
        return c.reply_route(h) if c.L2_HEADER.unpack(h)["total_hops"] <= c.MAX_HOPS else 0

    def proc():
        for h in headers:
            yield top.header.eq(h)
            yield
            forms[h] = yield top.form
    run_simulation(top, [proc()])
    for a in headers:
        for b in headers:
            assert (forms[a] == forms[b]) == (reply(a) == reply(b))


def test_bad_input_segmenter():
    """length 0 and too-large packets are dropped, `last` before `length` pads with zeros, beats after
    `length` are dropped: all counted; the packets around them are unharmed."""
    rng = random.Random(61)
    good = make_packets(rng, [40, 300, 64])
    short = bytes(rng.getrandbits(8) for _ in range(70))
    packets = [good[0], (b"\x55" * 64, good[0][1], 0), (short, good[1][1], 100), good[1],
               (bytes(range(96)), good[2][1], 33), good[2], (short[:64], good[0][1], 1000),
               (short, good[0][1], c.L2_MAX_PACKET_BYTES + 1), good[0]]
    units, received, counters, _ = run_chain(packets, 256, 256, seed=62)
    assert counters["tx"]["bad_length"] == 2 and counters["tx"]["length_errors"] == 3
    exp = [good[0][0], short + bytes(30), good[1][0], bytes(range(33)), good[2][0], short[:64] + bytes(936),
           good[0][0]]
    assert [r[0] for r in received] == exp
    assert counters["rx"]["malformed"] == 0 and counters["rx"]["packets"] == 7


def test_bad_input_reassembler():
    """Layer 1 packets that are too short or too long and a zero length prefix are counted; a short unit
    is completed with zeros, a long one truncated, and the reassembler stays in step."""
    F, dw = 256, 256
    P, W = c.payload_bytes(F), dw // 8
    rea = L2Reassembler(F, dw)
    rng = random.Random(71)
    r1, r2 = random_route(rng), random_route(rng)
    p1 = bytes(rng.getrandbits(8) for _ in range(300))       # two segments
    p2 = bytes(rng.getrandbits(8) for _ in range(20))
    u1, u2 = ref.segment(p1, r1)
    short = ref.segment(p2, r1)[0][:100]                      # 100 of 262 bytes
    zero_len = c.l2_header_bytes(r2) + bytes(c.SEGMENT_BYTES)
    units = [u1 + b"\xAA" * 45,                               # a long unit: 45 extra bytes dropped
             u2, short, zero_len, ref.segment(p2, r2)[0]]
    got = []

    def src():
        for u in units:
            beats = [u[i:i + P] for i in range(0, len(u), P)]
            for i, b in enumerate(beats):
                yield rea.sink.valid.eq(1)
                yield rea.sink.data.eq(int.from_bytes(b, "little"))
                yield rea.sink.nbytes.eq(len(b))
                yield rea.sink.last.eq(i == len(beats) - 1)
                yield
                while not (yield rea.sink.ready):
                    yield
        yield rea.sink.valid.eq(0)

    def dst():
        cur = bytearray()
        yield rea.source.ready.eq(1)
        for _ in range(200):
            yield
            if (yield rea.source.valid):
                length = yield rea.source.length
                take = min(W, length - len(cur))
                cur += (yield rea.source.data).to_bytes(W, "little")[:take]
                if (yield rea.source.last):
                    got.append((bytes(cur), (yield rea.source.header)))
                    cur = bytearray()
        cnt = {}
        for k, v in rea.counters.items():
            cnt[k] = yield v
        assert cnt == {"packets": 3, "delivered": 3, "segments": 5, "bad_length": 1, "malformed": 2,
                       "no_context": 0, "too_long": 0, "orphans": 0, "untracked": 0, "timeouts": 0}
    run_simulation(rea, [src(), dst()])
    short_payload = short[c.L2_FIRST_DATA_OFFSET:] + bytes(c.L2_PACKET_BYTES - len(short))
    assert got == [(p1, r1), (short_payload[:20], r1), (p2, r2)]


def test_unit_parser_alone():
    """L2UnitParser with every beat taken: per unit the segment body (from the length prefix on, SEGMENT_BYTES),
    the header, its reply route and the length prefix (for a continuation segment, its first data bytes) at
    the decision beat; a short Layer 1 packet completed with zeros, a long one truncated, both malformed."""
    F = 256
    rng = random.Random(81)
    p1, p2 = bytes(rng.getrandbits(8) for _ in range(300)), bytes(rng.getrandbits(8) for _ in range(40))
    r1, r2 = random_route(rng), random_route(rng)
    u1, u2 = ref.segment(p1, r1)
    short = ref.segment(p2, r2)[0][:100]
    units = [u1, short, u2 + b"\x77" * 45]
    m = LiteXModule()
    m.parser = inp = L2UnitParser(F)
    m.comb += inp.go.eq(inp.valid)                   # every beat (and completing beat) taken at once
    body, decisions, cnt = bytearray(), [], dict.fromkeys(inp.events, 0)

    def watch():
        for _ in range(3 * len(units) * -(-c.L2_PACKET_BYTES // c.payload_bytes(F))):
            yield
            for k, sig in inp.events.items():
                cnt[k] += yield sig
            if (yield inp.go) and len(body) < len(units) * c.SEGMENT_BYTES:
                n = yield inp.body_n
                body.extend((yield inp.body_data).to_bytes(c.payload_bytes(F), "little")[:n])
                if (yield inp.at_decision):
                    decisions.append(((yield inp.hdr), (yield inp.key), (yield inp.length)))
    beats = [b for u in units for b in unit_beats(u, F)]
    run_simulation(m, [send_beats(inp.sink, beats, random.Random(0), passive=True), watch()])
    padded = short + bytes(c.L2_PACKET_BYTES - len(short))
    assert bytes(body) == u1[c.L2_HEADER_BYTES:] + padded[c.L2_HEADER_BYTES:] + u2[c.L2_HEADER_BYTES:]
    prefix = lambda u: int.from_bytes(u[c.L2_LENGTH_OFFSET:c.L2_FIRST_DATA_OFFSET], "big")    # a continuation's: data
    assert decisions == [(r, c.reply_route(r), prefix(u)) for r, u in ((r1, u1), (r2, short), (r1, u2))]
    assert prefix(u1) == 300 and prefix(short) == 40
    assert cnt == {"segments": 3, "malformed": 2}


def test_packet_store_alone():
    """L2PacketStore: segment bodies of two contexts in, interleaved, with a unit that is not kept; the packets
    leave whole in completion order with their context's parameters, each freeing its context."""
    F, dw, M = 256, 64, 32
    rng = random.Random(82)
    pa, pb = bytes(rng.getrandbits(8) for _ in range(300)), bytes(rng.getrandbits(8) for _ in range(100))
    ra, rb = random_route(rng), random_route(rng)
    (a0, a1), (b0,) = ref.segment(pa, ra), ref.segment(pb, rb)
    junk = bytes(rng.getrandbits(8) for _ in range(c.L2_PACKET_BYTES))
    plan = [(a0, 0, 0, 1, 0), (b0, 1, 0, 1, 1), (junk, 1, 0, 0, 0), (a1, 0, 1, 1, 1)]   # (unit, ctx, seg, keep, complete)
    m = LiteXModule()
    m.store = st = L2PacketStore(dw, n_sources=2, slots=2, word_bytes=M)
    params = [(len(pa), ra, c.reply_route(ra)), (len(pb), rb, c.reply_route(rb))]
    m.comb += [getattr(st, name).eq(Array(C(p[k], len(getattr(st, name))) for p in params)[st.lookup])
               for k, name in enumerate(("length", "header", "reply"))]
    got, freed = [], []

    def feed():
        for unit, *decision in plan:
            yield st.units.valid.eq(1)
            for name, v in zip(("ctx", "seg", "keep", "complete"), decision):
                yield getattr(st.units, name).eq(v)
            yield
            while not (yield st.units.ready):
                yield
            yield st.units.valid.eq(0)
            body = unit[c.L2_HEADER_BYTES:]
            for k in range(0, c.SEGMENT_BYTES, M):
                yield st.words.valid.eq(1)
                yield st.words.data.eq(int.from_bytes(body[k:k + M], "little"))
                yield
            yield st.words.valid.eq(0)

    def watch():
        for _ in range(400):
            if (yield st.out_beat) and (yield st.out_last):
                freed.append((yield st.out_ctx))
            yield
    run_simulation(m, [feed(), collect_packets(st.source, got, random.Random(83), dw, 0.7), watch()])
    assert got == [(pb, len(pb), rb, c.reply_route(rb)), (pa, len(pa), ra, c.reply_route(ra))]
    assert freed == [1, 0]


def test_parameter_checks():
    with pytest.raises(ValueError):
        L2Segmenter(256, 96)
    with pytest.raises(ValueError):
        L2Reassembler(256, 32)
    with pytest.raises(ValueError):
        L2Segmenter(100, 64)
    seg = L2Segmenter(256, 64, with_csr=True)
    rea = L2Reassembler(256, 64, with_csr=True)
    assert {csr.name for csr in seg.get_csrs()} == {"packets", "segments", "bad_length", "length_errors"}
    assert len(rea.get_csrs()) == len(c.L2_RX_COUNTERS) + 1            # the counters and `timeout`


@pytest.mark.skipif(not __import__("sim.verilated").verilated.available(), reason="needs Verilator")
def test_segmenter_longest_packets_in_verilog():
    """The Verilog of the segmenter against reference.segment for the longest packets: the segment count
    (length + 2 + 255) >> 8 once took the 16-bit width of `length` in Verilog and wrapped to 0 for lengths
    above 65278 (invisible in Migen's simulator)."""
    import random
    from sim.verilated import CycleSim
    from cores.rifl.common import L2_MAX_PACKET_BYTES, payload_bytes
    from software.rifl.reference import segment
    F, W = 64, 8
    P = payload_bytes(F)
    seg = L2Segmenter(F, W * 8)
    ports = {"valid": (seg.sink.valid, True), "last": (seg.sink.last, True), "data": (seg.sink.data, True),
             "length": (seg.sink.length, True), "route": (seg.sink.route, True), "ready": (seg.sink.ready, False),
             "o_valid": (seg.source.valid, False), "o_data": (seg.source.data, False),
             "o_nbytes": (seg.source.nbytes, False), "o_last": (seg.source.last, False),
             "o_ready": (seg.source.ready, True)}
    sim = CycleSim(seg, ports, name="l2_segmenter_long")
    rng = random.Random(5)
    try:
        for length in (L2_MAX_PACKET_BYTES, 65279, 65278):
            pkt = bytes(rng.randrange(256) for _ in range(length))
            route = 0x2112_3456_789A
            beats = [pkt[k:k + W] for k in range(0, length, W)]
            got, cur, i = [], b"", 0
            while len(got) < -(-(length + 2) // 256) or i < len(beats):
                if i < len(beats):
                    data = int.from_bytes(beats[i], "little")
                    out = sim.step(valid=1, last=int(i == len(beats) - 1), data=data, length=length, route=route,
                                   o_ready=1)
                    i += out["ready"]
                else:
                    out = sim.step(valid=0, o_ready=1)
                if out["o_valid"]:
                    cur += out["o_data"].to_bytes(P, "little")[:out["o_nbytes"]]
                    if out["o_last"]:
                        got.append(cur)
                        cur = b""
                assert sim.cycle < 40 * length, f"length {length}: {len(got)} segments"
            assert got == segment(pkt, route), length
    finally:
        sim.close()

"""RIFL Layer 2 per-source reassembly (cores/rifl/l2/rx.py L2Reassembler): segments of several sources
interleaved at random against the Python Reassembler (software/rifl/reference.py), context exhaustion, orphan
continuation segments, packets longer than max_packet, the per-context idle timeout, bad parameters."""
import random

import pytest
from migen.sim import run_simulation

from cores.rifl import common as c
from cores.rifl.l2 import L2Reassembler
from software.rifl import reference as ref
from tests.harness.rifl import collect_packets, send_beats, unit_beats
from tests.harness.tiers import extended


def source_headers(rng, n):
    """n headers as received at the end of a path (remain 0) with distinct reply routes."""
    out, keys = [], set()
    while len(out) < n:
        total = rng.randint(1, c.MAX_HOPS)
        h = c.l2_header_pack(total, 0, [rng.randrange(256) for _ in range(c.MAX_HOPS)])
        if c.reply_route(h) not in keys:
            keys.add(c.reply_route(h))
            out.append(h)
    return out


def boundary_lengths(segments, limit=4096):
    """1..3, `limit` and the lengths whose prefixed stream ends one byte before, on or after the end of
    segment k, for k in `segments`."""
    out = {1, 2, 3, limit}
    for k in segments:
        out |= {n for n in (k * c.SEGMENT_BYTES - c.L2_LENGTH_BYTES + d for d in (-1, 0, 1)) if 1 <= n <= limit}
    return sorted(out)


def interleave(rng, per_source):
    """Random interleaving of the sources' unit lists, each source's order kept."""
    queues = [list(q) for q in per_source if q]
    out = []
    while queues:
        q = rng.choice(queues)
        out.append(q.pop(0))
        if not q:
            queues.remove(q)
    return out


def read_counters(rea, counters, settle=3):
    """After `settle` cycles (the last decisions land), every counter of `rea` into `counters`."""
    for _ in range(settle):
        yield
    for k, v in rea.counters.items():
        counters[k] = yield v


def run_units(rea, units, F, dw, seed, valid_p=1.0, ready_p=1.0, cycles=None):
    """Feed Layer 1 units (bytes) into the reassembler; returns (packets, counters, stats): stats "t" the
    cycle all segments were taken and all packets delivered, "stalls" the cycles with sink.valid and not
    sink.ready, "first_in"/"last_in" the cycles the first/last Layer 1 beat was taken, "out" the cycles
    a beat left on source."""
    beats = [b for u in units for b in unit_beats(u, F)]
    got, counters = [], {}
    budget = cycles or 300 + int(len(beats) / min(valid_p, ready_p) * 3)
    stats = {"stalls": 0, "out": []}

    def wait():
        taken = 0
        for t in range(budget):
            if (yield rea.counters["segments"]) == len(units) and \
                    (yield rea.counters["delivered"]) == (yield rea.counters["packets"]):
                break
            if (yield rea.sink.valid):
                if (yield rea.sink.ready):
                    taken += 1
                    stats.setdefault("first_in", t)
                    if taken == len(beats):
                        stats["last_in"] = t
                else:
                    stats["stalls"] += 1
            if (yield rea.source.valid) and (yield rea.source.ready):
                stats["out"].append(t)
            yield
        stats["t"] = t
        yield from read_counters(rea, counters)
    run_simulation(rea, [send_beats(rea.sink, beats, random.Random(seed), valid_p, passive=True),
                         collect_packets(rea.source, got, random.Random(seed + 1), dw, ready_p), wait()])
    assert stats["t"] < budget - 1, f"not finished in {budget} cycles: {counters}"
    return got, counters, stats


def model(units):
    """The Python Reassembler fed the same units: [(packet, length, header of the first segment, reply)]."""
    r, firsts, out = ref.Reassembler(), {}, []
    for u in units:
        h = int.from_bytes(u[:c.L2_HEADER_BYTES], "big")
        firsts.setdefault(c.reply_route(h), h)
        done = r.feed(u)
        if done:
            key, pkt = done
            out.append((pkt, len(pkt), firsts.pop(key), key))
    return out


@pytest.mark.parametrize("F,dw,n,sources,lengths", [
    extended(256, 256, 4, 4, "boundaries"),  # ends of segments 1-3 and 16, 4096 bytes, random lengths
    extended(128, 64, 3, 3, "random"),  # 8-byte output beats: the output is the bottleneck
    (64, 64, 2, 2, "short"),            # 6-byte Layer 1 beats: the length prefix in the second beat
    (512, 512, 4, 4, "random"),
])
def test_interleaved_sources_against_model(F, dw, n, sources, lengths):
    """Segments of several sources in random interleaving, random lengths including segment boundaries,
    random valid/ready: the packets equal the Python Reassembler's, in the same order, nothing dropped."""
    rng = random.Random(F * 7 + dw + n)
    headers = source_headers(rng, sources)
    if lengths == "boundaries":
        pool = boundary_lengths((1, 2, 3, 16)) + [rng.randint(1, 4096) for _ in range(4)]
        rng.shuffle(pool)
    elif lengths == "short":
        pool = [rng.choice([1, 253, 254, 255, 510]) for _ in range(2 * sources)]
    else:
        pool = [rng.choice([rng.randint(1, 4096), rng.randint(1, 600)]) for _ in range(2 * sources)]
    per_source = [[] for _ in range(sources)]
    for k, L in enumerate(pool):
        s = k % sources
        per_source[s] += ref.segment(bytes(rng.getrandbits(8) for _ in range(L)), headers[s])
    units = interleave(rng, per_source)
    rea = L2Reassembler(F, dw, n_sources=n)
    got, cnt, _ = run_units(rea, units, F, dw, seed=F, valid_p=0.85, ready_p=0.7)
    exp = model(units)
    assert got == exp
    assert cnt["packets"] == cnt["delivered"] == len(pool)
    assert cnt["segments"] == len(units)
    assert all(cnt[k] == 0 for k in ("bad_length", "malformed", "no_context", "too_long", "orphans", "untracked"))


def packet(rng, length, prefix_at=None):
    """Random packet bytes; prefix_at: {offset: 2-byte value} planted (a continuation segment's first bytes)."""
    p = bytearray(rng.getrandbits(8) for _ in range(length))
    for off, v in (prefix_at or {}).items():
        p[off:off + 2] = v.to_bytes(2, "big")
    return bytes(p)


def test_context_exhaustion_and_orphans():
    """Two contexts, three sources: the third source's first segment finds both contexts assembling and
    is dropped, its continuation (an orphan) too; a later packet of that source, arriving while the two
    complete packets wait for the output, waits for a context and is delivered."""
    rng = random.Random(5)
    A, B, C = source_headers(rng, 3)
    pa, pb, pc, pc2 = packet(rng, 700), packet(rng, 600), packet(rng, 500), packet(rng, 300)
    sa, sb, sc, sc2 = (ref.segment(p, h) for p, h in ((pa, A), (pb, B), (pc, C), (pc2, C)))
    units = [sa[0], sb[0], sc[0], sa[1], sc[1], sb[1], sa[2], sb[2], sc2[0], sc2[1]]
    rea = L2Reassembler(256, 64, n_sources=2)
    got, cnt, _ = run_units(rea, units, 256, 64, seed=6, valid_p=0.9, ready_p=0.3)
    assert [(g[0], g[2]) for g in got] == [(pa, A), (pb, B), (pc2, C)]
    assert [g[3] for g in got] == [c.reply_route(h) for h in (A, B, C)]
    assert cnt == {"packets": 3, "delivered": 3, "segments": 10, "bad_length": 0, "malformed": 0,
                   "no_context": 1, "too_long": 0, "orphans": 1, "untracked": 0, "timeouts": 0}


def test_skip_entries_exhausted():
    """One context and one skip entry: B's dropped packet is skipped (orphans), C's finds no skip entry
    (untracked) and its continuation segments are read as first segments (here with length prefix 0:
    bad_length); A and a later packet of B are delivered intact."""
    rng = random.Random(7)
    A, B, C = source_headers(rng, 3)
    pa, pb, pb2 = packet(rng, 600), packet(rng, 600), packet(rng, 40)
    pc = packet(rng, 600, {254: 0, 510: 0})
    sa, sb, sc, sb2 = (ref.segment(p, h) for p, h in ((pa, A), (pb, B), (pc, C), (pb2, B)))
    units = [sa[0], sb[0], sc[0], sa[1], sb[1], sc[1], sa[2], sb[2], sc[2], sb2[0]]
    rea = L2Reassembler(256, 128, n_sources=1)
    got, cnt, _ = run_units(rea, units, 256, 128, seed=8, valid_p=0.8, ready_p=0.5)
    assert [(g[0], g[2]) for g in got] == [(pa, A), (pb2, B)]
    assert cnt == {"packets": 2, "delivered": 2, "segments": 10, "bad_length": 2, "malformed": 0,
                   "no_context": 2, "too_long": 0, "orphans": 2, "untracked": 1, "timeouts": 0}


def test_too_long_for_max_packet():
    """max_packet 300: a 1000-byte packet is dropped (too_long) with its 3 continuation segments
    (orphans); packets of 300 and 1 bytes interleaved with it pass."""
    rng = random.Random(9)
    A, B = source_headers(rng, 2)
    big, p300, p1 = packet(rng, 1000), packet(rng, 300), packet(rng, 1)
    sbig, s300, s1 = ref.segment(big, A), ref.segment(p300, B), ref.segment(p1, A)
    units = [sbig[0], s300[0], sbig[1], sbig[2], s300[1], sbig[3], s1[0]]
    rea = L2Reassembler(256, 256, n_sources=2, max_packet=300)
    assert rea.memory_bytes == 2 * 2 * c.SEGMENT_BYTES
    got, cnt, _ = run_units(rea, units, 256, 256, seed=10, valid_p=0.7, ready_p=0.8)
    assert [(g[0], g[2]) for g in got] == [(p300, B), (p1, A)]
    assert cnt["too_long"] == 1 and cnt["orphans"] == 3 and cnt["packets"] == 2 and cnt["no_context"] == 0


def test_line_rate_interleaved():
    """F = 256, 256-bit beats, 4 sources, no back-pressure: the sink takes one Layer 1 beat a cycle over
    the whole run (no stall); once every packet is complete the packets waiting for the output leave
    at one beat a cycle, with at most one idle cycle between packets."""
    rng = random.Random(11)
    headers = source_headers(rng, 4)
    lengths = (4094, 1500, 254, 3000)
    per_source = [ref.segment(packet(rng, L), h) for L, h in zip(lengths, headers)]
    units = interleave(rng, per_source)
    rea = L2Reassembler(256, 256, n_sources=4)
    got, cnt, st = run_units(rea, units, 256, 256, seed=12)
    assert got == model(units)
    assert st["stalls"] == 0
    beats = len(units) * -(-c.L2_PACKET_BYTES // c.payload_bytes(256))
    assert st["last_in"] - st["first_in"] == beats - 1
    tail = [t for t in st["out"] if t > st["last_in"] + 4]
    gaps = [b - a for a, b in zip(tail, tail[1:])]
    assert len(tail) > 100 and set(gaps) <= {1, 2} and gaps.count(2) <= len(lengths)


def test_parameters():
    for bad in (0, c.L2_RX_CONTEXTS_MAX + 1, 2.0):
        with pytest.raises(ValueError):
            L2Reassembler(256, 64, n_sources=bad)
    for bad in (0, c.L2_MAX_PACKET_BYTES + 1):
        with pytest.raises(ValueError):
            L2Reassembler(256, 64, max_packet=bad)
    for bad in (0, 4, 257, 2**c.L2_RX_TIMEOUT_BITS, 256.0):
        with pytest.raises(ValueError):
            L2Reassembler(256, 64, timeout=bad)
    assert L2Reassembler(256, 64).timeout == c.L2_RX_TIMEOUT
    rea = L2Reassembler(256, 64, with_csr=True)
    assert rea.memory_bytes == c.L2_RX_CONTEXTS * 256 * c.SEGMENT_BYTES
    assert {csr.name for csr in rea.get_csrs()} == {"packets", "delivered", "segments", "bad_length",
                                                     "malformed", "no_context", "too_long", "orphans",
                                                     "untracked", "timeouts", "timeout"}
    assert rea._timeout.fields.cycles.reset.value == c.L2_RX_TIMEOUT


def test_senders_through_switch():
    """Three senders on inputs 0..2 of a 4-port RIFLSwitch send multi-segment packets to output 3; the
    switch interleaves their 256-byte cells, which enter one reassembler as Layer 1 units (header and
    segment): every sender's packets come out whole and in order, equal to the Python Reassembler's."""
    from litex.gen import LiteXModule
    from cores.switch.switch import RIFLSwitch

    N, SW, OUT = 4, 512, 3
    SB = SW // 8

    class Top(LiteXModule):
        def __init__(self):
            self.sw = RIFLSwitch(N, SW, voq_cells=16, iterations=1)
            self.rea = L2Reassembler(256, 256, n_sources=4)
    top = Top()
    rng = random.Random(13)
    sent = {}
    for i in range(3):
        header = c.l2_header_pack(1, 1, [(OUT - i) % N])
        sent[i] = (header, [packet(rng, rng.randint(200, 1500)) for _ in range(2)])
    queue, order = [], []

    def sender(i):
        header, packets = sent[i]
        r = random.Random(20 + i)
        sink = top.sw.sinks[i]
        for p in packets:
            for unit in ref.segment(p, header):
                body = unit[c.L2_HEADER_BYTES:]
                while r.random() < 0.3:
                    yield sink.valid.eq(0)
                    yield
                for k in range(len(body) // SB):
                    yield sink.valid.eq(1)
                    yield sink.header.eq(header)
                    yield sink.data.eq(int.from_bytes(body[k * SB:(k + 1) * SB], "little"))
                    yield sink.last.eq(k == len(body) // SB - 1)
                    yield
                    while not (yield sink.ready):
                        yield
        yield sink.valid.eq(0)

    def to_units():
        """Switch output cells -> Layer 1 units (the forwarded header, then the segment)."""
        yield "passive"
        for i in range(N):
            yield top.sw.fcs[i].ready.eq(1)
        src = top.sw.sources[OUT]
        yield src.ready.eq(1)
        body = bytearray()
        while True:
            yield
            if (yield src.valid):
                body += (yield src.data).to_bytes(SB, "little")
                if (yield src.last):
                    queue.append(c.l2_header_bytes((yield src.header)) + bytes(body))
                    order.append(queue[-1])
                    body = bytearray()

    def feed():
        yield "passive"
        r = random.Random(30)
        while True:
            while not queue:
                yield top.rea.sink.valid.eq(0)
                yield
            yield from send_beats(top.rea.sink, unit_beats(queue.pop(0), 256), r, 0.9)

    got, res = [], {}
    npackets = sum(len(p) for _, p in sent.values())

    def wait():
        for t in range(6000):
            if len(got) == npackets:
                break
            yield
        res["t"] = t
        res["drops"], res["cnt"] = [], {}
        for inp in top.sw.inputs:
            res["drops"].append((yield inp.counters["drop_full"]))
        for k, v in top.rea.counters.items():
            res["cnt"][k] = yield v
    run_simulation(top, [sender(i) for i in range(3)] +
                   [to_units(), feed(), collect_packets(top.rea.source, got, random.Random(31), 256, 0.8), wait()])
    assert res["t"] < 5999 and res["drops"] == [0] * N, res
    assert got == model(order)
    keys = [c.reply_route(int.from_bytes(u[:c.L2_HEADER_BYTES], "big")) for u in order]
    assert sum(a != b for a, b in zip(keys, keys[1:])) >= 5          # the switch really interleaved them
    for i, (header, packets) in sent.items():
        key = c.reply_route(c.l2_forward(header))
        assert [g[0] for g in got if g[3] == key] == packets
    assert res["cnt"]["no_context"] == res["cnt"]["orphans"] == res["cnt"]["malformed"] == 0


def run_timed(rea, schedule, F, dw, seed, valid_p=1.0, ready_p=1.0, npackets=None, timeout_csr=None):
    """Feed (gap, unit) pairs: `gap` idle cycles, then the unit's Layer 1 beats (timeout_csr: first written
    into the `timeout` CSR's storage, as the CSR bus would). Returns (packets,
    counters, stats): stats "done" the cycle each unit's last beat was taken, "timeouts" the cycles the
    timeouts counter rose, "t" the cycle every unit was taken and npackets packets delivered."""
    got, counters, stats = [], {}, {"done": [], "timeouts": []}
    budget = 400 + sum(g for g, _ in schedule) + 20 * len(schedule) * -(-c.L2_PACKET_BYTES // c.payload_bytes(F))
    clock = {"t": 0}

    def sender():
        rng = random.Random(seed)
        if timeout_csr is not None:
            yield rea._timeout.storage.eq(timeout_csr)
            yield
        for gap, unit in schedule:
            yield rea.sink.valid.eq(0)
            for _ in range(gap):
                yield
            for d, nb, last in unit_beats(unit, F):
                while rng.random() > valid_p:
                    yield rea.sink.valid.eq(0)
                    yield
                yield rea.sink.valid.eq(1)
                yield rea.sink.data.eq(d)
                yield rea.sink.nbytes.eq(nb)
                yield rea.sink.last.eq(last)
                yield
                while not (yield rea.sink.ready):
                    yield
            stats["done"].append(clock["t"])
        yield rea.sink.valid.eq(0)

    def wait():
        prev = 0
        for t in range(budget):
            clock["t"] = t
            now = yield rea.counters["timeouts"]
            if now != prev:
                stats["timeouts"].append(t)
                prev = now
            if (yield rea.counters["segments"]) == len(schedule) and len(got) == npackets:
                break
            yield
        stats["t"] = t
        yield from read_counters(rea, counters)
    run_simulation(rea, [sender(), collect_packets(rea.source, got, random.Random(seed + 1), dw, ready_p),
                         wait()])
    assert stats["t"] < budget - 1, f"not finished in {budget} cycles: {counters}"
    return got, counters, stats


def model_timed(timed_units, timeout):
    """The Python Reassembler with `timeout`, fed (time, unit) pairs: [(packet, length, header, reply)]
    and the model."""
    r, out = ref.Reassembler(timeout), []
    for now, u in timed_units:
        h = int.from_bytes(u[:c.L2_HEADER_BYTES], "big")
        done = r.feed(u, now)
        if done:
            key, pkt = done
            out.append((pkt, len(pkt), h, key))
    return out, r


T = 256          # timeout of the timeout tests, cycles


@pytest.mark.parametrize("via_csr", [False, True])
def test_timeout_dead_sender(via_csr):
    """One context: A sends 2 of the 4 segments of a packet and stops. Without a timeout B's packet would
    find the context taken (no_context); with it, after more than T and at most 1.25 T idle cycles A's
    context is freed (timeouts 1), B's packet is reassembled whole, A's late third segment is an orphan,
    and after 3 T of silence a new packet of A is reassembled whole; the partial packet never leaves.
    via_csr: built with the default timeout, T written into the `timeout` CSR at run time."""
    rng = random.Random(40)
    A, B = source_headers(rng, 2)
    pa, pb, pa2 = packet(rng, 1000), packet(rng, 400), packet(rng, 600)
    sa, sb, sa2 = ref.segment(pa, A), ref.segment(pb, B), ref.segment(pa2, A)
    schedule = [(0, sa[0]), (0, sa[1]), (int(1.4 * T), sb[0]), (0, sb[1]), (0, sa[2]), (3 * T, sa2[0]), (0, sa2[1]),
                (0, sa2[2])]
    if via_csr:
        rea = L2Reassembler(256, 256, n_sources=1, with_csr=True)
        got, cnt, st = run_timed(rea, schedule, 256, 256, seed=41, ready_p=0.8, npackets=2, timeout_csr=T)
    else:
        rea = L2Reassembler(256, 256, n_sources=1, timeout=T)
        got, cnt, st = run_timed(rea, schedule, 256, 256, seed=41, ready_p=0.8, npackets=2)
    assert [(g[0], g[2]) for g in got] == [(pb, B), (pa2, A)]
    assert cnt == {"packets": 3, "delivered": 2, "segments": 8, "bad_length": 0, "malformed": 0, "no_context": 0,
                   "too_long": 0, "orphans": 1, "untracked": 0, "timeouts": 1}
    assert len(st["timeouts"]) == 1
    idle = st["timeouts"][0] - st["done"][1]
    assert T < idle <= 1.25 * T + 4, idle


def test_timeout_slow_sender_kept():
    """A live sender whose segments come just under T cycles apart (decision to decision) is never timed
    out, through a 9-segment packet, and its packet is whole; a faster source interleaved is unaffected."""
    rng = random.Random(42)
    A, B = source_headers(rng, 2)
    pa, pb = packet(rng, 2200), packet(rng, 300)
    sa, sb = ref.segment(pa, A), ref.segment(pb, B)
    nb = -(-c.L2_PACKET_BYTES // c.payload_bytes(256))
    schedule = [(0, sa[0])] + [(T - nb, u) for u in sa[1:]]
    schedule[3:3] = [(0, sb[0]), (0, sb[1])]
    schedule[5] = (T - 3 * nb, schedule[5][1])          # B's two units are part of A's gap
    rea = L2Reassembler(256, 256, n_sources=2, timeout=T)
    got, cnt, st = run_timed(rea, schedule, 256, 256, seed=43, npackets=2)
    assert [(g[0], g[2]) for g in got] == [(pb, B), (pa, A)]
    assert cnt["timeouts"] == 0 and cnt["orphans"] == 0 and cnt["delivered"] == 2
    gaps = [b - a for a, b in zip(st["done"], st["done"][1:])]
    assert max(gaps) >= T - 2            # the gaps really were just under the timeout


def timed_schedule(rng, headers, steps):
    """Random traffic with silences: (gap, unit) pairs and model times (in T). Gaps: none, "medium" 1.6 T
    (assembling contexts time out, their skip entries stay: continuations become orphans) or "long" 3 T
    (everything expires); at most 5 units between silences, so that the units' own cycles stay well
    inside the margins. A source dies mid-packet at random (its rest is never sent) and stays silent
    until a long gap; after a medium gap a source mid-packet sends its rest (orphans), or dies."""
    n = len(headers)
    rest = [[] for _ in range(n)]          # units of the current packet still to send
    state = ["ok"] * n                     # ok, orphaning (the packet was timed out), dead
    sched, times, now, gap, phase = [], [], 0.0, 0, 0
    for _ in range(steps):
        r = rng.random()
        if phase >= 5 or r < 0.12:
            g = rng.choice([1.6, 3.0])
            now += g
            gap, phase = int(g * T), 0
            for s in range(n):
                if g == 3.0:
                    rest[s], state[s] = [], "ok"
                elif rest[s]:
                    if state[s] == "ok" and rng.random() < 0.7:
                        state[s] = "orphaning"
                    else:
                        rest[s], state[s] = [], "dead"
            continue
        if r < 0.18:
            s = rng.randrange(n)
            if rest[s]:
                rest[s], state[s] = [], "dead"
            continue
        live = [s for s in range(n) if state[s] != "dead"]
        if not live:
            continue
        s = rng.choice(live)
        if not rest[s]:
            state[s] = "ok"
            rest[s] = ref.segment(packet(rng, rng.choice([rng.randint(1, 300), rng.randint(1, 1200)])), headers[s])
        sched.append((gap, rest[s].pop(0)))
        times.append(now)
        gap, phase = 0, phase + 1
    return sched, times


@pytest.mark.extended
def test_timeout_random_against_model():
    """Random traffic of 4 sources with silences, dead senders and late continuations, F = 512, random
    valid/ready: packets, their order, timeouts and orphans equal the Python Reassembler with the same
    timeout rule; no partial packet leaves, nothing else is dropped."""
    rng = random.Random(44)
    headers = source_headers(rng, 4)
    sched, times = timed_schedule(rng, headers, 70)
    exp, r = model_timed(list(zip(times, [u for _, u in sched])), 1.0)
    assert r.timeouts >= 3 and r.orphans >= 2           # the schedule exercises both
    rea = L2Reassembler(512, 512, n_sources=4, timeout=T)
    got, cnt, _ = run_timed(rea, sched, 512, 512, seed=45, valid_p=0.9, ready_p=0.7, npackets=len(exp))
    assert got == exp
    assert cnt["timeouts"] == r.timeouts and cnt["orphans"] == r.orphans and cnt["delivered"] == len(exp)
    assert cnt["segments"] == len(sched)
    assert all(cnt[k] == 0 for k in ("bad_length", "malformed", "no_context", "too_long", "untracked"))

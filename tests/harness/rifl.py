"""Simulation helpers shared by the RIFL tests: Layer 1 beat sources and sinks with random back-pressure,
Layer 2 units fed into a reassembler and its packets collected."""
from cores.rifl import common as c


def send_beats(sink, beats, rng, valid_p=1.0, passive=False):
    """Drive beats (data, nbytes, last) into a user_layout sink in order; before each beat, idle cycles
    while rng.random() > valid_p. `passive`: the simulation may end before every beat is sent."""
    if passive:
        yield "passive"
    for d, n, l in beats:
        while rng.random() > valid_p:
            yield sink.valid.eq(0)
            yield
        yield sink.valid.eq(1)
        yield sink.data.eq(d)
        yield sink.nbytes.eq(n)
        yield sink.last.eq(l)
        yield
        while not (yield sink.ready):
            yield
    yield sink.valid.eq(0)


def collect_beats(source, out, rng, ready_p=1.0, times=None):
    """Passive: every cycle ready with probability ready_p; appends each beat taken as (data, nbytes, last)
    to `out` and, if given, its cycle to `times`."""
    yield "passive"
    t = 0
    while True:
        yield source.ready.eq(rng.random() < ready_p)
        yield
        t += 1
        if (yield source.valid) and (yield source.ready):
            out.append(((yield source.data), (yield source.nbytes), (yield source.last)))
            if times is not None:
                times.append(t)


def unit_beats(unit, frame_bits):
    """A Layer 1 packet (bytes) as user_layout beats (data, nbytes, last) of payload_bytes(frame_bits)."""
    P = c.payload_bytes(frame_bits)
    chunks = [unit[i:i + P] for i in range(0, len(unit), P)]
    return [(int.from_bytes(b, "little"), len(b), i == len(chunks) - 1) for i, b in enumerate(chunks)]


def collect_packets(source, out, rng, data_width, ready_p=1.0):
    """Passive: takes an L2Reassembler's packets with random ready and appends (data, length, header,
    reply); checks that `last` marks the beat that completes `length` and that the params hold."""
    W = data_width // 8
    yield "passive"
    cur, left, params = bytearray(), None, None
    while True:
        yield source.ready.eq(rng.random() < ready_p)
        yield
        if (yield source.valid) and (yield source.ready):
            now = ((yield source.length), (yield source.header), (yield source.reply))
            if left is None:
                params, left = now, now[0]
            assert now == params, "packet parameters changed inside a packet"
            take = min(W, left)
            word = (yield source.data).to_bytes(W, "little")
            assert word[take:] == bytes(W - take), "bytes beyond the packet's length are not zero"
            cur += word[:take]
            left -= take
            assert (yield source.last) == (left == 0)
            if left == 0:
                out.append((bytes(cur),) + params)
                cur, left = bytearray(), None

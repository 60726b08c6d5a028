"""Stream helpers for Migen simulations: drive beats into a `sink` and collect beats from a `source` with
seeded random valid/ready. A beat is a dict of endpoint field -> value (payload fields, params, `last`,
`first`); fields not given keep 0."""


def send(sink, beats, rng, valid_p=1.0, passive=False, times=None):
    """Generator: drive `beats` into `sink` in order; before each beat, idle cycles while
    rng.random() >= valid_p. `passive`: the simulation may end before every beat is sent. `times` (a list)
    receives the cycle each beat was accepted."""
    if passive:
        yield "passive"
    t = 0
    for beat in beats:
        while rng.random() >= valid_p:
            yield sink.valid.eq(0)
            yield
            t += 1
        yield sink.valid.eq(1)
        for name, value in beat.items():
            yield getattr(sink, name).eq(value)
        yield
        t += 1
        while not (yield sink.ready):
            yield
            t += 1
        if times is not None:
            times.append(t)
        for name in beat:
            yield getattr(sink, name).eq(0)
    yield sink.valid.eq(0)


def collect(source, out, rng, fields, ready_p=1.0, times=None):
    """Passive generator: every cycle ready with probability ready_p; appends each beat taken as a dict of
    `fields` to `out` and, if given, its cycle to `times`."""
    yield "passive"
    t = 0
    while True:
        yield source.ready.eq(rng.random() < ready_p)
        yield
        t += 1
        if (yield source.valid) and (yield source.ready):
            beat = {}
            for f in fields:
                beat[f] = yield getattr(source, f)
            out.append(beat)
            if times is not None:
                times.append(t)


def packets(beats):
    """Split collected beats (dicts with `last`) into packets (lists of beats); an unfinished packet at
    the end is dropped."""
    out, cur = [], []
    for b in beats:
        cur.append(b)
        if b["last"]:
            out.append(cur)
            cur = []
    return out


def frame_beats(frame, dw):
    """A frame as (data, last, last_be) beats of a dw-bit LiteEth PHY-layout port: byte k of a beat in bits
    8k..8k+7, last_be one-hot on the last beat's last valid byte."""
    B = dw // 8
    out = []
    for i in range(0, len(frame), B):
        chunk = frame[i:i + B]
        last = i + B >= len(frame)
        out.append((int.from_bytes(chunk, "little"), int(last), (1 << (len(chunk) - 1)) if last else 0))
    return out

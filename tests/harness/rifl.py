"""The RIFL test harness: the link bench (cores.rifl.link_bench.RIFLLinkBench) run with random traffic both
ways under a schedule of line events, random user beats (data, nbytes, last) sent and collected with random
valid/ready, the independent reference frame encoder, Layer 2 units fed into a reassembler and its packets
collected."""
import random

from migen.sim import run_simulation

from cores.rifl import common as c
from tests.harness import streams


# Independent reference: CRC-12 by polynomial long division, scrambler by its recurrence, frame encoder ----

def ref_crc12(bits):
    """CRC of a list of bits (first sent first): remainder of M(x) * x^12 divided by x^12+x^5+x^3+x^2+x+1."""
    gen = [1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 1, 1, 1]  # x^12 .. x^0
    reg = list(bits) + [0] * 12
    for i in range(len(bits)):
        if reg[i]:
            for k in range(13):
                reg[i + k] ^= gen[k]
    return int("".join(map(str, reg[-12:])), 2)


def to_bits(value, n):
    return [(value >> (n - 1 - i)) & 1 for i in range(n)]


def ref_lfsr_mask(n):
    """x^58+x^39+1 sequence: s[k] = s[k-58] ^ s[k-39], state initialised to ones, SCRAMBLER_SKIP bits skipped."""
    seq = [1] * 58
    while len(seq) < 58 + c.SCRAMBLER_SKIP + n:
        seq.append(seq[-58] ^ seq[-39])
    return int("".join(map(str, seq[58 + c.SCRAMBLER_SKIP:])), 2)


def ref_frame(F, sync, meta, payload, frame_id):
    P = F - 16
    body = (sync << (P + 2)) | (meta << P) | payload
    check = ref_crc12(to_bits(body, F - 12)) ^ frame_id
    return (((body ^ ref_lfsr_mask(P)) << 12) | check)


def ref_ctrl_payload(F, code, seq, recovering=0):
    P = F - 16
    return (code << (P - 4)) | (seq << (P - 16)) | (recovering << (P - 17))


def ref_ctrl_frame(F, code, seq, recovering=0):
    """An unnumbered control frame (IDLE, PAUSE, RETRANS, REPLAY)."""
    return ref_frame(F, c.SYNC_CTRL, 0, ref_ctrl_payload(F, code, seq, recovering), 0)


# User beats (data, nbytes, last) -----------------------------------------------------------------------------

def random_beats(rng, F, n):
    """n random user beats: mostly full, some partial, about a third of them last."""
    P = c.payload_bytes(F)
    return [(rng.getrandbits(8 * P), rng.choice([P, P, rng.randint(1, P)]), rng.random() < 0.3) for _ in range(n)]


def beat_key(beat):
    """What a beat delivers: (valid bytes, nbytes, last)."""
    d, n, l = beat
    return d & ((1 << (8 * n)) - 1), n, bool(l)


def assert_delivered(traffic, got):
    """Every direction's beats arrived exactly once, in order."""
    for d in traffic:
        exp = [beat_key(b) for b in traffic[d]]
        rcv = [beat_key(b) for b in got[d]]
        assert rcv == exp, f"{d}: {len(rcv)} received vs {len(exp)} sent, first difference at " \
            f"{next((i for i, (x, y) in enumerate(zip(rcv, exp)) if x != y), min(len(rcv), len(exp)))}"


_USER_FIELDS = ("data", "nbytes", "last")


def send_beats(sink, beats, rng, valid_p=1.0, passive=False):
    """tests.harness.streams.send of user beats (data, nbytes, last) into a user_layout sink."""
    yield from streams.send(sink, [dict(zip(_USER_FIELDS, b)) for b in beats], rng, valid_p, passive)


class _AsTuples:
    """A list view that stores each collected beat (a dict) as a (data, nbytes, last) tuple."""
    def __init__(self, out):
        self.out = out

    def append(self, beat):
        self.out.append(tuple(beat[f] for f in _USER_FIELDS))


def collect_beats(source, out, rng, ready_p=1.0, times=None):
    """tests.harness.streams.collect of user beats, appended to `out` as (data, nbytes, last)."""
    yield from streams.collect(source, _AsTuples(out), rng, _USER_FIELDS, ready_p, times)


# The link bench --------------------------------------------------------------------------------------------

def line_events(bench, cycles, p_ab=0.0, p_ba=0.0, burst=0, error_window=None, flaps=()):
    """A schedule for run_link: `burst`-bit errors on each channel with per-frame probability p_ab / p_ba
    during error_window (start, stop) (default: the whole run), both channels down during each flap
    (start, stop)."""
    start, stop = error_window or (0, cycles)
    events, prev = [(0, [bench.ab.burst.eq(burst), bench.ba.burst.eq(burst)])], None
    for t in range(cycles):
        state = (start <= t < stop, any(a <= t < b for a, b in flaps))
        if state != prev:
            on, down = prev = state
            events.append((t, [bench.ab.threshold.eq(int(p_ab * 2**32) if on else 0),
                               bench.ba.threshold.eq(int(p_ba * 2**32) if on else 0),
                               bench.ab.down.eq(down), bench.ba.down.eq(down)]))
    return events


def read_counters(bench):
    """Generator: the counters of the bench's endpoints (with link_up), channels (errors) and aligners."""
    out = {}
    for name in ("a", "b", "al_a", "al_b"):
        m = getattr(bench, name, None)
        if m is not None:
            out[name] = {}
            for k, sig in m.counters.items():
                out[name][k] = yield sig
    for name in ("a", "b"):
        out[name]["link_up"] = yield getattr(bench, name).link_up
    for name in ("ab", "ba"):
        out[f"{name}_errors"] = yield getattr(bench, name).counters["errors"]
    return out


def run_link(bench, traffic, cycles, seed=1, valid_p=1.0, ready_p=1.0, events=(), done_after=None):
    """Send traffic["ab"] into A and traffic["ba"] into B (random valid, seeds seed + 1, seed + 2), take
    them at B and A (random ready, seeds seed + 3, seed + 4), apply `events` ((cycle, statements) pairs:
    line errors, downs, slips) and run `cycles` cycles, or stop once every beat has arrived after cycle
    `done_after`. Returns (got, times, counters): the beats and their cycles per direction, read_counters
    at the end."""
    got, times, counters = {"ab": [], "ba": []}, {"ab": [], "ba": []}, {}
    schedule = {}
    for t, statements in events:
        schedule.setdefault(t, []).extend(statements)

    def drive():
        for t in range(cycles):
            if done_after is not None and t > done_after and all(len(got[d]) == len(traffic[d]) for d in got):
                break
            for s in schedule.get(t, []):
                yield s
            yield
        counters.update((yield from read_counters(bench)))
    run_simulation(bench, [
        send_beats(bench.a.sink, traffic["ab"], random.Random(seed + 1), valid_p, passive=True),
        send_beats(bench.b.sink, traffic["ba"], random.Random(seed + 2), valid_p, passive=True),
        collect_beats(bench.b.source, got["ab"], random.Random(seed + 3), ready_p, times["ab"]),
        collect_beats(bench.a.source, got["ba"], random.Random(seed + 4), ready_p, times["ba"]),
        drive()])
    return got, times, counters


# Layer 2 ---------------------------------------------------------------------------------------------------

def unit_beats(unit, frame_bits):
    """A Layer 1 packet (bytes) as user beats (data, nbytes, last) of payload_bytes(frame_bits)."""
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

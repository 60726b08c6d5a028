"""RIFL bit alignment (cores/rifl/align.py): lock on a reference frame stream at every kind of bit offset,
unlock on garbage, and end to end through two endpoints whose channels shift the line by random bit
offsets and slip mid-run: every beat delivered exactly once, in order."""
import random

import pytest
from migen import *
from migen.sim import run_simulation

from litex.gen import LiteXModule

from cores.rifl import common as c
from cores.rifl.align import RIFLAligner
from cores.rifl.channel import RIFLChannel
from cores.rifl.link import RIFLEndpoint
from test_rifl_link import assert_exact, make_beats, ref_ctrl_payload, ref_frame
from tests.harness.rifl import collect_beats, send_beats

ALIGNER_LATENCY = 2


def shifted_words(frames, F, s):
    """The line words of a frame stream delayed by s bits (MSB first)."""
    stream = 0
    for f in frames:
        stream = (stream << F) | f
    n = len(frames)
    stream <<= F
    return [(stream >> (F * (n - k) + s)) & ((1 << F) - 1) for k in range(n)]


@pytest.mark.parametrize("s", [0, 1, 2, 13, 63])
def test_aligner_locks_on_reference_frames(s):
    """IDLE/RETRANS frames of the independent encoder, delayed by s bits: the aligner locks within one sweep
    (2 cycles an offset) plus the lock frames and then outputs the frames exactly; 8 garbage words in a row unlock it."""
    F = 64
    al = RIFLAligner(F)
    rng = random.Random(s)
    frames = [ref_frame(F, c.SYNC_CTRL, 0, ref_ctrl_payload(F, rng.choice([c.CTRL_IDLE, c.CTRL_RETRANS]),
                                                          rng.randrange(4096)), 0) for _ in range(300)]
    words = shifted_words(frames, F, s)
    out = []

    def drive():
        for w in words:
            yield al.rx_bits.eq(w)
            yield
            out.append(((yield al.locked), (yield al.rx_frame)))
        assert (yield al.counters["locks"]) == 1 and (yield al.counters["unlocks"]) == 0
        for _ in range(40):                       # garbage: random words with invalid sync headers
            yield al.rx_bits.eq(rng.getrandbits(F) & ~(3 << (F - 2 - (rng.randrange(F - 2)))))
            yield
        assert (yield al.counters["unlocks"]) == 1
    run_simulation(al, [drive()])
    first = next(t for t, (locked, _) in enumerate(out) if locked)
    assert first <= 2 * F + 2 * c.ALIGN_LOCK_FRAMES + ALIGNER_LATENCY + 2      # one sweep of 2F cycles
    got = [f for locked, f in out[first:] if locked]
    k = frames.index(got[0])
    assert got == frames[k:k + len(got)] and len(got) > 100


class SlipPair(LiteXModule):
    def __init__(self, F, latency):
        rtt = 2 * latency + 2 * ALIGNER_LATENCY
        self.a, self.b = RIFLEndpoint(F, rtt=rtt), RIFLEndpoint(F, rtt=rtt)
        self.ab = RIFLChannel(F, latency, seed=5, with_slip=True)
        self.ba = RIFLChannel(F, latency, seed=9, with_slip=True)
        self.al_a, self.al_b = RIFLAligner(F), RIFLAligner(F)
        self.comb += [
            self.ab.sink_frame.eq(self.a.tx_frame), self.al_b.rx_bits.eq(self.ab.source_frame),
            self.b.rx_frame.eq(self.al_b.rx_frame),
            self.ba.sink_frame.eq(self.b.tx_frame), self.al_a.rx_bits.eq(self.ba.source_frame),
            self.a.rx_frame.eq(self.al_a.rx_frame),
        ]


def test_random_offsets_and_slips_end_to_end(seed=1):
    """Random initial bit offsets on both channels, a slip on each channel while data flows (plus a few
    line errors): both aligners re-lock, the endpoints replay, and every beat arrives once, in order."""
    F, latency, cycles = 64, 3, 2000
    rng = random.Random(seed)
    dut = SlipPair(F, latency)
    traffic = {"ab": make_beats(rng, F, 200), "ba": make_beats(rng, F, 200)}
    got = {"ab": [], "ba": []}
    slips = {"ab": [(0, rng.randrange(F)), (300, rng.randrange(1, F))],
             "ba": [(0, rng.randrange(F)), (420, rng.randrange(1, F))]}
    slips["ab"][1] = (300, (slips["ab"][0][1] + slips["ab"][1][1]) % F)      # a real change of offset
    slips["ba"][1] = (420, (slips["ba"][0][1] + slips["ba"][1][1]) % F)

    res = {}

    def chaos():
        for t in range(cycles):
            if t > 720 and all(len(got[d]) == len(traffic[d]) for d in got):
                res["done"] = t
                break
            for d, ch in (("ab", dut.ab), ("ba", dut.ba)):
                for when, s in slips[d]:
                    if t == when:
                        yield ch.slip.eq(s)
                        res.setdefault("at_slip", []).append(len(got[d]))
            if t == 500:
                yield dut.ab.threshold.eq(int(0.01 * 2**32))
            if t == 700:
                yield dut.ab.threshold.eq(0)
            yield
        for name in ("al_a", "al_b"):
            res[name] = {}
            for k, sig in getattr(dut, name).counters.items():
                res[name][k] = yield sig
        for name in ("a", "b"):
            res[name] = {"link_up": (yield getattr(dut, name).link_up),
                         "link_downs": (yield getattr(dut, name).counters["link_downs"])}
    run_simulation(dut, [send_beats(dut.a.sink, traffic["ab"], random.Random(seed + 10), 0.7, passive=True),
                         send_beats(dut.b.sink, traffic["ba"], random.Random(seed + 11), 0.7, passive=True),
                         collect_beats(dut.b.source, got["ab"], random.Random(seed + 12), 0.7),
                         collect_beats(dut.a.source, got["ba"], random.Random(seed + 13), 0.7), chaos()])
    assert_exact(traffic, got)
    assert all(0 < n < 200 for n in res["at_slip"][2:]), res["at_slip"]    # the slips hit flowing data
    for name in ("al_a", "al_b"):
        assert res[name]["locks"] >= 2 and res[name]["unlocks"] >= 1, res
    assert res["a"]["link_up"] and res["b"]["link_up"] and res["b"]["link_downs"] >= 1


def test_aligner_parameters():
    with pytest.raises(ValueError):
        RIFLAligner(64, lock_frames=0)
    with pytest.raises(ValueError):
        RIFLAligner(100)
    al = RIFLAligner(64, with_csr=True)
    assert {csr.name for csr in al.get_csrs()} == {"status", "slips", "locks", "unlocks"}

"""RIFL bit alignment (cores/rifl/align.py): lock on a reference frame stream at every kind of bit offset,
unlock on garbage, and end to end through two endpoints whose channels shift the line by random bit
offsets and slip mid-run: every beat delivered exactly once, in order."""
import random

import pytest
from migen import *
from migen.sim import run_simulation

from cores.rifl import common as c
from cores.rifl.align import ALIGNER_LATENCY, OFFSET_CYCLES, RIFLAligner
from cores.rifl.link_bench import RIFLLinkBench
from tests.harness.rifl import assert_delivered, random_beats, ref_ctrl_frame, run_link


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
    (OFFSET_CYCLES an offset) plus the lock frames and then outputs the frames exactly; 8 garbage words in a row unlock it."""
    F = 64
    al = RIFLAligner(F)
    rng = random.Random(s)
    frames = [ref_ctrl_frame(F, rng.choice([c.CTRL_IDLE, c.CTRL_RETRANS]), rng.randrange(4096)) for _ in range(300)]
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
    assert first <= OFFSET_CYCLES * F + 2 * c.ALIGN_LOCK_FRAMES + ALIGNER_LATENCY + 3     # one sweep
    got = [f for locked, f in out[first:] if locked]
    k = frames.index(got[0])
    assert got == frames[k:k + len(got)] and len(got) > 100


@pytest.mark.extended
def test_random_offsets_and_slips_end_to_end(seed=1):
    """Random initial bit offsets on both channels, a slip on each channel while data flows (plus a few
    line errors): both aligners re-lock, the endpoints replay, and every beat arrives once, in order."""
    F, latency, cycles = 64, 3, 2000
    rng = random.Random(seed)
    bench = RIFLLinkBench(F, latency, seeds=(5, 9), with_slip=True)
    traffic = {"ab": random_beats(rng, F, 200), "ba": random_beats(rng, F, 200)}
    slips = {"ab": [(0, rng.randrange(F)), (300, rng.randrange(1, F))],
             "ba": [(0, rng.randrange(F)), (420, rng.randrange(1, F))]}
    slips["ab"][1] = (300, (slips["ab"][0][1] + slips["ab"][1][1]) % F)      # a real change of offset
    slips["ba"][1] = (420, (slips["ba"][0][1] + slips["ba"][1][1]) % F)
    events = [(t, [getattr(bench, d).slip.eq(s)]) for d in ("ab", "ba") for t, s in slips[d]]
    events += [(500, [bench.ab.threshold.eq(int(0.01 * 2**32))]), (700, [bench.ab.threshold.eq(0)])]
    got, times, cnt = run_link(bench, traffic, cycles, seed + 9, 0.7, 0.7, events, done_after=720)
    assert_delivered(traffic, got)
    at_slip = [sum(t <= when for t in times[d]) for d in ("ab", "ba") for when, _ in slips[d][1:]]
    assert all(0 < n < 200 for n in at_slip), at_slip                   # the slips hit flowing data
    for name in ("al_a", "al_b"):
        assert cnt[name]["locks"] >= 2 and cnt[name]["unlocks"] >= 1, cnt
    assert cnt["a"]["link_up"] and cnt["b"]["link_up"] and cnt["b"]["link_downs"] >= 1


def test_aligner_parameters():
    with pytest.raises(ValueError):
        RIFLAligner(64, lock_frames=0)
    with pytest.raises(ValueError):
        RIFLAligner(100)
    al = RIFLAligner(64, with_csr=True)
    assert {csr.name for csr in al.get_csrs()} == {"status", "slips", "locks", "unlocks"}

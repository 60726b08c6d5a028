"""The links of a RIFL network: the channel's independent bit errors (checked frame by frame against the
reference CRC), its undetected-error count, the forced codeword, and the replay window at the longest
round trip the 12-bit frame id allows."""
import math

import numpy as np
import pytest

from cores.rifl import common as c
from cores.rifl.channel import RIFLChannel, forced_codeword
from cores.rifl.link import RIFLEndpoint
from sim.verilated import rifl as verilated_rifl
from sim.verilated import run_vectors
from software.rifl.demo import random_thresholds
from software.rifl.reference import residual_frame_rate, undetected_patterns
from tests.harness.rifl import ref_crc12, to_bits
from tests.harness.tiers import extended

F = 64
DATA_FRAME = c.SYNC_DATA << (F - 2)          # the sync header of a data frame, the rest zero


def ref_syndrome(pattern):
    """The check's view of an error pattern: CRC of its body XOR its check bits (0: undetectable)."""
    return ref_crc12(to_bits(pattern >> c.CHECK_BITS, F - c.CHECK_BITS)) ^ (pattern & 0xFFF)


def test_random_bit_errors_against_the_reference():
    """CHANNEL_RANDOM at a high BER on constant data frames: the bit errors drawn per frame are binomial
    (truncated at CHANNEL_RANDOM_MAX_BITS), the error patterns (output XOR input) match them, the counters
    match the patterns,
    and `undetected` equals the patterns whose reference syndrome is 0; `force` adds the codeword once."""
    ber, cycles, force_at = 0.03, 60000, 1000
    ch = RIFLChannel(F, latency=2, seed=77)
    thr = random_thresholds(ber, F)
    inputs = [ch.mode, *ch.thresholds, ch.force, ch.sink_frame]
    outputs = [ch.source_frame, ch.counters["errors"], ch.counters["bit_errors"], ch.counters["undetected"]]
    vec = np.zeros((cycles, len(inputs)), dtype=np.uint64)
    vec[:, 0] = c.CHANNEL_RANDOM
    vec[:, 1:1 + len(thr)] = thr
    vec[force_at, 1 + len(thr)] = 1
    vec[force_at - 4:force_at + 8, 1:1 + len(thr)] = 0        # no random error on the forced frame
    vec[:, -1] = DATA_FRAME
    out = run_vectors(ch, inputs, outputs, vec, "rifl_channel_random_F64")
    patterns = [int(x) ^ DATA_FRAME for x in out[10:-2, 0]]
    drawn = np.diff(out[10:-1, 2].astype(np.int64))       # bit errors drawn for each frame (the counter's steps)
    weights = np.array([bin(p).count("1") for p in patterns])
    n = len(patterns)
    for k in range(c.CHANNEL_RANDOM_MAX_BITS):
        p = math.comb(F, k) * ber ** k * (1 - ber) ** (F - k)
        assert abs(np.count_nonzero(drawn == k) / n - p) < 5 * math.sqrt(p * (1 - p) / n), k
    # Two errors drawn at one bit cancel: the weight is the number drawn less an even number.
    assert np.all((weights <= drawn) & ((drawn - weights) % 2 == 0))
    assert np.count_nonzero(weights < drawn) < 0.05 * np.count_nonzero(drawn > 1)
    forced = [p for p in patterns if p == forced_codeword(F)]
    assert len(forced) == 1 and ref_syndrome(forced_codeword(F)) == 0
    undetected = sum(1 for p in patterns if p and ref_syndrome(p) == 0)
    assert undetected > 1                               # weight-4 codewords do happen at this rate
    assert int(out[-2, 1]) - int(out[10, 1]) == sum(1 for p in patterns if p)
    assert int(out[-1, 3]) - int(out[11, 3]) == undetected      # counted a cycle after the frame


def test_residual_rate_reference():
    """Odd-weight errors are always seen (x + 1 divides the generator), weight 2 only at F = 2048 (the
    generator's order is 2047), weight 4 in about 1 pattern in 2^11."""
    assert undetected_patterns(256, 2) == 0 and undetected_patterns(2048, 2) == 1
    assert undetected_patterns(256, 3) == 0
    assert 0.0004 < undetected_patterns(256, 4) / math.comb(256, 4) < 0.0006
    assert residual_frame_rate(1e-6, 256) < 1e-19 < residual_frame_rate(1e-6, 1024)


def test_replay_window_bounds():
    """The window holds 2^(SEQ_BITS - 1) frames: MAX_RTT_CYCLES builds at every F, one more is refused with
    a message naming the frame id and the limit; 500 m at 100 Gb/s needs F >= 1024."""
    assert c.REPLAY_LOG2_MAX == c.SEQ_BITS - 1
    assert c.replay_log2(c.MAX_RTT_CYCLES) == c.REPLAY_LOG2_MAX
    for frame_bits in (64, 128, 256, 512, 1024, 2048):
        assert RIFLEndpoint(frame_bits, rtt=c.MAX_RTT_CYCLES).replay_depth == 2 ** c.REPLAY_LOG2_MAX
        with pytest.raises(ValueError, match=f"12-bit frame id allows 2\\^11.*at most {c.MAX_RTT_CYCLES}"):
            RIFLEndpoint(frame_bits, rtt=c.MAX_RTT_CYCLES + 1)
    assert c.link_rtt_cycles(1024, 500, 100) <= c.MAX_RTT_CYCLES < c.link_rtt_cycles(512, 500, 100)
    assert c.max_link_m(1024, 100) >= 500 > c.max_link_m(512, 100)


@pytest.mark.parametrize("frame_bits", [64, extended(256)])
def test_longest_round_trip(frame_bits):
    """Two endpoints over channels of MAX_RTT_CYCLES / 2 each (the longest round trip the frame id allows):
    without errors the window never stalls (a frame every slot both ways); with one frame in 10^4
    corrupted both ways every packet arrives once, in order, intact, and the link keeps the efficiency of
    go-back-N at that round trip (an error costs about rtt + H slots: over 80 %)."""
    latency = c.MAX_RTT_CYCLES // 2
    model = verilated_rifl.loopback(frame_bits, latency)
    clean = verilated_rifl.run_point(model, 20000, 0)
    assert clean["frames"] >= 0.99 * 2 * 20000
    cycles = 100000
    r = verilated_rifl.run_point(model, cycles, int(2**32 / 10000))
    assert sum(r[f"{d}_{k}"] for d in c.LOOPBACK_DIRECTIONS for k in c.CHK_FAULTS) == 0
    assert r["ab_delivered"] == r["ab_sent"] and r["ba_delivered"] == r["ba_sent"] > 0
    assert r["a_replays"] + r["b_replays"] >= 5
    assert r["frames"] > 0.8 * 2 * cycles

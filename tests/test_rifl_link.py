"""RIFL Layer 1: CRC and frame format against an independent reference, the transmitter, receiver and replay
control alone, lossless delivery through the link bench under errors, bursts, errors both ways, link flaps,
a slow receiver, bad input."""
import random

import pytest
from migen import *
from migen.sim import run_simulation

from cores.rifl import common as c
from cores.rifl.align import ALIGNER_LATENCY
from cores.rifl.channel import RIFLChannel
from cores.rifl.link import RIFLEndpoint, RIFLReceiver, RIFLReplayControl, RIFLTransmitter, crc12_matrix
from cores.rifl.link_bench import RIFLLinkBench
from software.rifl.reference import encode_ctrl
from tests.harness.rifl import (assert_delivered, line_events, random_beats, ref_crc12, ref_ctrl_frame, ref_frame,
                                ref_lfsr_mask, run_link, send_beats, to_bits)
from tests.harness.tiers import extended


def test_crc_matches_independent_reference():
    rng = random.Random(1)
    for n in (1, 12, 52, 244, 2036):
        for _ in range(5):
            v = rng.getrandbits(n)
            assert c.crc12(v, n) == ref_crc12(to_bits(v, n))
            # the RTL's XOR matrix
            m = crc12_matrix(n)
            rtl = sum((sum((v >> i) & 1 for i in taps) & 1) << b for b, taps in enumerate(m))
            assert rtl == ref_crc12(to_bits(v, n))
    assert c.scrambler_mask(240) == ref_lfsr_mask(240)
    # CRC-12 detects every error burst up to 12 bits (first and last bit flipped, random bits between)
    body = rng.getrandbits(244)
    base = c.crc12(body, 244)
    for L in range(1, 13):
        for pos in range(244 - L + 1):
            e = (1 | (1 << (L - 1)) | (rng.getrandbits(L) if L > 2 else 0)) & ((1 << L) - 1)
            assert c.crc12(body ^ (e << pos), 244) != base


def run_pair(F=64, latency=3, nbeats=120, cycles=1500, p_ab=0.0, p_ba=0.0, burst=0, flaps=(), seed=1,
             valid_p=0.8, ready_p=0.8, rx_depth=None, both_ways=True, error_window=None, seq_start=0):
    """Random beats A->B (and B->A) through the link bench: (sent, received, cycles received, counters)."""
    bench = RIFLLinkBench(F, latency, rx_depth=rx_depth, seq_start=seq_start)
    rng = random.Random(seed)
    traffic = {"ab": random_beats(rng, F, nbeats), "ba": random_beats(rng, F, nbeats if both_ways else 0)}
    events = line_events(bench, cycles, p_ab, p_ba, burst, error_window, flaps)
    got, times, counters = run_link(bench, traffic, cycles, seed, valid_p, ready_p, events)
    return traffic, got, times, counters


def test_tx_frames_match_reference_encoder():
    """The first data frames on the line equal the independent encoder's frames, bit for bit."""
    F = 64
    P = c.payload_bytes(F)
    dut = RIFLLinkBench(F, 1)
    frames = []
    beats = [(0x0102030405ff, P, 0), (0x0a0b0c0d0e0f, P, 1), (0x00000000aabb, 2, 1)]
    src = send_beats(dut.a.sink, beats, random.Random(0))

    def mon():
        for _ in range(80):
            frames.append((yield dut.a.tx_frame))
            yield
    run_simulation(dut, [src, mon()])
    data = [f for f in frames if (f >> (F - 2)) == c.SYNC_DATA]
    exp = []
    for k, (d, n, l) in enumerate(beats):
        by = [(d >> (8 * i)) & 0xFF for i in range(P)]
        if n < P:
            by[P - 1] = n
        payload = int.from_bytes(bytes(by), "big")
        meta = (c.META_EOP if l else 0) | (c.META_ALL_VALID if n == P else 0)
        exp.append(ref_frame(F, c.SYNC_DATA, meta, payload, k))
    assert data[:3] == exp
    idle = [f for f in frames if (f >> (F - 2)) == c.SYNC_CTRL]
    assert ref_ctrl_frame(F, c.CTRL_IDLE, 3) in idle


def test_transmitter_alone():
    """RIFLTransmitter with the receiver's and the replay control's state driven by the test: each state's
    slot choice puts the independent encoder's frame on the line (PAUSE, new data, its replay from the
    buffer, IDLE, REPLAY marker, RETRANS in every other slot, flow control)."""
    F = 64
    P = c.payload_bytes(F)
    tx = RIFLTransmitter(F, log2n=4)
    d = 0x0102030405A6
    data = ref_frame(F, c.SYNC_DATA, c.META_ALL_VALID | c.META_EOP, int.from_bytes(d.to_bytes(P, "little"), "big"), 0)
    phases = [
        ({"rx_aligned": 0}, {ref_ctrl_frame(F, c.CTRL_PAUSE, 0)}),
        ({"rx_aligned": 1, "remote_up": 1}, {data}),          # the beat, then its replays (rp stays 0)
        ({"rp": 1}, {ref_ctrl_frame(F, c.CTRL_IDLE, 1)}),
        ({"marker_pending": 1}, {ref_ctrl_frame(F, c.CTRL_REPLAY, 1)}),
        ({"marker_pending": 0, "recovering": 1, "rx_seq": 5},
         {ref_ctrl_frame(F, c.CTRL_RETRANS, 5, 1), ref_ctrl_frame(F, c.CTRL_IDLE, 1, 1)}),
        ({"recovering": 0, "fc_want": 1}, {encode_ctrl(F, frame_id=1, code=c.CTRL_FC, seq=1, fc_on_valid=1)}),
    ]
    seen, seqs = [], []

    def drive():
        for k, (inputs, _) in enumerate(phases):
            for name, v in inputs.items():
                yield getattr(tx, name).eq(v)
            if k == 1:
                yield tx.sink.valid.eq(1)
                yield tx.sink.data.eq(d)
                yield tx.sink.nbytes.eq(P)
                yield tx.sink.last.eq(1)
            for t in range(12):
                yield
                if k == 1 and (yield tx.sink.ready):
                    yield tx.sink.valid.eq(0)
                seen.append((k, t, (yield tx.tx_frame)))
            seqs.append((yield tx.tx_seq))
    run_simulation(tx, [drive()])
    for k, (_, expected) in enumerate(phases):
        # past the 4-cycle latency (select, replay-buffer read into a register, body mux, CRC: the block
        # RAM's output got its own stage for 125 MHz on the ECP5)
        frames = [f for p, t, f in seen if p == k and t >= 4]
        assert set(frames) == expected, k
    retrans = [f == ref_ctrl_frame(F, c.CTRL_RETRANS, 5, 1) for p, t, f in seen if p == 4 and t >= 4]
    assert all(a != b for a, b in zip(retrans, retrans[1:]))          # every other slot
    assert seqs == [0, 1, 1, 1, 1, 2]                                  # new numbered frames: the beat, the FC


def test_receiver_alone():
    """RIFLReceiver fed the independent encoder's frames: alignment, in-order data, a RETRANS passed to the
    replay control, flow control ON, a wrong id starting a recovery in which data is accepted only after
    the REPLAY marker, a per-VOQ flow-control frame given on fc_source."""
    F = 64
    P = c.payload_bytes(F)
    rx = RIFLReceiver(F, rx_depth=64)
    data = lambda k: ref_frame(F, c.SYNC_DATA, c.META_ALL_VALID | c.META_EOP, 0x665544332200 + k, k)
    frames = ([ref_ctrl_frame(F, c.CTRL_IDLE, 0)] * 12 + [data(0), data(1), ref_ctrl_frame(F, c.CTRL_RETRANS, 1),
              encode_ctrl(F, frame_id=2, code=c.CTRL_FC, seq=2, fc_on_valid=1), data(4), data(3),
              ref_ctrl_frame(F, c.CTRL_REPLAY, 3), data(3),
              encode_ctrl(F, frame_id=4, code=c.CTRL_FC, seq=4, fc_on_valid=1, fc_on_channel=3, fc_off_valid=1,
                          fc_off_channel=2)] + [ref_ctrl_frame(F, c.CTRL_IDLE, 5)] * 6)
    out, trace, cnt, fcs = [], [], {}, []

    def drive():
        yield rx.source.ready.eq(1)
        for f in frames:
            yield rx.rx_frame.eq(f)
            yield
            if (yield rx.source.valid):
                out.append((yield rx.source.data))
            if (yield rx.fc_source.valid):
                fc = []
                for name, _ in c.FC_LAYOUT:
                    fc.append((yield getattr(rx.fc_source, name)))
                fcs.append(tuple(fc))
            trace.append(((yield rx.link_up), (yield rx.recovering), (yield rx.retrans), (yield rx.retrans_seq)))
        for k, sig in rx.counters.items():
            cnt[k] = yield sig
        cnt["remote_xoff"] = yield rx.remote_xoff
    run_simulation(rx, [drive()])
    assert out == [int.from_bytes((0x665544332200 + k).to_bytes(P, "big"), "little") for k in (0, 1, 3)]
    up = [t for t, (link_up, *_) in enumerate(trace) if link_up]
    assert up and up[0] >= c.ALIGN_UP_FRAMES and trace[-1][0] == 1
    assert [seq for _, _, retrans, seq in trace if retrans] == [1]
    recovering = [r for _, r, _, _ in trace]
    assert 1 in recovering and recovering[-1] == 0
    assert cnt == {"rx_frames": 5, "rx_errors": 1, "rx_discarded": 1, "rx_overflow": 0, "fc_on_rcvd": 1,
                   "fc_voq_rcvd": 1, "link_downs": 0, "remote_xoff": 1}
    assert fcs == [(1, 0, 0, 0), (1, 3, 1, 2)]      # both flow-control frames on fc_source


def test_replay_control_alone():
    """RIFLReplayControl: the send pointer follows the frames sent, a RETRANS inside the window rewinds it
    (marker pending until sent), the same RETRANS within the hold-off is ignored and counted again after
    it, one outside the window is refused, and undisturbed time confirms what was sent H cycles ago."""
    H = 6
    rc = RIFLReplayControl(H)
    res = {}

    def pulse(sig, n=1):
        yield sig.eq(1)
        for _ in range(n):
            yield
        yield sig.eq(0)

    def retrans(seq):
        yield rc.retrans_seq.eq(seq)
        yield from pulse(rc.retrans)
        yield
        yield       # a RETRANS is checked in its cycle, acted on in the next (registered for 125 MHz)

    def drive():
        yield rc.disturbed.eq(1)
        yield rc.tx_seq.eq(10)
        yield from pulse(rc.advance, 10)
        yield
        res["rp_sent"] = yield rc.rp
        yield from retrans(4)
        res["after_retrans"] = ((yield rc.rp), (yield rc.ack), (yield rc.marker_pending))
        yield from pulse(rc.marker_sent)
        yield
        res["marker_after_sent"] = yield rc.marker_pending
        yield from retrans(4)                       # within the hold-off: ignored
        res["replays_in_holdoff"] = yield rc.counters["replays"]
        for _ in range(H + 1):
            yield
        yield from retrans(4)                       # after it: the replayed frame was hit again
        yield from retrans(11)                      # outside [ack, tx_seq]
        yield from pulse(rc.advance, 6)
        yield
        res["rp_end"] = yield rc.rp
        yield rc.disturbed.eq(0)
        for _ in range(2 * H + 4):
            yield
        res["ack"] = yield rc.ack
        for k, sig in rc.counters.items():
            res[k] = yield sig
    run_simulation(rc, [drive()])
    assert res["rp_sent"] == 10 and res["after_retrans"] == (4, 4, 1) and res["marker_after_sent"] == 0
    assert res["replays_in_holdoff"] == 1 and res["replays"] == 2 and res["bad_retrans"] == 1
    assert res["rp_end"] == 10 and res["ack"] == 10


def test_error_free_line_rate():
    """No errors, no back-pressure: every beat delivered, and a beat a cycle once started."""
    traffic, got, times, cnt = run_pair(nbeats=150, cycles=260, valid_p=1.0, ready_p=1.0, seed=2)
    assert_delivered(traffic, got)
    for s in "ab":
        assert cnt[s]["rx_errors"] == 0 and cnt[s]["replays"] == 0 and cnt[s]["tx_replayed"] == 0
        assert cnt[s]["rx_frames"] == 150 and cnt[s]["link_up"] == 1
    for d in ("ab", "ba"):
        assert times[d][-1] - times[d][0] == 149    # one beat a cycle


@pytest.mark.parametrize("p_ab,p_ba,burst,seed", [
    (0.03, 0.03, 1, 4),     # errors both ways at once
    extended(0.02, 0.02, 12, 5),    # 12-bit bursts both ways
    extended(0.15, 0.15, 5, 6),     # very noisy link
])
def test_random_traffic_with_errors(p_ab, p_ba, burst, seed):
    traffic, got, times, cnt = run_pair(nbeats=60, cycles=650, p_ab=p_ab, p_ba=p_ba, burst=burst, seed=seed,
                                 error_window=(0, 400))
    assert_delivered(traffic, got)
    assert cnt["ab_errors"] > 5 and cnt["b"]["rx_errors"] > 0 and cnt["a"]["replays"] > 0
    if p_ba:
        assert cnt["ba_errors"] > 5 and cnt["a"]["rx_errors"] > 0


def test_errors_across_the_frame_id_wrap():
    """Frame ids starting 20 short of 2^12: errors both ways while the ids wrap to 0, every beat delivered once
    and in order, and the ids did wrap (more numbered frames sent than ids left before 0)."""
    start = (1 << c.SEQ_BITS) - 20
    traffic, got, times, cnt = run_pair(nbeats=60, cycles=650, p_ab=0.03, p_ba=0.03, burst=1, seed=9,
                                        error_window=(0, 400), seq_start=start)
    assert_delivered(traffic, got)
    assert cnt["b"]["rx_errors"] > 0 and cnt["a"]["replays"] > 0 and cnt["a"]["rx_errors"] > 0
    for s in "ab":
        assert cnt[s]["rx_frames"] > 20


def test_link_flaps():
    traffic, got, times, cnt = run_pair(nbeats=70, cycles=900, p_ab=0.01, p_ba=0.01, flaps=[(100, 130), (300, 400)],
                                 seed=7, error_window=(0, 500))
    assert_delivered(traffic, got)
    assert cnt["a"]["link_downs"] >= 2 and cnt["b"]["link_downs"] >= 2


def test_slow_receiver_flow_control():
    """A receiver taking one beat in 6 never overflows its buffer: flow control pauses the sender."""
    traffic, got, times, cnt = run_pair(nbeats=150, cycles=1100, valid_p=1.0, ready_p=0.16, rx_depth=c.rx_depth_min(6),
                                 both_ways=False, seed=8)
    assert_delivered(traffic, got)
    assert cnt["b"]["fc_on_sent"] >= 1 and cnt["b"]["fc_off_sent"] >= 1
    assert cnt["a"]["fc_on_rcvd"] == cnt["b"]["fc_on_sent"]
    assert cnt["b"]["rx_overflow"] == 0


def test_bad_input_and_forged_control_frames():
    """Bad user beats are dropped and counted; a RETRANS outside the window, an unknown control code and a
    corrupted control frame never hang the link or corrupt the stream; a recovering receiver accepts data
    only after the REPLAY marker for its expected id."""
    F = 64
    P = c.payload_bytes(F)
    ep = RIFLEndpoint(F, rtt=0)
    out = []

    def drive():
        seq = 0
        idle = lambda s: ref_ctrl_frame(F, c.CTRL_IDLE, s)
        for _ in range(12):                       # bring up: remote idles
            yield ep.rx_frame.eq(idle(0))
            yield
        yield ep.sink.valid.eq(1)                  # a bad beat: nbytes = 0
        yield ep.sink.nbytes.eq(0)
        yield
        yield ep.sink.valid.eq(0)
        forged = [
            ref_ctrl_frame(F, c.CTRL_RETRANS, 1000),   # outside window
            ref_ctrl_frame(F, 0xE, 0),                  # unknown code
            idle(0) ^ (1 << 30),                                                          # corrupted
        ]
        data = lambda k: ref_frame(F, c.SYNC_DATA, c.META_ALL_VALID | c.META_EOP, 0x112233445500 + k, k)
        for f in forged + [data(0)]:                # frame 0 while recovering without a REPLAY marker: dropped
            yield ep.rx_frame.eq(f)
            yield
        yield ep.rx_frame.eq(ref_ctrl_frame(F, c.CTRL_REPLAY, 0))
        yield
        for k in range(3):                          # the replay: frames 0, 1, 2
            yield ep.rx_frame.eq(data(k))
            yield
        for _ in range(8):
            yield ep.rx_frame.eq(idle(3))
            yield

    def mon():
        yield ep.source.ready.eq(1)
        for _ in range(40):
            if (yield ep.source.valid):
                out.append((yield ep.source.data))
            yield

    cnt = {}

    def rd():
        for _ in range(40):
            yield
        for k, sig in ep.counters.items():
            cnt[k] = yield sig
        cnt["link_up"] = yield ep.link_up
    run_simulation(ep, [drive(), mon(), rd()])
    assert cnt["tx_bad"] == 1 and cnt["bad_retrans"] == 1 and cnt["rx_frames"] == 3 and cnt["link_up"] == 1
    assert cnt["rx_errors"] == 1 and cnt["rx_discarded"] == 2   # one recovery; corrupted frame and early frame 0
    assert out == [int.from_bytes((0x112233445500 + k).to_bytes(P, "big"), "little") for k in range(3)]


@pytest.mark.parametrize("F", [64, 128, 256, 512, 1024, extended(2048)])
def test_frame_sizes(F):
    n = 24 if F <= 256 else 3
    traffic, got, times, cnt = run_pair(F=F, latency=2, nbeats=n, cycles=48 if F > 256 else 200,
                                 p_ab=0.1 if F <= 256 else 0.0, valid_p=1.0, ready_p=1.0, seed=F,
                                 both_ways=F <= 256, error_window=(0, 60))
    assert_delivered(traffic, got)


def test_parameter_checks():
    with pytest.raises(ValueError):
        RIFLEndpoint(96)
    with pytest.raises(ValueError):
        RIFLEndpoint(4096)
    with pytest.raises(ValueError):
        RIFLEndpoint(256, rtt=-1)
    with pytest.raises(ValueError):
        RIFLChannel(256, latency=-2)
    with pytest.raises(ValueError):
        RIFLEndpoint(256, rtt=10, rx_depth=c.rx_depth_min(10) - 1)
    for bad in (-1, 1 << c.SEQ_BITS, 1.5):
        with pytest.raises(ValueError, match="seq_start"):
            RIFLEndpoint(64, rtt=0, seq_start=bad)
    with pytest.raises(ValueError):
        RIFLLinkBench(64, 2, seeds=(1,))
    bench = RIFLLinkBench(64, 3, with_slip=True, l2_data_width=64)
    assert bench.a.rtt == bench.b.rtt == 2 * 3 + 2 * ALIGNER_LATENCY and bench.seg and bench.rea
    ep = RIFLEndpoint(64, rtt=0, with_csr=True)
    names = {csr.name for csr in ep.get_csrs()}
    assert {"status", "rx_errors", "replays", "fc_on_sent", "link_downs"} <= names
    assert len(names) == 1 + len(ep.counters)

"""Segmenter -> L1 -> RIFL switch -> L1 -> reassembler, in one Verilated network (sim.verilated.rifl_net): one
4-port switch, seeded traffic under random valid/ready, incast, errors both ways, a flapping link. Every run
is checked against the reference routing (tests.harness.rifl_net.check_run): each packet exactly once, in
order per flow, intact, no VOQ overflow."""
import pytest

from cores.rifl.common import CHANNEL_RANDOM
from software.rifl.demo import random_thresholds
from cores.rifl_net.topology import one_switch
from tests.harness.rifl_net import check_run, net_model, random_packets, seeded

TOPO = one_switch(4)


def model():
    return net_model(TOPO, latency=8)


def ber_events(model, ber, channels=None, t=0):
    """Independent bit errors at `ber` on `channels` (default all, both directions) from cycle t."""
    thr = random_thresholds(ber, model.frame_bits)
    out = []
    for c in (range(len(model.channel_names)) if channels is None else channels):
        out += [(t, c, "mode", CHANNEL_RANDOM)] + [(t, c, f"thr{k + 1}", v) for k, v in enumerate(thr)]
    return out


def test_incast_under_back_pressure():
    """Hosts 1..3 send to host 0, which takes a beat in 3 cycles of 10: its receive buffer pauses the switch
    output, the VOQs fill past ON and the per-VOQ frames pause the senders, and nothing is lost."""
    # Whether host 0's pauses reach the switch output between cells, where a granted cell then waits
    # (fc_hold), or always mid-cell depends on the pause loop's phase in the cell time, so on the channel
    # latency. The file's model (8-cycle channels, the model of every other test here, of
    # test_rifl_net_capture.py and of the quick RIFL network bench: one C++ build for all of them) gives
    # 5223 fc_hold cycles on this traffic, 50 VOQ pause frames and a VOQ peak of 20 cells over ON = 10
    # (measured); a model of its own at 6-cycle channels cost a second build of the network (65 s).
    m = model()
    rng = seeded(1)
    packets = random_packets(rng, TOPO, 30, srcs=[1, 2, 3], dsts=[0], lengths=(64, 2048))
    r = m.run(packets, seed=2, valid_p=0.9, ready_p=0.3)
    check_run(m, packets, r)
    k = r.counters
    assert k["s0_fc_voq_sent"] > 0 and k["s0_fc_hold"] > 0            # VOQ pauses crossed the links
    assert sum(k[f"h{h}_held"] for h in (1, 2, 3)) > 0                 # ... and held the senders
    assert k["h0_fc_on_sent"] > 0                                      # the receiver paused the output
    assert k["s0_peak"] > m.node.on_threshold                          # the VOQs did fill past ON


@pytest.mark.extended
@pytest.mark.long
def test_host_queues_per_destination():
    """Hosts 1..3 flood host 0 (slow receiver: its VOQs pause the senders) while host 1 also sends to host 3.
    With one FIFO per host (run's default) host 1's packets to 3 wait behind its held packets to 0; with a
    queue per destination (host_voqs) they pass them: they finish sooner and host 1 is held less, and both
    runs keep every invariant."""
    m = model()
    rng = seeded(11)
    packets = random_packets(rng, TOPO, 24, srcs=[1, 2, 3], dsts=[0], lengths=(1024, 2048))
    packets += random_packets(rng, TOPO, 24, srcs=[1], dsts=[3], lengths=(256, 512))
    packets.sort(key=lambda p: (p.src, p.t))
    runs = {}
    for voqs in (False, True):
        r = m.run(packets, seed=12, ready_p=0.3, host_voqs=voqs)
        check_run(m, packets, r)
        assert r.counters["s0_fc_voq_sent"] > 0
        runs[voqs] = (max(d.cycle for d in r.delivered if d.src == 1 and d.host == 3), r.counters["h1_held"])
    assert runs[True][0] < 0.7 * runs[False][0], runs
    assert runs[True][1] < runs[False][1], runs


def test_all_to_all_random_valid_ready():
    m = model()
    rng = seeded(3)
    packets = random_packets(rng, TOPO, 30, lengths=(8, 1500), t_max=3000)
    r = m.run(packets, seed=4, valid_p=0.6, ready_p=0.5)
    check_run(m, packets, r)


def test_errors_both_directions():
    """Independent bit errors (BER 2e-4: one frame in 20) on every link, both ways, with incast and
    back-pressure: replays, no loss, no corruption, the channels' undetected counters at 0."""
    m = model()
    rng = seeded(5)
    packets = random_packets(rng, TOPO, 20, srcs=[1, 2, 3], dsts=[0, 1], lengths=(8, 2048))
    packets += random_packets(rng, TOPO, 10, srcs=[0], lengths=(8, 2048))
    r = m.run(packets, ber_events(m, 2e-4), seed=6, valid_p=0.9, ready_p=0.6)
    check_run(m, packets, r)
    k = r.counters
    channels = range(len(m.channel_names))
    assert all(k[f"c{c}_errors"] > 0 for c in channels)
    assert sum(k[f"c{c}_bit_errors"] for c in channels) > sum(k[f"c{c}_errors"] for c in channels)
    assert sum(k[f"c{c}_undetected"] for c in channels) == 0
    assert k["s0_replays"] > 0 and sum(k[f"h{h}_replays"] for h in range(4)) > 0
    assert k["s0_rx_errors"] > 0 and sum(k[f"h{h}_rx_errors"] for h in range(4)) > 0


def test_flapping_link():
    """Host 2's link goes down both ways three times while everyone sends: the link comes back, the
    endpoints replay, every packet arrives once."""
    m = model()
    rng = seeded(7)
    packets = random_packets(rng, TOPO, 20, lengths=(8, 1024), t_max=4000)
    link = next(k for k, (a, b) in enumerate(TOPO.links) if a == ("h", 2))
    events = []
    for start in (800, 2500, 4200):
        for c in (2 * link, 2 * link + 1):
            events += [(start, c, "down", 1), (start + 300, c, "down", 0)]
    r = m.run(packets, events, seed=8, valid_p=0.8, ready_p=0.8)
    check_run(m, packets, r)
    assert r.counters["h2_link_downs"] == 3 and r.counters["h2_link_up"] == 1


def test_forced_undetected_error():
    """A CRC-12 codeword forced into one data frame from host 1 passes every check: the channel counts it
    as undetected and exactly one packet arrives with wrong contents, the rest intact."""
    m = model()
    rng = seeded(9)
    packets = random_packets(rng, TOPO, 10, srcs=[1], dsts=[3], lengths=(1024, 2048))
    link = next(k for k, (a, b) in enumerate(TOPO.links) if a == ("h", 1))
    # A codeword landing in a last segment's padding corrupts nothing (undetected, no bad packet), and which
    # frame is next after cycle t moves with the pipeline latencies: with the L2 stages, t = 600 (and 500)
    # hits padding; t = 396..408 hits packet bytes with and without them (measured).
    r = m.run(packets, [(400, 2 * link, "force", 1), (401, 2 * link, "force", 0)], seed=10)
    check_run(m, packets, r, corrupted=1)
    assert r.counters[f"c{2 * link}_undetected"] == 1 and r.counters[f"c{2 * link}_errors"] == 1
    assert r.counters["s0_rx_errors"] == 0

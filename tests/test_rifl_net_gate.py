"""The sender's per-VOQ pause gate (cores.rifl.endpoint.RIFLFCGate) against a reference of its rule: a
packet (every segment of one upper-layer packet, counted from the length prefix) starts only while its
channel is not paused, and once started passes whole, whatever pauses arrive meanwhile. Seeded random
packets of 1-9 segments on 4 channels, random ON/OFF frames, random valid/ready."""
import random

import pytest
from migen.sim import passive, run_simulation

from cores.rifl import common as c
from cores.rifl.endpoint import RIFLFCGate, fc_gate_channel
from software.rifl.reference import segment
from tests.harness.rifl import send_beats, unit_beats


@pytest.mark.parametrize("frame_bits", [64, 256])
def test_gate_holds_whole_packets(frame_bits):
    rng = random.Random(frame_bits)
    ports = 4
    gate = RIFLFCGate(frame_bits, ports)
    packets = []
    for _ in range(40):
        dst_port = rng.randrange(1, ports)
        header = c.l2_header_pack(1, 1, [dst_port])
        body = bytes(rng.randrange(256) for _ in range(rng.choice([1, 100, 254, 255, 700, 2046, 2048])))
        packets.append((fc_gate_channel(header, ports), segment(body, header)))
    beats = [b for _, segs in packets for s in segs for b in unit_beats(s, frame_bits)]
    got, paused_at = [], []

    @passive
    def pauses():
        while True:
            for _ in range(rng.randrange(5, 120)):
                yield
            ch = rng.randrange(ports)
            on = rng.random() < 0.5
            yield gate.fc_sink.valid.eq(1)
            yield gate.fc_sink.on_valid.eq(on)
            yield gate.fc_sink.on_channel.eq(ch)
            yield gate.fc_sink.off_valid.eq(not on)
            yield gate.fc_sink.off_channel.eq(ch)
            yield
            yield gate.fc_sink.valid.eq(0)

    def collect():
        # Each beat taken at the source, with the pause vector of the cycle it was taken in.
        src = gate.source
        while len(got) < len(beats):
            yield src.ready.eq(rng.random() < 0.7)
            yield
            if (yield src.valid) and (yield src.ready):
                got.append(((yield src.data), (yield src.nbytes), (yield src.last)))
                paused_at.append((yield gate.paused))
    run_simulation(gate, [send_beats(gate.sink, beats, rng, 0.8), collect(), pauses()])
    assert got == beats                                     # nothing lost, duplicated or altered
    # Reference: the first beat of each packet left while its channel was not paused; the other beats of
    # the packet may leave under a pause.
    k = 0
    for channel, segs in packets:
        assert not (paused_at[k] >> channel) & 1, (k, channel, bin(paused_at[k]))
        k += sum(len(unit_beats(s, frame_bits)) for s in segs)
    # Later segments of a packet start under a pause of its channel too (the rule the gate exists for):
    # a gate that decided per segment would have held them.
    firsts, later, k = set(), [], 0
    for channel, segs in packets:
        firsts.add(k)
        for s in segs:
            if k not in firsts:
                later.append((k, channel))
            k += len(unit_beats(s, frame_bits))
    assert any((paused_at[i] >> ch) & 1 for i, ch in later)

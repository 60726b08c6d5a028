"""InternalPHY, the internal Ethernet port under the boards' management stack: frames of every length cross
its width converters (MiniSharp's 16- or 32-bit management port <-> the 8-bit LiteEth MAC) byte for byte,
with the right last_be, under random valid/ready on both sides (Migen simulator)."""
import random

import pytest
from migen import Module
from migen.sim import run_simulation

from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description

from soc.innet_soc import InternalPHY
from tests.harness.streams import collect, frame_beats, packets, send


def wide_beats(frame, dw):
    return [{"data": d, "last": l, "last_be": be} for d, l, be in frame_beats(frame, dw)]


def wide_frame(beats, dw):
    out = b""
    for b in beats:
        n = dw // 8 if not b["last"] else b["last_be"].bit_length()
        out += b["data"].to_bytes(dw // 8, "little")[:n]
    return out


@pytest.mark.parametrize("dw", [16, 32])
def test_frames_cross_both_ways(dw):
    rng = random.Random(dw)
    frames = [bytes(rng.getrandbits(8) for _ in range(n)) for n in [1, 2, 3, 4, 5, 59, 60, 61, 64, 97, 300]]
    top = Module()
    to_mac, from_mac = stream.Endpoint(eth_phy_description(dw)), stream.Endpoint(eth_phy_description(dw))
    top.submodules.phy = phy = InternalPHY(8, to_mac, from_mac, port_dw=dw)
    down, up = [], []
    gens = [
        send(to_mac, [b for f in frames for b in wide_beats(f, dw)], random.Random(1), valid_p=0.6),
        collect(phy.source, down, random.Random(2), ["data", "last"], ready_p=0.7),
        send(phy.sink, [{"data": x, "last": int(k == len(f) - 1)} for f in frames for k, x in enumerate(f)],
             random.Random(3), valid_p=0.7),
        collect(from_mac, up, random.Random(4), ["data", "last", "last_be"], ready_p=0.6),
    ]
    run_simulation(top, gens + [(lambda: (yield from [None] * 4000))()])
    assert [bytes(b["data"] for b in p) for p in packets(down)] == frames
    assert [wide_frame(p, dw) for p in packets(up)] == frames
    for p in packets(up):
        assert all(b["last_be"] == 0 for b in p[:-1]) and bin(p[-1]["last_be"]).count("1") == 1

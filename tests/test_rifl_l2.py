"""RIFL Layer 2 and host software: header pack/unpack, forwarding rule and rotation through random
multi-switch paths, reply routes back to the source, segmentation/reassembly of 1..4096-byte packets
with interleaved sources, the host frame codec against the independent encoder of test_rifl_link."""
import random

import pytest

from cores.rifl import common as c
from software.rifl import reference as ref
from software.rifl.demo import frame_error_threshold
from tests.harness.rifl import ref_ctrl_frame, ref_frame


def test_header_layout():
    h = c.l2_header_pack(5, 3, [1, 2, 3, 4, 255])
    assert c.l2_header_bytes(h) == bytes([0x53, 1, 2, 3, 4, 255])
    assert c.l2_header_unpack(c.l2_header_bytes(h)) == (5, 3, [1, 2, 3, 4, 255])
    assert c.L2_HEADER_BITS == 48 and c.L1_OVERHEAD_BYTES + c.L2_HEADER_BYTES == 8
    with pytest.raises(ValueError):
        c.l2_header_pack(6, 6, [])
    with pytest.raises(ValueError):
        c.l2_header_pack(2, 3, [1, 2])
    with pytest.raises(ValueError):
        c.dst_port(0, 1, 48)
    with pytest.raises(ValueError):
        c.l2_forward(c.l2_header_pack(2, 0, [1, 2]))


def walk(rng, header, path):
    """Send `header` through switches path = [(n_ports, input_port)]; returns outputs and final header."""
    outs = []
    for n, i in path:
        total, remain, ports = c.l2_header_unpack(header)
        assert remain > 0
        j = ports[0]
        assert not c.port_loops(j, n)
        outs.append(c.dst_port(i, j, n))
        header = c.l2_forward(header)
    assert c.l2_header_unpack(header)[1] == 0
    return outs, header


def test_routes_and_reply_routes():
    rng = random.Random(11)
    for _ in range(500):
        hops = rng.randint(1, c.MAX_HOPS)
        ns = [rng.choice([2, 4, 8, 16, 32, 64, 128, 256]) for _ in range(hops)]
        ins = [rng.randrange(n) for n in ns]
        outs_wanted = [rng.choice([p for p in range(n) if p != i]) for n, i in zip(ns, ins)]
        # the sender writes the relative offsets (independent of the rule: subtract)
        ports = [(o - i) % n for o, i, n in zip(outs_wanted, ins, ns)]
        header = c.l2_header_pack(hops, hops, ports)
        outs, arrived = walk(rng, header, list(zip(ns, ins)))
        assert outs == outs_wanted
        # reply: enters each switch at the port the request left by, must leave by the request's input
        back = c.reply_route(arrived)
        assert c.l2_header_unpack(back)[:2] == (hops, hops)
        back_outs, _ = walk(rng, back, list(zip(reversed(ns), reversed(outs_wanted))))
        assert back_outs == list(reversed(ins))
    assert c.port_loops(0, 8) and c.port_loops(16, 8) and not c.port_loops(3, 8)


def test_segmentation_round_trip_all_lengths():
    rng = random.Random(5)
    r = ref.Reassembler()
    for n in range(1, 4097):
        pkt = bytes(rng.getrandbits(8) for _ in range(n)) if n % 97 == 0 or n < 300 else bytes([n & 0xFF]) * n
        segs = ref.segment(pkt, c.l2_header_pack(0, 0, []))
        assert len(segs) == -(-(n + c.L2_LENGTH_BYTES) // c.SEGMENT_BYTES)
        assert all(len(s) == c.L2_PACKET_BYTES for s in segs)
        out = [r.feed(s) for s in segs]
        assert out[:-1] == [None] * (len(segs) - 1) and out[-1][1] == pkt
    assert r.partial == {}


def test_reassembly_interleaved_sources():
    rng = random.Random(6)
    sources = [c.l2_forward(c.l2_forward(c.l2_header_pack(2, 2, [p, q]))) for p, q in ((1, 3), (2, 5), (7, 7))]
    assert len({c.reply_route(s) for s in sources}) == 3
    packets = {s: [bytes(rng.getrandbits(8) for _ in range(rng.randint(1, 1500))) for _ in range(4)] for s in sources}
    queues = {s: [seg for p in packets[s] for seg in ref.segment(p, s)] for s in sources}
    r, got = ref.Reassembler(), {}
    while any(queues.values()):
        s = rng.choice([s for s in sources if queues[s]])
        res = r.feed(queues[s].pop(0))
        if res:
            got.setdefault(res[0], []).append(res[1])
    assert {c.reply_route(s): packets[s] for s in sources} == got
    with pytest.raises(ValueError):
        ref.segment(b"", sources[0])


def test_host_frame_codec():
    rng = random.Random(7)
    for F in (64, 256, 2048):
        P = c.payload_bytes(F)
        for _ in range(20):
            n = rng.randint(1, P)
            data = bytes(rng.getrandbits(8) for _ in range(n))
            fid = rng.randrange(4096)
            f = ref.encode_data(F, data, True, fid)
            body = bytearray(data) + bytes(P - n)
            if n < P:
                body[-1] = n
            meta = c.META_EOP | (c.META_ALL_VALID if n == P else 0)
            assert f == ref_frame(F, c.SYNC_DATA, meta, int.from_bytes(body, "big"), fid)
            sync, meta2, payload, syn = ref.decode(F, f)
            assert (sync, meta2, syn) == (c.SYNC_DATA, meta, fid)
            assert ref.data_bytes(F, meta2, payload) == data
            assert ref.decode(F, f ^ (1 << rng.randrange(F)))[3] != fid
        assert ref.encode_ctrl(F, code=c.CTRL_RETRANS, seq=77) == \
            ref_ctrl_frame(F, c.CTRL_RETRANS, 77)
    assert frame_error_threshold(0, 256) == 0
    assert abs(frame_error_threshold(1e-4, 256) / 2**32 - 0.02528) < 1e-4

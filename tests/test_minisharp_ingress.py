"""The ingress' submodules alone (Migen sim): MSHeaderCapture keeps each frame's first bytes, MSPayloadWriter
turns committed frames into zero-filled FP32 words, MSFrameClassifier sorts frames by the spec's rules in
priority order (checked against a Python statement of the rules)."""
import random
import struct

import pytest
from migen import run_simulation

from cores.minisharp import common as ms
from cores.minisharp.ingress import MSFrameClassifier, MSHeaderCapture, MSPayloadWriter
from tests.harness.streams import collect, frame_beats as beats


@pytest.mark.parametrize("dw", [8, 64])
def test_header_capture_keeps_the_first_bytes(dw):
    rng = random.Random(dw)
    n = ms.MS_HEADER_BYTES + ms.SETUP_RECORD_BYTES
    dut = MSHeaderCapture(dw, n)
    frames = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(n, 90))) for _ in range(12)]
    short = bytes(rng.getrandbits(8) for _ in range(16))
    seen = []

    def gen():
        for f in frames + [short]:
            for data, last, be in beats(f, dw):
                yield dut.sink.valid.eq(1)
                yield dut.sink.data.eq(data)
                yield dut.sink.last.eq(last)
                yield dut.sink.last_be.eq(be)
                yield
                if rng.random() < 0.3:                   # idle cycles between beats
                    yield dut.sink.valid.eq(0)
                    yield
            yield dut.sink.valid.eq(0)
            yield
            seen.append((yield dut.header).to_bytes(n, "little"))

    run_simulation(dut, gen())
    assert seen[:-1] == [f[:n] for f in frames]
    assert seen[-1] == short + frames[-1][16:n]          # a short frame rewrites only its own bytes


@pytest.mark.parametrize("dw,lanes", [(8, 1), (64, 2), (64, 8)])
def test_payload_writer_words_of_committed_frames_only(dw, lanes):
    rng = random.Random(dw + lanes)
    B, W = dw // 8, 4 * lanes
    dut = MSPayloadWriter(dw, lanes, depth=256)
    frames = [bytes(rng.getrandbits(8) for _ in range(rng.randrange(ms.MS_HEADER_BYTES + 1, 150)))
              for _ in range(16)]
    keep = [rng.random() < 0.6 for _ in frames]
    got = []

    def gen():
        for f, k in zip(frames, keep):
            for i, (data, last, be) in enumerate(beats(f, dw)):
                yield dut.sink.valid.eq(1)
                yield dut.sink.data.eq(data)
                yield dut.sink.last.eq(last)
                yield dut.sink.last_be.eq(be)
                yield dut.count.eq(i * B)
                yield
            yield dut.sink.valid.eq(0)
            yield
            yield dut.commit.eq(k)
            yield dut.abort.eq(not k)
            yield
            yield dut.commit.eq(0)
            yield dut.abort.eq(0)
            assert not (yield dut.overflow)
        for _ in range(400):
            yield

    run_simulation(dut, [gen(), collect(dut.source, got, rng, ["data"], ready_p=0.5)])
    want = []
    for f, k in zip(frames, keep):
        if k:
            payload = f[ms.MS_HEADER_BYTES:]
            payload += bytes(-len(payload) % W)
            for i in range(0, len(payload), W):
                values = struct.unpack(f">{lanes}I", payload[i:i + W])
                want.append(sum(v << (32 * ln) for ln, v in enumerate(values)))
    assert [g["data"] for g in got] == want


def classify(header, length, error, policy, admin=1, mac_filter=0, mac=ms.DEFAULT_MAC, partial_bad=0):
    """The spec's rules (v0.2: addressing, admin ports, COL_TEARDOWN) for a frame of `length` bytes with the
    first 24 bytes `header`, in priority order: ("drop", reason), ("forward",) or ("engine", kind)."""
    h = ms.MS_HEADER.unpack(ms.MS_HEADER.from_wire(header))
    major, minor = ms.split_version(h["version"])
    if error:
        return "drop", "phy_error"
    if length < ms.ETH_HEADER_BYTES:
        return "drop", "runt"
    if h["ethertype"] != ms.ETHERTYPE:
        return ("forward",) if policy == ms.MSP_TRANSPARENT else ("drop", "not_minisharp")
    if mac_filter and h["dst_mac"] not in (mac, ms.GROUP_MAC):
        return ("forward",)
    if length < ms.MS_HEADER_BYTES:
        return "drop", "runt"
    if major != ms.VERSION_MAJOR:
        return "drop", "bad_version"
    if h["opcode"] == ms.MS_OP_COL_RES:
        if not mac_filter:
            return ("forward",)
        r = ms.RES_HEADER.unpack(ms.RES_HEADER.from_wire(header))
        return ("drop", "bad_reserved") if r["reserved0"] or r["reserved1"] else ("engine", ms.KIND_RESULT)
    if h["opcode"] in (ms.MS_OP_COL_SETUP, ms.MS_OP_COL_DATA, ms.MS_OP_COL_TEARDOWN, ms.MS_OP_COL_PDATA):
        if h["opcode"] in (ms.MS_OP_COL_SETUP, ms.MS_OP_COL_TEARDOWN) and not admin:
            return "drop", "not_admin"
        hdr = ms.OP_HEADERS[h["opcode"]]
        if hdr.get(hdr.from_wire(header), "reserved"):
            return "drop", "bad_reserved"
        plen = length - ms.MS_HEADER_BYTES
        if h["opcode"] == ms.MS_OP_COL_SETUP:
            rec = ms.setup_record_bytes(minor)
            if plen < rec or (plen > rec and length > ms.ETH_MIN_FRAME):
                return "drop", "bad_length"
            return "engine", ms.KIND_SETUP
        if h["opcode"] == ms.MS_OP_COL_TEARDOWN:
            return ("drop", "bad_length") if length > ms.ETH_MIN_FRAME else ("engine", ms.KIND_TEARDOWN)
        if h["opcode"] == ms.MS_OP_COL_PDATA and partial_bad:
            return "drop", "bad_partial"
        return "engine", ms.KIND_DATA
    return "drop", "bad_opcode"


@pytest.mark.parametrize("dw", [8, 64])
def test_frame_classifier_rules_in_priority_order(dw):
    rng = random.Random(5 + dw)
    B = dw // 8
    dut = MSFrameClassifier(dw)
    cases = []
    for _ in range(400):
        op = rng.choice([ms.MS_OP_COL_SETUP, ms.MS_OP_COL_DATA, ms.MS_OP_COL_RES, ms.MS_OP_COL_TEARDOWN,
                         ms.MS_OP_COL_PDATA, 0, 0x55])
        dst = rng.choice([ms.DEFAULT_MAC, ms.GROUP_MAC, ms.BROADCAST_MAC, 0x024D5300FF00])
        fields = dict(ethertype=ms.ETHERTYPE if rng.random() < 0.85 else 0x0800, opcode=op, dst_mac=dst,
                      version=ms.version_byte(0 if rng.random() < 0.9 else 1, rng.randrange(16)))
        if rng.random() < 0.15:
            fields["op_header"] = 1 << (8 * rng.choice([0, 3, 7]))    # reserved bytes of one opcode or another
        header = ms.MS_HEADER.to_bytes(ms.MS_HEADER.pack(**fields))
        length = rng.choice([rng.randrange(1, 80), 40, 60, 61, 14, 24, 23, 13])
        cases.append((header, length, rng.random() < 0.05, rng.random() < 0.3, rng.random() < 0.8,
                      rng.random() < 0.3, rng.random() < 0.3))
    got = []

    def gen():
        yield dut.mac.eq(ms.DEFAULT_MAC)
        for header, length, error, policy, admin, mac_filter, pbad in cases:
            count = B * ((length - 1) // B)
            yield dut.header.eq(int.from_bytes(header, "little"))
            yield dut.policy.eq(policy)
            yield dut.admin.eq(admin)
            yield dut.mac_filter.eq(mac_filter)
            yield dut.partial_bad.eq(pbad)
            yield dut.last_beat.eq(1)
            yield dut.count.eq(count)
            yield dut.nvalid.eq(length - count)
            yield dut.error.eq(error)
            yield
            yield dut.last_beat.eq(0)
            for _ in range(3):
                yield
                if (yield dut.end):
                    break
            assert (yield dut.end)
            row = []
            for name in ("forward", "to_engine", "kind", "dropping", "reason", "payload_bytes", "raw_commit_end",
                         "payload_commit_end"):
                row.append((yield getattr(dut, name)))
            got.append(row)

    run_simulation(dut, gen())
    reasons = {v: k for k, v in ms.DROP.items()}
    for (header, length, error, policy, admin, mf, pbad), (fwd, eng, kind, dropping, reason, plen, raw_c, pl_c) in \
            zip(cases, got):
        want = classify(header, length, error, policy, admin, mf, partial_bad=pbad)
        if want[0] == "drop":
            assert (dropping, reasons[reason], fwd, eng) == (1, want[1], 0, 0), (header.hex(), length, want)
        else:
            assert (fwd, eng, dropping) == (want[0] == "forward", want[0] == "engine", 0), (length, want)
            if eng:
                assert kind == want[1]
        assert raw_c == fwd and pl_c == (eng and kind in (ms.KIND_DATA, ms.KIND_RESULT))
        assert plen == (length - ms.MS_HEADER_BYTES) % 2**16
    assert sum(g[3] for g in got) > 100 and sum(g[0] for g in got) > 30 and sum(g[1] for g in got) > 30

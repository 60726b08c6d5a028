"""MiniSharp host software: reference model, packet builder/parser, Scapy layers, Lua dissector, the
reduce() orchestration (against a lossy in-process switch model) and the CLI."""
import random
import shutil
import subprocess

import numpy as np
import pytest
from scapy.layers.l2 import Ether
from scapy.utils import str2mac

from cores.minisharp import common as ms
from software.minisharp import packets as P
from software.minisharp.__main__ import main as cli
from software.minisharp.dissector import lua_source
from software.minisharp.host import reduce
from software.minisharp.reference import exact_sum_fp32, reduce_vectors
from software.minisharp.scapy_layers import MSData, MSRes, MSSetup, MiniSharp

SW, HOST = ms.DEFAULT_SRC_MAC, ms.HOST_MAC


def test_reference_matches_ieee_addition_of_two_values():
    # IEEE addition of two floats is the exact sum rounded once: an independent oracle for the model.
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    b = rng.integers(0, 2**32, 20000, dtype=np.uint64).astype(np.uint32)
    b[:5000] = (a[:5000] ^ 0x80000000) + rng.integers(-3, 4, 5000).astype(np.uint32)   # cancellations
    with np.errstate(all="ignore"):
        s = (a.view(np.float32) + b.view(np.float32)).view(np.uint32)
    for x, y, z in zip(a.tolist(), b.tolist(), s.tolist()):
        got = exact_sum_fp32([x, y])
        if (z & 0x7F800000) == 0x7F800000 and z & 0x7FFFFF:
            assert got == ms.FP32_QNAN
        else:
            assert got == z, (hex(x), hex(y), hex(got), hex(z))


def test_packets_round_trip_and_chunking():
    vals = list(range(1, 601))
    frames = P.chunk_frames(SW, HOST, 0xDEADBEEF, 5, vals)
    assert [c for c, _ in frames] == [0, 1, 2]
    assert [len(f) for _, f in frames] == [ms.MS_HEADER_BYTES + 4 * n for n in (256, 256, 88)]
    back = [v for _, f in frames for v in P.parse(f, 600)["values"]]
    assert back == vals
    p = P.parse(frames[1][1])
    assert (p["rank"], p["collective_id"], p["chunk_index"], p["opcode"]) == (5, 0xDEADBEEF, 1, ms.MS_OP_COL_DATA)
    s = P.parse(P.setup_frame(SW, HOST, 7, P.setup_record(1000, 3, 0, 1)))
    assert s["record"]["element_count"] == 1000 and s["record"]["expected_local"] == 3
    assert len(P.setup_frame(SW, HOST, 7, P.setup_record(1, 1))) == ms.ETH_MIN_FRAME
    assert ms.MS_CHUNK_PAYLOAD_BYTES == 1024 and ms.MS_CHUNK_PAYLOAD_MAX == 1490


def test_scapy_layers_agree_with_builder():
    f = P.data_frame(SW, HOST, 0x1234, 3, 7, [1, 2, 0x3F800000])
    pkt = Ether(f)
    assert pkt[MiniSharp].opcode == ms.MS_OP_COL_DATA and pkt[MiniSharp].minor == ms.VERSION_MINOR
    assert (pkt[MSData].rank, pkt[MSData].collective_id, pkt[MSData].chunk_index) == (3, 0x1234, 7)
    assert pkt[MSData].values[:3] == [1, 2, 0x3F800000]
    built = bytes(Ether(dst=str2mac(SW.to_bytes(6, "big")), src=str2mac(HOST.to_bytes(6, "big"))) /
                  MiniSharp(opcode=ms.MS_OP_COL_DATA) /
                  MSData(rank=3, collective_id=0x1234, chunk_index=7, values=[1, 2, 0x3F800000]))
    assert built == P.data_frame(SW, HOST, 0x1234, 3, 7, [1, 2, 0x3F800000], pad=False)
    from software.minisharp.reference import encode_partial
    from software.minisharp.scapy_layers import MSPData, MSTeardown
    t = Ether(P.teardown_frame(SW, HOST, 0x77))
    assert (t[MiniSharp].opcode, t[MiniSharp].minor, t[MSTeardown].collective_id) == \
        (ms.MS_OP_COL_TEARDOWN, ms.VERSION_MINOR_V02, 0x77)
    el = encode_partial((-5, frozenset({"pinf"})))
    d = Ether(P.pdata_frame(SW, HOST, 0x77, 2, 9, [el, el]))
    assert (d[MSPData].rank, d[MSPData].chunk_index, [bytes(e) for e in d[MSPData].elements]) == (2, 9, [el, el])
    s = Ether(P.setup_frame(SW, HOST, 9, P.setup_record(100, 4, 0, 1)))
    assert (s[MSSetup].collective_id, s[MSSetup].element_count, s[MSSetup].expected_local) == (9, 100, 4)
    r = Ether(P.res_frame(SW, HOST, 9, 2, [5]))
    assert (r[MSRes].collective_id, r[MSRes].chunk_index, r[MSRes].values[0]) == (9, 2, 5)


def test_lua_dissector_is_generated_from_the_abi(tmp_path):
    src = lua_source()
    assert f"{ms.ETHERTYPE:#06x}" in src
    for op, name in ms.OPCODES.items():
        assert f'[{op}] = "{name}"' in src
    path = tmp_path / "minisharp.lua"
    assert cli(["dissector", "-o", str(path)]) == 0 and path.read_text() == src


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_lua_dissector_in_tshark(tmp_path):
    """tshark decodes a setup, a data and a result frame with the generated dissector: opcodes, header
    fields, setup record and every FP32 value (frames of 16 values: no Ethernet padding)."""
    from scapy.utils import wrpcap
    lua = tmp_path / "minisharp.lua"
    lua.write_text(lua_source())
    pcap = tmp_path / "ms.pcap"
    vals = [0x3F800000, 0xC0200000, 0x50DF8476, 0x3E000000] * 4        # 1, -2.5, 3e10, 0.125
    frames = [P.setup_frame(SW, HOST, 0xC0FFEE, P.setup_record(1000, 4, 0, 1)),
              P.data_frame(SW, HOST, 0x1234, 3, 7, vals),
              P.res_frame(SW, HOST, 0xABCDEF01, 9, [0x40D00000] * 16)]     # 6.5
    wrpcap(str(pcap), [Ether(f) for f in frames])
    fields = ["minisharp.opcode", "minisharp.major", "minisharp.minor", "minisharp.setup.collective_id",
              "minisharp.rec.element_count", "minisharp.rec.expected_local", "minisharp.rec.egress_last",
              "minisharp.data.rank", "minisharp.data.collective_id", "minisharp.data.chunk_index",
              "minisharp.res.collective_id", "minisharp.res.chunk_index", "minisharp.value"]
    cmd = ["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-T", "fields"]
    for f in fields:
        cmd += ["-e", f]
    rows = [line.split("\t") for line in subprocess.run(cmd, capture_output=True, text=True,
                                                         check=True).stdout.splitlines()]
    got = [dict(zip(fields, r)) for r in rows]
    assert [g["minisharp.opcode"] for g in got] == [str(ms.MS_OP_COL_SETUP), str(ms.MS_OP_COL_DATA),
                                                    str(ms.MS_OP_COL_RES)]
    assert all((g["minisharp.major"], g["minisharp.minor"]) == (str(ms.VERSION_MAJOR), str(ms.VERSION_MINOR))
               for g in got)
    assert (got[0]["minisharp.setup.collective_id"], got[0]["minisharp.rec.element_count"],
            got[0]["minisharp.rec.expected_local"], got[0]["minisharp.rec.egress_last"]) == \
        ("0x00c0ffee", "1000", "4", "1")
    assert (got[1]["minisharp.data.rank"], got[1]["minisharp.data.collective_id"],
            got[1]["minisharp.data.chunk_index"]) == ("3", "0x00001234", "7")
    assert [float(v) for v in got[1]["minisharp.value"].split(",")] == [1.0, -2.5, 3e10, 0.125] * 4
    assert (got[2]["minisharp.res.collective_id"], got[2]["minisharp.res.chunk_index"]) == ("0xabcdef01", "9")
    assert got[2]["minisharp.value"].split(",") == ["6.5"] * 16


V02_ELEMENTS = [(-5, frozenset({"pinf"})), ((1 << ms.PARTIAL_MAG_BITS) - 1, frozenset()),
                (-(1 << ms.PARTIAL_MAG_BITS), frozenset({"nan", "negzero"}))]


def _v02_frames():
    from software.minisharp.reference import encode_partial
    rec = P.setup_record_v02(1000, 3, 0, 2, role=ms.MS_ROLE_CHILD, uplink_port=2, parent_rank=1,
                             parent_mac=0x024D53000300, input_fmt=ms.MS_FMT_EXACT, output_fmt=ms.MS_FMT_EXACT)
    return [P.setup_frame(SW, HOST, 0xC0FFEE, rec, minor=ms.VERSION_MINOR_V02),
            P.teardown_frame(SW, HOST, 0xC0FFEE),
            P.pdata_frame(SW, HOST, 0xC0FFEE, 2, 11, [encode_partial(e) for e in V02_ELEMENTS])]


def test_scapy_decodes_v02_records_and_partials():
    """A minor-2 setup's tree fields, a teardown, and COL_PDATA's elements (flags and the signed 312-bit N, the
    reference's (N, flags) back), each rebuilt byte for byte; a v0.1 record stops at 16 bytes."""
    from software.minisharp.scapy_layers import MSPData, MSPartial, MSTeardown
    setup, teardown, pdata = (Ether(f) for f in _v02_frames())
    s = setup[MSSetup]
    assert (s.role, s.uplink_port, s.parent_rank, s.parent_mac, s.input_fmt, s.expected_local) == \
        (ms.MS_ROLE_CHILD, 2, 1, "02:4d:53:00:03:00", ms.MS_FMT_EXACT, 3)
    assert teardown[MSTeardown].collective_id == 0xC0FFEE and teardown[MiniSharp].minor == ms.VERSION_MINOR_V02
    d = pdata[MSPData]
    assert (d.rank, d.chunk_index) == (2, 11)
    assert [e.exact() for e in d.elements] == V02_ELEMENTS
    assert [e.n for e in d.elements] == [n for n, _ in V02_ELEMENTS]
    assert bytes(d.elements[2]) == bytes(MSPartial(flags="nan+negzero", n=-(1 << ms.PARTIAL_MAG_BITS)))
    words = [int.from_bytes(bytes(e)[i:i + 4], "big") for e in d.elements for i in range(0, len(bytes(e)), 4)]
    assert [e.exact() for e in Ether(P.res_frame(SW, HOST, 0xC0FFEE, 11, words))[MSRes].partials()] == V02_ELEMENTS
    for pkt, frame in zip((setup, teardown, pdata), _v02_frames()):
        assert bytes(pkt) == frame
    v01 = Ether(P.setup_frame(SW, HOST, 9, P.setup_record(100, 4, 0, 1)))
    assert "role" not in v01[MSSetup].fields and len(bytes(v01[MSSetup].payload)) == 20     # Ethernet padding


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_lua_dissector_decodes_v02_in_tshark(tmp_path):
    """tshark with the generated dissector: a minor-2 setup's tree fields, a teardown's header, COL_PDATA's
    header and every element's flags and N bytes."""
    from scapy.utils import wrpcap
    from software.minisharp.reference import encode_partial
    lua = tmp_path / "minisharp.lua"
    lua.write_text(lua_source())
    pcap = tmp_path / "v02.pcap"
    wrpcap(str(pcap), [Ether(f) for f in _v02_frames()])
    fields = ["minisharp.opcode", "minisharp.minor", "minisharp.setup.collective_id", "minisharp.rec.role",
              "minisharp.rec.uplink_port", "minisharp.rec.parent_rank", "minisharp.rec.parent_mac",
              "minisharp.data.rank", "minisharp.data.chunk_index", "minisharp.partial.flags",
              "minisharp.partial.nan", "minisharp.partial.pinf", "minisharp.partial.n"]
    cmd = ["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-T", "fields", "-E", "occurrence=a"]
    for f in fields:
        cmd += ["-e", f]
    rows = [dict(zip(fields, line.split("\t"))) for line in
            subprocess.run(cmd, capture_output=True, text=True, check=True).stdout.splitlines()]
    assert [r["minisharp.opcode"] for r in rows] == [str(op) for op in (ms.MS_OP_COL_SETUP, ms.MS_OP_COL_TEARDOWN,
                                                                        ms.MS_OP_COL_PDATA)]
    assert all(r["minisharp.minor"] == str(ms.VERSION_MINOR_V02) for r in rows)
    assert (rows[0]["minisharp.rec.role"], rows[0]["minisharp.rec.uplink_port"], rows[0]["minisharp.rec.parent_rank"],
            rows[0]["minisharp.rec.parent_mac"]) == (str(ms.MS_ROLE_CHILD), "2", "1", "02:4d:53:00:03:00")
    assert rows[1]["minisharp.setup.collective_id"] == "0x00c0ffee" and rows[1]["minisharp.rec.role"] == ""
    assert (rows[2]["minisharp.data.rank"], rows[2]["minisharp.data.chunk_index"]) == ("2", "11")
    els = [encode_partial(e) for e in V02_ELEMENTS]
    assert rows[2]["minisharp.partial.flags"].split(",") == [f"0x{e[0]:02x}" for e in els]
    assert rows[2]["minisharp.partial.n"].split(",") == [e[1:].hex() for e in els]
    assert rows[2]["minisharp.partial.nan"].split(",") == ["0", "0", "1"]
    assert rows[2]["minisharp.partial.pinf"].split(",") == ["1", "0", "0"]


class LossySwitch:
    """In-process stand-in for the switch: reference sums, drops ~10% of data frames (`loss`), and keeps the
    switch's completion window: a contribution to a completed chunk is dropped (a late duplicate), one
    DONE_WINDOW or more chunks past the oldest incomplete chunk is dropped as `ahead`."""
    def __init__(self, seed, loss=0.1, chunk_elements=ms.MS_CHUNK_ELEMENTS):
        self.rng, self.loss, self.ce = random.Random(seed), loss, chunk_elements
        self.ctx, self.slots, self.done, self.out = None, {}, set(), []
        self.drops = {"duplicate": 0, "ahead": 0}
        self.mac = HOST

    def send(self, frame):
        p = P.parse(frame)
        if p["opcode"] == ms.MS_OP_COL_SETUP:
            self.ctx, self.slots, self.done = p["record"], {}, set()
            return
        if self.rng.random() < self.loss:
            return
        c = p["chunk_index"]
        base = next(k for k in range(c + 1) if k not in self.done) if c not in self.done else None
        if base is None:
            self.drops["duplicate"] += 1
            return
        if c >= base + ms.DONE_WINDOW:
            self.drops["ahead"] += 1
            return
        n = self.ctx["element_count"]
        slot = self.slots.setdefault(c, {})
        slot[p["rank"]] = P.parse(frame, n, self.ce)["values"]
        if len(slot) == self.ctx["expected_local"]:
            self.out.append(P.res_frame(HOST, SW, p["collective_id"], c, reduce_vectors(list(slot.values()))))
            self.done.add(c)
            del self.slots[c]

    def recv(self, timeout):
        return self.out.pop(0) if self.out else None


def test_reduce_orchestration_with_losses():
    rng = random.Random(2)
    vectors = [[rng.getrandbits(32) & 0xBF7FFFFF for _ in range(1000)] for _ in range(4)]
    res = reduce(LossySwitch(3), vectors, collective_id=5, retry_s=0.0, window=3)
    assert res["mismatches"] == [] and res["collector"].complete() and res["retries"] > 0
    assert res["collector"].vector() == [exact_sum_fp32(c) for c in zip(*vectors)]


def test_reduce_keeps_shuffled_chunks_inside_the_switch_window():
    """More chunks than the switch's completion window, sent in shuffled order: the host never sends a
    chunk the switch would drop as `ahead` (found by `make sim`: 391 shuffled chunks stopped at the first one
    64 past the oldest incomplete chunk, resent until the host gave up)."""
    ce, n_chunks = 8, 3 * ms.DONE_WINDOW
    rng = random.Random(4)
    vectors = [[rng.getrandbits(32) & 0xBF7FFFFF for _ in range(ce * n_chunks)] for _ in range(3)]
    switch = LossySwitch(5, loss=0.02, chunk_elements=ce)
    res = reduce(switch, vectors, collective_id=6, retry_s=0.0, window=4, chunk_elements=ce, max_retries=50)
    assert res["mismatches"] == [] and res["collector"].complete()
    assert switch.drops["ahead"] == 0

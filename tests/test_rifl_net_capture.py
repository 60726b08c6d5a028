"""Captures of a RIFL network run (sim.verilated.rifl_net, pcap link types PCAP_DLT_L1 / PCAP_DLT_L2) decoded by the
Scapy layers (software.rifl.scapy_layers) and, record by record the same, by the generated Lua dissector in
tshark (software.rifl.dissector)."""
import shutil
import subprocess

import pytest
from scapy.utils import rdpcap

from cores.rifl import common as c
from software.rifl.dissector import lua_source
from software.rifl.scapy_layers import RIFLCtrl, RIFLL1, RIFLL2
from tests.harness.rifl_net import check_run, net_model, random_packets, seeded
from tests.test_rifl_net_switch import TOPO, ber_events

pytestmark = [pytest.mark.long, pytest.mark.extended]     # the whole file: tens of seconds or more


def capture_run(tmp_path):
    m = net_model(TOPO, latency=8)
    packets = random_packets(seeded(21), TOPO, 6, srcs=[1], dsts=[0, 2, 3], lengths=(8, 700))
    up = next(k for k, (a, b) in enumerate(TOPO.links) if a == ("h", 1))
    chan = 2 * up                                       # host 1 -> switch
    r = m.run(packets, ber_events(m, 3e-4, channels=[chan]), seed=22, capture=[chan],
              capture_prefix=str(tmp_path / "run"))
    check_run(m, packets, r)
    return m, packets, r, chan, tmp_path / f"run_c{chan}_l1.pcap", tmp_path / f"run_c{chan}_l2.pcap"


def test_capture_decodes_with_scapy(tmp_path):
    """Every frame slot of the line is one L1 record; the numbered frames carry every id 0, 1, 2, ... (replays
    repeat ids), errors show as unnumbered frames with a syndrome; each L2 record is one Layer 2 packet with
    the route the host sent (the switch has not forwarded it yet)."""
    m, packets, r, chan, l1, l2 = capture_run(tmp_path)
    frames = rdpcap(str(l1))
    assert len(frames) == r.cycles + 1
    ids, codes, bad = [], set(), 0
    for p in frames:
        f = RIFLL1(p.original)
        if f.sync == c.SYNC_DATA or (f.sync == c.SYNC_CTRL and f[RIFLCtrl].code == c.CTRL_FC):
            ids.append(f.syndrome)
        elif f.sync == c.SYNC_CTRL and f.syndrome == 0:
            codes.add(f[RIFLCtrl].code)
        else:
            bad += 1
    assert {c.CTRL_PAUSE, c.CTRL_IDLE, c.CTRL_REPLAY} <= codes and bad > 0      # RETRANS goes the other way
    sent = r.counters["h1_tx_frames"]
    assert set(range(sent)) <= set(ids)                  # every numbered frame went out (some twice: replays)
    assert len(ids) >= sent + r.counters["h1_tx_replayed"]
    units = [RIFLL2(p.original) for p in rdpcap(str(l2))]
    assert len(units) == r.counters["h1_tx_segments"] and all(len(bytes(u)) == c.L2_PACKET_BYTES for u in units)
    routes = {TOPO.route(1, d) for d in (0, 2, 3)}
    assert {u.header() for u in units} <= routes and all(u.remain_hops == u.total_hops == 1 for u in units)


@pytest.mark.skipif(shutil.which("tshark") is None, reason="tshark not installed")
def test_lua_dissector_in_tshark(tmp_path):
    m, packets, r, chan, l1, l2 = capture_run(tmp_path)
    lua = tmp_path / "rifl.lua"
    lua.write_text(lua_source())

    def tshark(pcap, fields):
        cmd = ["tshark", "-X", f"lua_script:{lua}", "-r", str(pcap), "-T", "fields"]
        for f in fields:
            cmd += ["-e", f]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        return [dict(zip(fields, line.split("\t"))) for line in out.splitlines()]
    rows = tshark(l1, ["rifl_l1.sync", "rifl_l1.syndrome", "rifl_l1.code", "rifl_l1.seq", "rifl_l1.data"])
    frames = [RIFLL1(p.original) for p in rdpcap(str(l1))]
    assert len(rows) == len(frames)
    for row, f in zip(rows, frames):
        assert int(row["rifl_l1.sync"]) == f.sync and int(row["rifl_l1.syndrome"]) == f.syndrome
        if f.sync == c.SYNC_CTRL:
            assert (int(row["rifl_l1.code"]), int(row["rifl_l1.seq"])) == (f[RIFLCtrl].code, f[RIFLCtrl].seq)
    rows = tshark(l2, ["rifl_l2.total_hops", "rifl_l2.remain_hops", "rifl_l2.dst_port1", "rifl_l2.reply"])
    units = [RIFLL2(p.original) for p in rdpcap(str(l2))]
    assert len(rows) == len(units) > 0
    for row, u in zip(rows, units):
        assert (int(row["rifl_l2.total_hops"]), int(row["rifl_l2.remain_hops"]), int(row["rifl_l2.dst_port1"])) == \
            (u.total_hops, u.remain_hops, u.dst_port1)
        assert int(row["rifl_l2.reply"], 16) == u.reply()

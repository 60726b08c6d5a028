"""InternalPHY, the internal Ethernet port under the boards' management stack: frames of every length cross
its width converters (MiniSharp's 16- or 32-bit management port <-> the 8-bit LiteEth MAC) byte for byte,
with the right last_be, under random valid/ready on both sides; and the whole management stack
(InternalEtherbone) answers Etherbone in sys or in a clock domain of its own (Migen simulator)."""
import random

import pytest
from migen import If, Module, ResetSignal
from migen.sim import run_simulation

from litex.soc.interconnect import stream
from liteeth.common import eth_phy_description

from soc.common import ETHERBONE_UDP_PORT, SOC_IP_ADDRESS, SOC_MAC_ADDRESS
from soc.innet_soc import InternalEtherbone, InternalPHY
from tests.harness.streams import collect, frame_beats, packets, send
from tests.harness.tiers import extended


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


HOST_MAC, HOST_IP = "02:00:00:00:0a:01", "192.168.1.100"


def etherbone_frame(record):
    """An Ethernet frame from the host to the SoC's Etherbone port carrying one Etherbone record."""
    from litex.tools.remote.etherbone import EtherbonePacket
    from scapy.layers.inet import IP, UDP
    from scapy.layers.l2 import Ether
    packet = EtherbonePacket(32)
    packet.records = [record]
    packet.encode()
    board = ":".join(f"{b:02x}" for b in SOC_MAC_ADDRESS.to_bytes(6, "big"))
    return bytes(Ether(dst=board, src=HOST_MAC) / IP(src=HOST_IP, dst=SOC_IP_ADDRESS) /
                 UDP(sport=ETHERBONE_UDP_PORT, dport=ETHERBONE_UDP_PORT) / bytes(packet.bytes))


class _EtherboneTop(Module):
    """InternalEtherbone on a `dw`-bit internal port with a Wishbone RAM on its bus; with cd "mgmt", the stack's
    clock is sys divided by 2 * `div` (a register toggling in sys: unrelated edges for the CDC logic)."""
    def __init__(self, dw, cd, div=3):
        from litex.soc.interconnect import wishbone
        from migen import ClockDomain, Signal
        self.to_stack, self.from_stack = stream.Endpoint(eth_phy_description(dw)), stream.Endpoint(eth_phy_description(dw))
        self.submodules.eb = eb = InternalEtherbone(self.to_stack, self.from_stack, dw, sys_clk_freq=int(100e6),
                                                    cd=cd, cd_freq=int(100e6) // (2 * div) if cd != "sys" else None)
        self.submodules.ram = wishbone.SRAM(256, bus=eb.bus)
        if cd != "sys":
            self.clock_domains.cd_mgmt = ClockDomain()
            count, clk = Signal(max=div), Signal()
            self.sync += If(count == div - 1, count.eq(0), clk.eq(~clk)).Else(count.eq(count + 1))
            self.comb += self.cd_mgmt.clk.eq(clk), self.cd_mgmt.rst.eq(ResetSignal("sys"))


@pytest.mark.parametrize("cd", [extended("sys"), "mgmt"])
def test_internal_etherbone_writes_and_reads(cd):
    """InternalEtherbone behind a 16-bit internal port, its stack in sys or in a slower clock domain of its own
    (a sixth of sys, through the MAC's FIFOs and a WishboneClockCrossing), in Verilator: a host's Etherbone
    writes land in a Wishbone RAM in sys and its read returns them (after the host answers the board's ARP
    request), under random valid/ready at the port."""
    from litex.tools.remote.etherbone import EtherbonePacket, EtherboneReads, EtherboneRecord, EtherboneWrites
    from scapy.layers.inet import UDP
    from scapy.layers.l2 import ARP, Ether
    from sim.verilated import CycleSim
    dw, rng = 16, random.Random(5)
    top = _EtherboneTop(dw, cd)
    tx, rx = top.to_stack, top.from_stack
    sim = CycleSim(top, {"i_valid": (tx.valid, True), "i_data": (tx.data, True), "i_last": (tx.last, True),
                         "i_last_be": (tx.last_be, True), "o_ready": (tx.ready, False),
                         "o_valid": (rx.valid, False), "o_data": (rx.data, False), "o_last": (rx.last, False),
                         "o_last_be": (rx.last_be, False), "i_ready": (rx.ready, True)}, name=f"eb_{cd}")
    addrs = rng.sample(range(64), 6)
    values = [rng.getrandbits(32) for _ in addrs]
    requests = []
    for a, v in zip(addrs, values):
        record = EtherboneRecord()
        record.writes = EtherboneWrites(base_addr=4 * a, datas=[v])
        record.wcount = 1
        requests.append(etherbone_frame(record))
    record = EtherboneRecord()
    record.reads = EtherboneReads(base_ret_addr=0x1234, addrs=[4 * a for a in addrs])
    record.rcount = len(addrs)
    requests.append(etherbone_frame(record))
    answers, arp_requests, beats, frame = [], [], [], []
    try:
        for _ in range(60000):
            if not beats and requests:
                beats = wide_beats(requests.pop(0), dw)
            valid = int(bool(beats) and rng.random() < 0.7)
            ready = int(rng.random() < 0.7)
            beat = beats[0] if valid else {"data": 0, "last": 0, "last_be": 0}
            out = sim.step(i_valid=valid, i_data=beat["data"], i_last=beat["last"], i_last_be=beat["last_be"],
                           i_ready=ready)
            if valid and out["o_ready"]:
                beats.pop(0)
            if not (out["o_valid"] and ready):
                continue
            frame.append({"data": out["o_data"], "last": out["o_last"], "last_be": out["o_last_be"]})
            if not out["o_last"]:
                continue
            f, frame = Ether(wide_frame(frame, dw)), []
            if ARP in f and f[ARP].op == 1 and f[ARP].pdst == HOST_IP:
                arp_requests.append(f)
                requests.append(bytes(Ether(dst=f.src, src=HOST_MAC) /      # padded to 60 bytes, as on a wire
                                      ARP(op=2, hwsrc=HOST_MAC, psrc=HOST_IP, hwdst=f.src, pdst=f[ARP].psrc)
                                      ).ljust(60, b"\0"))
            elif UDP in f:
                answer = EtherbonePacket(32, bytes(f[UDP].payload))
                answer.decode()
                answers.append(answer.records[0].writes)
                break
    finally:
        sim.close()
    assert len(arp_requests) == 1
    assert len(answers) == 1 and answers[0].base_addr == 0x1234
    assert answers[0].get_datas() == values

"""The RIFL NIC (cores/rifl_nic) end to end: host memory -> LitePCIe DMA read -> RIFL link -> switch -> RIFL
link -> DMA write into the other host's slots and completion ring, two NICs on a 2-port switch in one
Verilated model (sim/verilated/rifl_nic.py), driven by the host driver (software/rifl/nic.py) under seeded
random PCIe back-pressure. Checked against the Layer 2 reference (l2_deliver, reply_route) and the
topology's routing; the counters must add up."""
import random

import pytest

from cores.rifl.common import l2_deliver, l2_header_pack
from cores.rifl_net.topology import one_switch
from cores.rifl_nic.common import NIC_MAX_PACKET
from litepcie.tlp.common import fmt_dict
from software.rifl.nic import NicError, RiflNic
from sim.verilated.rifl_nic import NICSim, run_traffic

EDGE_LENGTHS = (1, 7, 8, 9, 254, 255, 256, 257, 1024, 2047, NIC_MAX_PACKET)


@pytest.fixture(scope="module")
def nsim():
    s = NICSim(one_switch(2), quick_build=True)       # the bench's quick model: built once for both
    yield s
    s.close()


def _packets(rng, hosts, count, lengths=None):
    out = []
    for src in range(hosts):
        sizes = list(lengths or []) + [rng.randint(1, NIC_MAX_PACKET) for _ in range(count - len(lengths or []))]
        rng.shuffle(sizes)
        out.append([(rng.choice([d for d in range(hosts) if d != src]), rng.randbytes(n)) for n in sizes])
    return out


def _check(nsim, packets, deliveries, slots=(32, 32)):
    """Every packet once, intact, in order per (source, destination), with the delivered header; counters;
    the MMIO writes to BAR0 (`slots`: each driver's receive slots)."""
    topo = nsim.topology
    assert sorted((d.src, d.index) for d in deliveries) == sorted((s, i) for s, p in enumerate(packets)
                                                                  for i in range(len(p)))
    last = {}
    for d in deliveries:
        dst, payload = packets[d.src][d.index]
        assert (d.dst, d.payload) == (dst, payload), f"packet {d.index} of host {d.src}"
        assert d.header == l2_deliver(topo.route(d.src, dst))
        assert d.index > last.get((d.src, d.dst), -1), "reordered within a flow"
        last[(d.src, d.dst)] = d.index
        assert d.arrived > d.posted
    out = nsim.out
    for h in range(topo.hosts):
        assert out[f"h{h}_tx_packets"] == len(packets[h])
        assert out[f"h{h}_rx_packets"] == out[f"h{h}_delivered"] == sum(d.dst == h for d in deliveries)
        assert out[f"h{h}_tx_refused"] == 0
        assert {t[:2] for t in nsim.hosts[h].tlps} <= {(fmt_dict["mem_rd32"], 0), (fmt_dict["mem_wr32"], 0)}
        # Every post went over BAR0: a tx_length write a packet (the other descriptor registers when they
        # change), the ring registers once, a slot at the start and after each packet received.
        writes = nsim.ports[h].writes
        assert writes["tx_length"] == len(packets[h]) == out[f"h{h}_tx_packets"]
        assert writes["rx_slot"] == slots[h] + sum(d.dst == h for d in deliveries)
        assert writes["rx_ring_base"] == writes["rx_ring_log2"] == 1
        assert all(writes[r] <= len(packets[h]) for r in ("tx_route_hi", "tx_route_lo", "tx_address"))
    assert out["drops"] == 0


@pytest.mark.parametrize("seed, prob", [(1, 1.0), (2, 0.7)])
def test_packets_both_ways_exact(nsim, seed, prob):
    """40 packets each way (the edge lengths and random ones up to 2048 bytes), both NICs sending at once,
    the root complex taking TLPs and returning completions with probability `prob` (completions of
    different reads interleaved)."""
    nsim.restart(seed, ready_prob=prob, valid_prob=prob)
    packets = _packets(random.Random(seed), 2, 40, EDGE_LENGTHS)
    _check(nsim, packets, run_traffic(nsim, packets))


def test_slow_host_is_lossless(nsim):
    """A receiver with 2 slots that polls every 4000 cycles: packets wait for slots in the NIC and behind
    the link's flow control, none is lost or reordered."""
    nsim.restart(3)
    packets = [[(1, random.Random(k).randbytes(NIC_MAX_PACKET - k)) for k in range(24)], []]
    drivers = [RiflNic(nsim.ports[0]), RiflNic(nsim.ports[1], slots=2, ring_log2=1)]
    deliveries = run_traffic(nsim, packets, drivers=drivers, poll_every=4000)
    _check(nsim, packets, deliveries, slots=(32, 2))
    assert nsim.out["h1_rx_wait_slot"] > 10_000


def test_refusals(nsim):
    """The driver refuses bad packets before posting (one-line NicError); the NIC drops bad descriptors
    posted anyway (tx_refused, no read issued); a looping route is dropped and counted by the switch;
    traffic after each goes through."""
    nsim.restart(4)
    nic, rx = RiflNic(nsim.ports[0]), RiflNic(nsim.ports[1])
    for payload, route, msg in ((b"", 0, "1..2048 bytes"), (bytes(NIC_MAX_PACKET + 1), 0, "1..2048 bytes"),
                                (b"x", 1 << 48, "48-bit")):
        with pytest.raises(NicError, match=msg):
            nic.send(payload, route)
    nsim.ports[0].post_tx(nic.tx_base, 0, nsim.topology.route(0, 1))
    nsim.ports[0].post_tx(nic.tx_base, NIC_MAX_PACKET + 1, nsim.topology.route(0, 1))
    assert nic.send(b"loop" * 10, l2_header_pack(1, 1, [2]))         # Dst Port 2 = 0 mod 2: back out of port 0
    for _ in range(3000):
        nsim.step()
    assert nsim.out["h0_tx_refused"] == 2 and nsim.out["h0_tx_packets"] == 1
    assert sum(t[0] == fmt_dict["mem_rd32"] for t in nsim.hosts[0].tlps) == 1
    assert nsim.out["drops"] == 1 and rx.poll() == []
    packets = [[(1, b"after the refusals")], []]
    deliveries = run_traffic(nsim, packets, drivers=[nic, rx])
    assert [d.payload for d in deliveries] == [b"after the refusals"]
    assert nsim.out["h0_tx_refused"] == 2 and nsim.out["drops"] == 1


def test_bar0_reads_back_and_counts(nsim):
    """The NIC's CSRs over BAR0 (TLPHost MMIO -> LitePCIe's Wishbone master -> Wishbone2CSR -> CSR bank): a
    written register reads back, a descriptor posted by register writes with length 0 is refused and the
    tx_refused counter read over BAR0 says so, in the order the requests were sent."""
    nsim.restart(5)
    host, csr = nsim.hosts[0], nsim.cards[0].csr_address
    host.mmio_write(csr["rx_ring_base"], 0x123458)
    for name, value in (("tx_route_hi", 0), ("tx_route_lo", 1), ("tx_address", 0x40000), ("tx_length", 0)):
        host.mmio_write(csr[name], value)
    tags = [host.mmio_read(csr[name]) for name in ("rx_ring_base", "tx_address", "tx_refused", "tx_packets")]
    for _ in range(400):
        nsim.step()
    assert [host.mmio_done.get(t) for t in tags] == [0x123458, 0x40000, 1, 0]
    assert nsim.out["h0_tx_refused"] == 1 and not [t for t in host.tlps if t[0] == fmt_dict["mem_rd32"]]


def test_bench_quick(nsim):
    """`make bench BENCH=rifl_nic` in quick mode (on the file's model, the one the quick bench builds):
    every row exact (the bench checks each payload), goodput below the PCIe limit and above a third of it
    for 2 KiB packets, latency growing with the size."""
    from sim.bench import bench_rifl_nic
    res = bench_rifl_nic.run(quick=True, nsim=nsim)
    rows = res.data["goodput"]
    assert {(r["bytes"], r["directions"]) for r in rows} == {(64, 1), (64, 2), (2048, 1), (2048, 2)}
    assert all(0 < r["ratio"] < 1 for r in rows)
    assert min(r["ratio"] for r in rows if r["bytes"] == 2048) > 0.33
    lat = {r["bytes"]: r["median_cycles"] for r in res.data["latency"]}
    assert lat[64] < lat[2048]


def test_csr_front_posts_descriptors():
    """RIFLNICPort(with_csr=True), as a board exposes it over BAR0: writing tx_length posts a descriptor from
    the route and address registers, writing rx_slot posts a slot, the ring registers reach the receiver
    (Migen simulation of the port with LitePCIe's endpoint and DMA on the model PHY)."""
    from migen import Module
    from migen.sim import run_simulation
    from litex.soc.interconnect import stream
    from litepcie.core import LitePCIeEndpoint
    from litepcie.frontend.dma import LitePCIeDMA
    from cores.rifl.common import L2_RX_PARAMS, L2_TX_PARAMS, l2_data_layout
    from cores.rifl_nic.nic import RIFLNICPort
    from sim.models.pcie import ModelPHY

    class Host:
        sink = stream.Endpoint(stream.EndpointDescription(l2_data_layout(256), L2_TX_PARAMS))
        source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(256), L2_RX_PARAMS))

    m = Module()
    m.submodules.phy = phy = ModelPHY()
    m.submodules.ep = ep = LitePCIeEndpoint(phy, endianness=phy.endianness)
    m.submodules.dma = dma = LitePCIeDMA(phy, ep, with_table=False)
    m.submodules.port = port = RIFLNICPort(dma, Host(), with_csr=True)
    assert {c.name for c in port.get_csrs()} >= {"tx_route_hi", "tx_route_lo", "tx_address", "tx_length", "rx_slot",
                                                 "rx_ring_base", "rx_ring_log2", "tx_packets", "tx_refused",
                                                 "rx_packets", "rx_wait_slot"}
    route = l2_header_pack(1, 1, [1])
    got = {}

    def write(csr, value):
        yield csr.storage.eq(value)
        yield csr.re.eq(1)
        yield
        yield csr.re.eq(0)

    def gen():
        yield from write(port._tx_route_hi, route >> 32)
        yield from write(port._tx_route_lo, route & 0xffffffff)
        yield from write(port._tx_address, 0x12340)
        yield from write(port._tx_length, 777)
        yield from write(port._rx_ring_base, 0x80000)
        yield from write(port._rx_ring_log2, 6)
        for _ in range(3):
            yield
        src = port.tx_queue.source
        got["tx"] = ((yield src.valid), (yield src.address), (yield src.length), (yield src.route))
        got["ring"] = ((yield port.ring_base), (yield port.ring_log2))
        got["slots"] = (yield port.slots.level)
        yield from write(port._rx_slot, 0x40000)
        yield
        got["slots_after"] = (yield port.slots.level)

    run_simulation(m, gen())
    assert got["tx"] == (1, 0x12340, 777, route)
    assert got["ring"] == (0x80000, 6)
    assert (got["slots"], got["slots_after"]) == (0, 1)


def test_ac701_gateware_and_lint(tmp_path):
    """The AC701 NIC target (boards/xilinx_ac701_rifl_nic.py: PCIe Gen2 x1, the NIC's CSRs over BAR0, the RIFL
    host on the SFP's GTP) generates its gateware (Verilog, XDC, Vivado TCL; Vivado is not run), and the
    generated Verilog passes `sim.verilated.lint` with blackbox stubs for the unisim primitives and the PCIe
    hard block: no error; warnings only Migen's widths, incomplete cases, LitePCIe's constant block and its
    depacketizer's flattened ready loop (UNOPTFLAT, LitePCIe's code)."""
    from litex.soc.integration.builder import Builder
    from boards.xilinx_ac701_rifl_nic import BoardSoC
    from cores.rifl_nic.common import NIC_COUNTERS
    from sim.verilated import lint
    name = "xilinx_ac701_rifl_nic"
    builder = Builder(BoardSoC(), output_dir=str(tmp_path), compile_software=False, compile_gateware=False,
                      csr_csv=str(tmp_path / "csr.csv"))
    builder.build(build_name=name, run=False)
    gateware = tmp_path / "gateware"
    verilog = (gateware / f"{name}.v").read_text()
    assert "pcie_s7 " in verilog and "GTPE2_CHANNEL" in verilog and "IBUFDS_GTE2" in verilog
    assert (gateware / f"{name}.xdc").exists()
    csr = (tmp_path / "csr.csv").read_text()
    for reg in ["tx_route_hi", "tx_route_lo", "tx_address", "tx_length", "rx_slot", "rx_ring_base", "rx_ring_log2"] + \
            [n for n, _ in NIC_COUNTERS]:
        assert f"csr_register,rifl_nic_{reg}," in csr, reg
    rc, messages, stubbed = lint(str(gateware / f"{name}.v"), name, ["-Wno-COMBDLY"])
    assert rc == 0 and not [m for m in messages if m.startswith("%Error")]
    assert {m.split(":")[0] for m in messages} <= {"%Warning-WIDTH", "%Warning-WIDTHEXPAND", "%Warning-WIDTHTRUNC",
                                                   "%Warning-CASEINCOMPLETE", "%Warning-ALWNEVER", "%Warning-UNOPTFLAT"}
    assert all("depacketizer" in m for m in messages if m.startswith("%Warning-UNOPTFLAT"))
    assert {"pcie_s7", "GTPE2_CHANNEL", "GTPE2_COMMON"} <= set(stubbed)

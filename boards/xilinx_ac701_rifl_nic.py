"""Xilinx AC701 (Artix-7 XC7A200T): the RIFL NIC, a RIFL host on the SFP cage behind LitePCIe's DMA.

PCIe Gen2 x1 (S7PCIEPHY, 64-bit) -> LitePCIeDMA without tables -> RIFLNICPort (cores/rifl_nic, its CSRs over
BAR0) -> AsyncFIFOs -> RIFLHost in the GTP's TX clock: segmenter, flow-control gate, reassembler and a
RIFLSerDesLink (RIFL frames of F = 256 over 8b/10b words, elastic receive: the far end runs on its own
oscillator) on the SFP's GTP transceiver at 2.5 Gb/s (2 Gb/s of frames) from the 125 MHz GTP reference clock.
The driver is software/rifl/nic.py (its port: the CSRs and a pinned DMA buffer). Only the gateware is generated
(no Vivado): `BoardSoC()` then LiteX's Builder with `run=False` (`make build BOARD=xilinx_ac701_rifl_nic`).
"""
from migen import ClockDomainsRenamer, Instance, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex_boards.platforms import xilinx_ac701

from boards.xilinx_ac701_pcie import CRG, DEFAULT_SYS_CLK_FREQ, add_ac701_pcie
from cores.rifl.common import L2_NET_MAX_PACKET, L2_RX_CONTEXTS, L2_RX_PARAMS, L2_TX_PARAMS, l2_data_layout
from cores.rifl.endpoint import RIFLHost
from cores.rifl.serdes import RIFLSerDesLink
from cores.rifl_nic.nic import RIFLNICPort
from soc.innet_soc import InnetSoC

GTP_REFCLK_HZ = 125e6
LINERATE = 2.5e9
DATA_WIDTH = 256
FIFO_DEPTH = 16


class _Pads:
    def __init__(self, p, n):
        self.p, self.n = p, n


class SFPRIFLHost(LiteXModule):
    """A RIFLHost on the SFP's GTP (domain `tx`: the GTP's TX clock; `rx`: its recovered clock), its packet
    streams crossed into sys: sink (segmenter's params) and source (reassembler's), as RIFLNICPort takes them.
    frame_bits, rtt (frame slots, both adapters and aligners included), down_ports (the switch's ports)."""
    def __init__(self, platform, sys_clk_freq, frame_bits=256, rtt=64, down_ports=4):
        from liteiclink.serdes.gtp_7series import GTP, GTPQuadPLL
        tx_layout = stream.EndpointDescription(l2_data_layout(DATA_WIDTH), L2_TX_PARAMS)
        rx_layout = stream.EndpointDescription(l2_data_layout(DATA_WIDTH), L2_RX_PARAMS)
        self.tx_cdc = ClockDomainsRenamer({"write": "sys", "read": "tx"})(stream.AsyncFIFO(tx_layout, FIFO_DEPTH))
        self.rx_cdc = ClockDomainsRenamer({"write": "tx", "read": "sys"})(stream.AsyncFIFO(rx_layout, FIFO_DEPTH))
        self.sink = self.tx_cdc.sink
        self.source = self.rx_cdc.source

        # # #

        self.comb += [platform.request("sfp_mgt_clk_sel0").eq(0), platform.request("sfp_mgt_clk_sel1").eq(0),
                      platform.request("sfp_tx_disable_n").eq(1)]
        refclk_pads, refclk = platform.request("gtp_refclk"), Signal()
        self.specials += Instance("IBUFDS_GTE2", i_CEB=0, i_I=refclk_pads.p, i_IB=refclk_pads.n, o_O=refclk)
        self.qpll = qpll = GTPQuadPLL(refclk, GTP_REFCLK_HZ, LINERATE)
        sfp = platform.request("sfp")
        self.gtp = gtp = GTP(qpll, _Pads(sfp.txp, sfp.txn), _Pads(sfp.rxp, sfp.rxn), sys_clk_freq, data_width=20)
        gtp.add_stream_endpoints()
        platform.add_period_constraint(gtp.cd_tx.clk, 1e9 / gtp.tx_clk_freq)
        platform.add_period_constraint(gtp.cd_rx.clk, 1e9 / gtp.rx_clk_freq)
        link = RIFLSerDesLink(frame_bits, rtt=rtt, nbytes=gtp.nwords, elastic=True)
        self.host = host = ClockDomainsRenamer({"sys": "tx"})(
            RIFLHost(frame_bits, DATA_WIDTH, rtt, down_ports, n_sources=L2_RX_CONTEXTS, max_packet=L2_NET_MAX_PACKET,
                     link=link))
        self.link_up = host.link_up
        self.comb += [
            link.tx_words.connect(gtp.sink),
            gtp.source.connect(link.rx_words),
            self.tx_cdc.source.connect(host.sink),
            host.source.connect(self.rx_cdc.sink),
        ]


class BoardSoC(InnetSoC):
    """Parameters: sys_clk_freq (Hz), frame_bits, down_ports (the RIFL switch's port count), plus InnetSoC
    arguments. CSRs: `rifl_nic_<register>` (RIFLNICPort's), LitePCIe's; LED 0: link up."""
    def __init__(self, sys_clk_freq=DEFAULT_SYS_CLK_FREQ, frame_bits=256, down_ports=4, **kwargs):
        platform = xilinx_ac701.Platform()
        self.crg = CRG(platform, sys_clk_freq)
        InnetSoC.__init__(self, platform, sys_clk_freq, ident="innet RIFL NIC over PCIe on Xilinx AC701", **kwargs)
        add_ac701_pcie(self, platform, with_dma_table=False)
        self.rifl = rifl = SFPRIFLHost(platform, sys_clk_freq, frame_bits, down_ports=down_ports)
        self.rifl_nic = RIFLNICPort(self.pcie_dma0, rifl, data_width=DATA_WIDTH, with_csr=True)
        self.comb += platform.request("user_led", 0).eq(rifl.link_up)
        platform.add_period_constraint(self.crg.cd_sys.clk, 1e9 / sys_clk_freq)

"""Xilinx AC701 (Artix-7 XC7A200T): the Sparsr receiver fed over PCIe Gen2 x1 by a LitePCIe DMA.

Host -> card: the host writes frames (FRAME_WORDS words each) into a DMA buffer; the DMA reader streams it
through `SparsrDMAAdapter` (64-bit beats -> 32-bit words, a frame every FRAME_WORDS words) into the
receiver. Card -> host: answer frames go through the adapter into the DMA writer. CSRs (DMA tables, the
receiver's counters `sparsr_receiver_<counter>`) are reached over PCIe BAR0. No CPU.

Gen2 x1 carries 5 GT/s with 8b/10b coding, i.e. 4 Gb/s: 125 M words/s, one word per cycle at the
125 MHz sys clock, the receiver's line rate. Only the gateware is generated here (no Vivado):
`BoardSoC()` then LiteX's Builder with `run=False`.
"""
from migen import ClockDomain, Signal

from litex.gen import LiteXModule
from litex.soc.cores.clock import S7PLL
from litex_boards.platforms import xilinx_ac701
from litepcie.phy.s7pciephy import S7PCIEPHY

from cores.sparsr.pcie import SparsrDMAPort
from soc.common import CORE_NAMES
from soc.innet_soc import InnetSoC

DEFAULT_SYS_CLK_FREQ = int(125e6)
PCIE_DATA_WIDTH = 64          # the 7-series hard block's width for Gen2 x1 at 125 MHz


class CRG(LiteXModule):
    """200 MHz oscillator -> S7 PLL -> sys; the CPU_RESET button resets the PLL."""
    def __init__(self, platform, sys_clk_freq):
        self.rst = Signal()
        self.cd_sys = ClockDomain()

        # # #

        self.pll = pll = S7PLL(speedgrade=-2)
        self.comb += pll.reset.eq(platform.request("cpu_reset") | self.rst)
        pll.register_clkin(platform.request("clk200"), 200e6)
        pll.create_clkout(self.cd_sys, sys_clk_freq)
        platform.add_false_path_constraints(self.cd_sys.clk, pll.clkin)


def add_ac701_pcie(soc, platform, **kwargs):
    """The AC701's PCIe Gen2 x1 on `soc`: S7PCIEPHY (64-bit, 128 KiB BAR0 for the CSRs) and LitePCIe's endpoint
    with one DMA (`soc.pcie_dma0`); `kwargs` go to LiteX's add_pcie."""
    soc.pcie_phy = S7PCIEPHY(platform, platform.request("pcie_x1"), data_width=PCIE_DATA_WIDTH, bar0_size=0x20000)
    soc.add_pcie(phy=soc.pcie_phy, ndmas=1, with_dma_loopback=False, **kwargs)


class BoardSoC(InnetSoC):
    """Parameters: sys_clk_freq (Hz), wmem_rows, xmem_rows (SparsrReceiver), plus InnetSoC arguments."""
    def __init__(self, sys_clk_freq=DEFAULT_SYS_CLK_FREQ, wmem_rows=64, xmem_rows=8, **kwargs):
        platform = xilinx_ac701.Platform()
        self.crg = CRG(platform, sys_clk_freq)
        InnetSoC.__init__(self, platform, sys_clk_freq, ident="innet Sparsr over PCIe on Xilinx AC701", **kwargs)
        add_ac701_pcie(self, platform)
        port = SparsrDMAPort(self.pcie_dma0, wmem_rows=wmem_rows, xmem_rows=xmem_rows)
        self._register_core(CORE_NAMES["sparsr"], port)
        platform.add_period_constraint(self.crg.cd_sys.clk, 1e9 / sys_clk_freq)

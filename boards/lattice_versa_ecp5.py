"""Lattice ECP5 Versa (LFE5UM5G-45F): InnetSoC with Etherbone on the first RGMII port."""
from migen import ClockDomain, If, Signal

from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex_boards.platforms import lattice_versa_ecp5

from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

from soc.common import SOC_IP_ADDRESS
from soc.innet_soc import InnetSoC

DEFAULT_SYS_CLK_FREQ = int(60e6)


class CRG(LiteXModule):
    """100 MHz oscillator -> power-on reset -> ECP5 PLL -> sys; rst_n button resets the PLL."""
    def __init__(self, platform, sys_clk_freq):
        self.rst = Signal()
        self.cd_sys = ClockDomain()
        self.cd_por = ClockDomain(reset_less=True)

        # # #

        clk100 = platform.request("clk100")
        rst_n = platform.request("rst_n")
        por_count = Signal(16, reset=2**16 - 1)
        self.comb += self.cd_por.clk.eq(clk100)
        self.sync.por += If(por_count != 0, por_count.eq(por_count - 1))
        self.pll = pll = ECP5PLL()
        self.comb += pll.reset.eq((por_count != 0) | ~rst_n | self.rst)
        pll.register_clkin(clk100, 100e6)
        pll.create_clkout(self.cd_sys, sys_clk_freq)


class BoardSoC(InnetSoC):
    def __init__(self, sys_clk_freq=DEFAULT_SYS_CLK_FREQ, eth_ip=SOC_IP_ADDRESS, cores=(), **kwargs):
        platform = lattice_versa_ecp5.Platform(toolchain="trellis")
        self.crg = CRG(platform, sys_clk_freq)
        InnetSoC.__init__(self, platform, sys_clk_freq, ident="innet SoC on Lattice ECP5 Versa", **kwargs)
        self.ethphy = LiteEthPHYRGMII(
            clock_pads = platform.request("eth_clocks", 0),
            pads       = platform.request("eth", 0),
            tx_delay   = 0e-9,
            rx_delay   = 0e-9)
        self.add_management_etherbone(self.ethphy, data_width=32, ip_address=eth_ip)
        for core in cores:
            getattr(self, f"add_{core}")()

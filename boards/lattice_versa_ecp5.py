"""Lattice ECP5 Versa (LFE5UM5G-45F): InnetSoC with Etherbone on the first RGMII port, or with `cores`
holding minisharp: MiniSharp on both RGMII ports with Etherbone as its management port, reached from the
ports of the mask `mgmt_ports` (boards/ports.py)."""
from migen import ClockDomain, If, Signal

from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex_boards.platforms import lattice_versa_ecp5

from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

from boards.ports import BOARD_CORE_OPTIONS, DATA_PORT_SYS_CLK_FREQ, add_minisharp_ports
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
    def __init__(self, sys_clk_freq=None, eth_ip=SOC_IP_ADDRESS, cores=(), mgmt_ports=0b01, minisharp=None,
                 **kwargs):
        sys_clk_freq = sys_clk_freq or (DATA_PORT_SYS_CLK_FREQ if "minisharp" in cores else DEFAULT_SYS_CLK_FREQ)
        platform = lattice_versa_ecp5.Platform(toolchain="trellis")
        self.crg = CRG(platform, sys_clk_freq)
        InnetSoC.__init__(self, platform, sys_clk_freq, ident="innet SoC on Lattice ECP5 Versa", **kwargs)
        if "minisharp" in cores:
            add_minisharp_ports(self, platform, mgmt_ports, tx_delay=0e-9, rx_delay=0e-9, ip_address=eth_ip,
                                **(minisharp or {}))
        else:
            self.ethphy = LiteEthPHYRGMII(
                clock_pads = platform.request("eth_clocks", 0),
                pads       = platform.request("eth", 0),
                tx_delay   = 0e-9,
                rx_delay   = 0e-9)
            self.add_management_etherbone(self.ethphy, data_width=32, ip_address=eth_ip)
        for core in cores:
            if core != "minisharp":
                getattr(self, f"add_{core}")(**BOARD_CORE_OPTIONS.get(core, {}))

"""Lattice ECP5 Versa (LFE5UM5G-45F): InnetSoC with Etherbone on the first RGMII port, or with `cores`
holding minisharp: MiniSharp on both RGMII ports with Etherbone as its management port, reached from the
ports of the mask `mgmt_ports` (boards/ports.py). With sparsr, Sparsr's XMEM is in the board's DDR3
(MT41K64M16, 128 MiB, LiteDRAM's ECP5 DDR3 PHY at 1:2), initialised and levelled at boot by LiteX's BIOS on a
small VexRiscv (boards/ports.py, DRAM_CPU; its console on the board's serial port)."""
from migen import ClockDomain, If, Instance, Signal
from migen.genlib.resetsync import AsyncResetSynchronizer

from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex_boards.platforms import lattice_versa_ecp5

from boards.ecp5_soc import ECP5Board, ECP5BoardSoC

DEFAULT_SYS_CLK_FREQ = int(60e6)
XMEM_ROWS = 4096            # 4 MiB of the 128 MiB DDR3
# nextpnr for the Sparsr build (boards/build.py's defaults): at seed 1 the base SoC's Etherbone path (LiteEth's
# MAC, IP and UDP depacketizers into a FIFO, 85 % routing) misses the 60 MHz sys clock by 1 %; seed 2 meets it
# (docs/sparsr.md, "XMEM in DRAM": the Versa builds).
PNR_DEFAULTS = {"sparsr": dict(seed=2)}


class CRG(LiteXModule):
    """100 MHz oscillator -> power-on reset -> ECP5 PLL -> sys; rst_n button resets the PLL. with_ddr3: the
    DDR3 PHY's clocking instead: the PLL makes sys2x, an ECLKSYNCB (stopped by the PHY's init while it
    aligns) and a CLKDIVF make sys from it, the PHY's init resets sys; `init` (25 MHz) for the PHY."""
    def __init__(self, platform, sys_clk_freq, with_ddr3=False):
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
        if not with_ddr3:
            pll.create_clkout(self.cd_sys, sys_clk_freq)
            return
        self.stop, self.reset = Signal(), Signal()       # from the DDR3 PHY's init
        self.cd_sys2x = ClockDomain()
        self.cd_sys2x_i = ClockDomain()
        self.cd_init = ClockDomain()
        pll.create_clkout(self.cd_sys2x_i, 2 * sys_clk_freq)
        pll.create_clkout(self.cd_init, 25e6)
        self.specials += [
            Instance("ECLKSYNCB", i_ECLKI=self.cd_sys2x_i.clk, i_STOP=self.stop, o_ECLKO=self.cd_sys2x.clk),
            Instance("CLKDIVF", p_DIV="2.0", i_ALIGNWD=0, i_CLKI=self.cd_sys2x.clk, i_RST=self.reset,
                     o_CDIVX=self.cd_sys.clk),
            AsyncResetSynchronizer(self.cd_sys, ~pll.locked | self.reset),
        ]


BOARD = ECP5Board(
    ident        = "innet SoC on Lattice ECP5 Versa",
    platform     = lambda: lattice_versa_ecp5.Platform(toolchain="trellis"),
    crg          = lambda platform, sys_clk_freq, with_dram, with_minisharp: CRG(platform, sys_clk_freq, with_ddr3=with_dram),
    sys_clk_freq = DEFAULT_SYS_CLK_FREQ,
    xmem_rows    = XMEM_ROWS,
    rgmii        = dict(tx_delay=0e-9, rx_delay=0e-9))


class BoardSoC(ECP5BoardSoC):
    """ECP5BoardSoC on the Lattice ECP5 Versa; sparsr: add_sparsr options over the board's (XMEM in DDR3,
    XMEM_ROWS rows)."""
    def __init__(self, **kwargs):
        ECP5BoardSoC.__init__(self, BOARD, **kwargs)

    def add_dram(self, platform, sys_clk_freq):
        """The DDR3 on LiteDRAM's ECP5 DDR3 PHY at 1:2; the PHY's init stops and resets the CRG's sys while it
        aligns."""
        from litedram.modules import MT41K64M16
        from litedram.phy import ECP5DDRPHY
        self.ddrphy = ECP5DDRPHY(platform.request("ddram"), sys_clk_freq=sys_clk_freq)
        self.comb += [self.crg.stop.eq(self.ddrphy.init.stop), self.crg.reset.eq(self.ddrphy.init.reset)]
        self.add_sdram("sdram", phy=self.ddrphy, module=MT41K64M16(sys_clk_freq, "1:2"), l2_cache_size=0)

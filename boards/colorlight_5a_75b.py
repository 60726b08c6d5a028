"""Colorlight 5A-75B (v7.0/v8.0, LFE5U-25F): InnetSoC with Etherbone on the first RGMII port, or with
`cores` holding minisharp: MiniSharp on both RGMII ports with Etherbone as its management port, reached from
the ports of the mask `mgmt_ports` (boards/ports.py). With sparsr, Sparsr's XMEM is in the board's SDR SDRAM
(M12L16161A, 32-bit bus, 4 MiB, LiteDRAM's generic SDR PHY at 1:1), initialised at boot by LiteX's BIOS on a
small VexRiscv (boards/ports.py, DRAM_CPU; no console: the serial pins double as the reset button)."""
from migen import ClockDomain, ClockSignal, Signal

from litex.build.io import DDROutput

from litex.gen import LiteXModule
from litex.soc.cores.clock import ECP5PLL
from litex_boards.platforms import colorlight_5a_75b

from boards.ecp5_soc import ECP5Board, ECP5BoardSoC
from boards.ports import MGMT_CLK_FREQ

DEFAULT_SYS_CLK_FREQ = int(50e6)
COLORLIGHT_MINISHARP = dict(dw=16, partials=False, max_ranks=16, n_slots=2, n_contexts=2, carry_limbs=2)   # fits the 25F: docs/minisharp.md, "Board builds"
# nextpnr for the MiniSharp build (boards/build.py's defaults): router2 never converges on it, and router1's
# outcome depends on HeAP's seed (docs/minisharp.md, "Board builds": the seeds tried and their clocks). The sync
# build's worst sys path is the base SoC's Etherbone stack (LiteEth's TX ready through Etherbone into its RX
# depacketizers, about 20 ns): router2 at seeds 1-2 and router1 at seed 2 miss the 50 MHz sys clock by 4-12 %,
# router1 at seeds 1 and 3 meet every clock (docs/sync.md, "Board builds").
PNR_DEFAULTS = {"minisharp": dict(router="router1", seed=6), "sync": dict(router="router1", seed=3)}
XMEM_ROWS = 4095            # the 4 MiB SDRAM holds 4096 rows: these and the spare
# WMEM of 32 rows (16 DP16KD fewer than 64): the BIOS's ROM and RAM (16 DP16KD) and the DRAM XMEM's row entries,
# write FIFO and staging buffer (9) take block RAM; Sparsr then takes 55 DP16KD of the 25F's 56 (boards/fit.py).
COLORLIGHT_SPARSR = dict(wmem_rows=32)


class CRG(LiteXModule):
    """25 MHz oscillator -> ECP5 PLL -> sys. The user button (active low) resets the PLL. with_sdram: also
    sys_ps (sys shifted by 180 degrees) on the SDRAM's clock pin. with_mgmt: also mgmt (MGMT_CLK_FREQ), the
    MiniSharp management stack's clock."""
    def __init__(self, platform, sys_clk_freq, with_sdram=False, with_mgmt=False):
        self.rst = Signal()
        self.cd_sys = ClockDomain()

        # # #

        rst_n = platform.request("user_btn_n", 0)
        self.pll = pll = ECP5PLL()
        self.comb += pll.reset.eq(~rst_n | self.rst)
        pll.register_clkin(platform.request("clk25"), 25e6)
        pll.create_clkout(self.cd_sys, sys_clk_freq)
        if with_mgmt:
            self.cd_mgmt = ClockDomain()
            pll.create_clkout(self.cd_mgmt, MGMT_CLK_FREQ)
        if with_sdram:
            self.cd_sys_ps = ClockDomain()
            pll.create_clkout(self.cd_sys_ps, sys_clk_freq, phase=180)
            self.specials += DDROutput(1, 0, platform.request("sdram_clock"), ClockSignal("sys_ps"))


def board(revision="8.0"):
    """The Colorlight 5A-75B of `revision` as an ECP5Board. The two RTL8211 PHYs share one MDIO bus. MiniSharp's
    management stack runs in mgmt: in sys its ready chain gave 40.7 MHz at 89 % of the LUTs (docs/minisharp.md,
    "Board builds"). No ICMP echo: fewer LUTs where the build is congested (Etherbone and ARP only)."""
    if revision not in ("7.0", "8.0"):
        raise ValueError(f"Colorlight 5A-75B revision must be 7.0 or 8.0, not {revision!r}")
    return ECP5Board(
        ident           = f"innet SoC on Colorlight 5A-75B v{revision}",
        platform        = lambda: colorlight_5a_75b.Platform(revision=revision, toolchain="trellis"),
        crg             = lambda platform, sys_clk_freq, with_dram, with_minisharp: CRG(
                              platform, sys_clk_freq, with_sdram=with_dram, with_mgmt=with_minisharp),
        sys_clk_freq    = DEFAULT_SYS_CLK_FREQ,
        xmem_rows       = XMEM_ROWS,
        dram_cpu        = dict(uart_name="stub"),
        rgmii           = dict(tx_delay=0e-9),
        minisharp       = COLORLIGHT_MINISHARP,
        minisharp_ports = dict(shared_mdio=True, mgmt_cd="mgmt", mgmt_clk_freq=MGMT_CLK_FREQ, mgmt_icmp=False),
        sparsr          = COLORLIGHT_SPARSR)


class BoardSoC(ECP5BoardSoC):
    """ECP5BoardSoC on the Colorlight 5A-75B of `revision` (7.0 or 8.0); sparsr: add_sparsr options over the
    board's (XMEM in SDRAM, XMEM_ROWS rows)."""
    def __init__(self, revision="8.0", **kwargs):
        ECP5BoardSoC.__init__(self, board(revision), **kwargs)

    def add_dram(self, platform, sys_clk_freq):
        """The SDR SDRAM on LiteDRAM's generic SDR PHY at 1:1."""
        from litedram.modules import M12L16161A
        from litedram.phy import GENSDRPHY
        self.sdrphy = GENSDRPHY(platform.request("sdram"), sys_clk_freq)
        self.add_sdram("sdram", phy=self.sdrphy, module=M12L16161A(sys_clk_freq, "1:1"), l2_cache_size=0)

"""What the ECP5 board targets share: Ethernet ports as MiniSharp data ports, the cores' board options."""
from migen import ClockDomainsRenamer

from litex.build.generic_platform import Subsignal
from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from liteeth.common import eth_phy_description
from liteeth.mac.core import LiteEthMACCore
from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

from cores.lib.buffers import RegisteredBuffer

# MiniSharp on two 1 Gb/s RGMII ports (docs/minisharp.md, "Board builds"): 32-bit ports at 62.5 MHz carry
# 2 Gb/s each and the one-lane engine 2 Gb/s, the two ports' line rate together.
DATA_PORT_DW = 32
DATA_PORT_SYS_CLK_FREQ = int(62.5e6)
RGMII_CLK_FREQ = 125e6
# The management stack's own clock on boards where its ready chain (about 25 ns on ECP5) misses sys: 8 bits at
# 25 MHz (200 Mb/s) serve Etherbone (docs/minisharp.md, "Board builds").
MGMT_CLK_FREQ = int(25e6)
# Sparsr on a board keeps XMEM in the board's DRAM (docs/sparsr.md, "XMEM in DRAM"): LiteDRAM's controller on the
# board's PHY, initialised (and, for DDR3, levelled) at boot by LiteX's BIOS on DRAM_CPU, which needs nothing
# else: its console is the board's serial port (a stub where the board has none to spare), its program in a
# block-RAM ROM. sparsr={"xmem": "bram"} keeps XMEM in block RAM, without DRAM or CPU.
SPARSR_BOARD = dict(xmem="dram")
DRAM_CPU = dict(cpu_type="vexriscv", cpu_variant="minimal", integrated_rom_size=0x6000, integrated_sram_size=0x2000)
# The BIOS without its interactive console, link-time optimised: 23 KB, the 24 KiB ROM above (with the console:
# 27-31 KB). It still prints its boot log (the DRAM's initialisation and memory test) on the console.
BIOS_OPTIONS = dict(bios_console="disable", bios_lto=True)


def builder_options(soc):
    """Builder keyword arguments for a board SoC: a CPU's BIOS compiled (BIOS_OPTIONS) into its ROM."""
    return dict(compile_software=True, **BIOS_OPTIONS) if soc.cpu_type is not None else dict(compile_software=False)


def sparsr_options(board_rows, sparsr=None):
    """Sparsr's add_sparsr options on a board whose DRAM holds `board_rows` XMEM rows (and their spare), and
    whether the board's DRAM and its CPU are needed."""
    options = dict(SPARSR_BOARD, **(sparsr or {}))
    if options["xmem"] == "dram":
        options.setdefault("xmem_rows", board_rows)
    return options, options["xmem"] == "dram"


def request_without(platform, name, number, omit):
    """platform.request(name, number) without the subsignals named in `omit` (e.g. an MDIO bus that two
    PHYs share and another port drives)."""
    for res in platform.constraint_manager.available:
        if res[0] == name and res[1] == number:
            kept = [x for x in res[2:] if not (isinstance(x, Subsignal) and x.name in omit)]
            alias = f"{name}_without_{'_'.join(sorted(omit))}"
            platform.add_extension([(alias, number, *kept)])
            return platform.request(alias, number)
    raise ValueError(f"the platform has no resource {name}:{number}")


class RGMIIDataPort(LiteXModule):
    """RGMII port `index` of `platform`: LiteEth's ECP5 RGMII PHY in clock domains eth<index>_rx/_tx and a
    MAC core (preamble, FCS check and insertion, padding) whose user side `sink`/`source` carries `dw`-bit
    frames without preamble/FCS in sys (a frame with a bad FCS ends with `error` set). The PHY's clocks get
    their period constraints and false paths to `sys_clk`. Latency: registered stages add a sys and a PHY cycle on
    TX and a PHY cycle on RX. with_mdio=False: the port leaves its MDIO pins
    alone (boards whose PHYs share one MDIO bus)."""
    def __init__(self, platform, index, sys_clk, dw=DATA_PORT_DW, tx_delay=0e-9, rx_delay=2e-9, with_mdio=True):
        rename = {"eth_rx": f"eth{index}_rx", "eth_tx": f"eth{index}_tx"}
        pads = platform.request("eth", index) if with_mdio else request_without(platform, "eth", index, {"mdio", "mdc"})
        self.phy = ClockDomainsRenamer(rename)(LiteEthPHYRGMII(
            clock_pads = platform.request("eth_clocks", index),
            pads       = pads,
            tx_delay   = tx_delay,
            rx_delay   = rx_delay))
        # Padding, FCS and preamble in sys at `dw` bits (with_sys_datapath): in the PHY's 125 MHz domain the
        # TX ready chain (gap, preamble, CRC inserter, padding, width converter) ended in the clock-domain
        # FIFO's read and reached 102.8-124.0 MHz on the Versa.
        # The TX clock-domain FIFO 16 deep (LiteEth: 32): both sides carry the line rate, and a 16-entry LUT RAM
        # reads without the address decode of two (the pointer compare -> read address -> LUT RAM path was the
        # Colorlight's eth1 critical path at 32: 121.7 MHz of 125).
        mac = LiteEthMACCore(self.phy, dw=dw, with_preamble_crc=True, with_padding=True, with_sys_datapath=True,
                             tx_cdc_depth=16, tx_cdc_buffered=True, rx_cdc_buffered=True)
        # Registered valid and ready (RegisteredBuffer: a cycle each) where ready chains would cross: before the
        # MAC's sys TX chain (else it continues into the core's output arbiter and the management stack's TX
        # clock-domain FIFO: 17.1 ns on the Colorlight), and in the PHY's domain after the TX clock-domain FIFO
        # and before the RX one (the FIFO's pointer compare through the width converter: 12.2 ns).
        layout = eth_phy_description(dw)
        self.tx_buf = RegisteredBuffer(layout)
        self.tx_phy_buf = ClockDomainsRenamer(rename["eth_tx"])(RegisteredBuffer(layout))
        self.rx_phy_buf = ClockDomainsRenamer(rename["eth_rx"])(RegisteredBuffer(layout))
        tx, rx = mac.tx_datapath.pipeline, mac.rx_datapath.pipeline
        tx.insert(_cdc_index(tx) + 1, self.tx_phy_buf)
        rx.insert(_cdc_index(rx), self.rx_phy_buf)
        self.mac = ClockDomainsRenamer(rename)(mac)
        self.comb += self.tx_buf.source.connect(self.mac.sink)
        self.sink, self.source = self.tx_buf.sink, self.mac.source

        # # #

        rx_clk, tx_clk = self.phy.crg.cd_eth_rx.clk, self.phy.crg.cd_eth_tx.clk
        platform.add_period_constraint(rx_clk, 1e9 / RGMII_CLK_FREQ)
        platform.add_period_constraint(tx_clk, 1e9 / RGMII_CLK_FREQ)
        platform.add_false_path_constraints(sys_clk, rx_clk, tx_clk)


def _cdc_index(pipeline):
    """Index of the clock-domain FIFO in a LiteEth MAC datapath's stage list."""
    return next(i for i, stage in enumerate(pipeline) if isinstance(stage, stream.ClockDomainCrossing))


def add_minisharp_ports(soc, platform, management, tx_delay=0e-9, rx_delay=2e-9, shared_mdio=False,
                        dw=DATA_PORT_DW, **minisharp):
    """MiniSharp on the board's RGMII ports 0 and 1 (`dw`-bit ports), Etherbone as its management port
    reached from the ports of the mask `management`. shared_mdio: one MDIO bus for both PHYs (port 0 drives
    it)."""
    ports = []
    for i in range(2):
        port = RGMIIDataPort(platform, i, soc.crg.cd_sys.clk, dw=dw, tx_delay=tx_delay, rx_delay=rx_delay,
                             with_mdio=not (shared_mdio and i > 0))
        setattr(soc, f"ethport{i}", port)
        ports.append(port)
    return soc.add_minisharp(phys=[(p.sink, p.source) for p in ports], management=management, dw=dw,
                             **minisharp)

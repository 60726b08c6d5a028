"""The SoC of an ECP5 board target, one loop for every board: the boards differ in data (ECP5Board), not code.

A board's SoC is InnetSoC with Etherbone on its first RGMII port, or, with `cores` holding minisharp, MiniSharp
on both RGMII ports with Etherbone as its management port reached from the ports of the mask `mgmt_ports`
(boards/ports.py). With sparsr, Sparsr's XMEM is in the board's DRAM, initialised at boot by LiteX's BIOS on a
small VexRiscv (boards/ports.py, DRAM_CPU); the other cores take BOARD_CORE_OPTIONS (soc/common.py).
"""
from dataclasses import dataclass, field
from typing import Callable

from liteeth.phy.ecp5rgmii import LiteEthPHYRGMII

from boards.ports import DATA_PORT_SYS_CLK_FREQ, DRAM_CPU, add_minisharp_ports, sparsr_options
from soc.common import BOARD_CORE_OPTIONS, SOC_IP_ADDRESS
from soc.innet_soc import InnetSoC


@dataclass(frozen=True)
class ECP5Board:
    """What one ECP5 board brings to its SoC.

    ident: the SoC's identifier; platform(): the LiteX platform; crg(platform, sys_clk_freq, with_dram,
    with_minisharp): the clock and reset generator; sys_clk_freq: the default sys clock without MiniSharp
    (with it: DATA_PORT_SYS_CLK_FREQ); xmem_rows: Sparsr's XMEM rows in the DRAM (its PHY and controller: the
    board SoC's add_dram(platform, sys_clk_freq)); dram_cpu: InnetSoC options of the DRAM's CPU beyond DRAM_CPU;
    rgmii: the RGMII delays (tx_delay, rx_delay) of every port; minisharp: add_minisharp options of the board
    (the caller's override them); minisharp_ports: add_minisharp_ports options (MDIO, management clock);
    sparsr: add_sparsr options of the board.
    """
    ident: str
    platform: Callable
    crg: Callable
    sys_clk_freq: int
    xmem_rows: int
    dram_cpu: dict = field(default_factory=dict)
    rgmii: dict = field(default_factory=dict)
    minisharp: dict = field(default_factory=dict)
    minisharp_ports: dict = field(default_factory=dict)
    sparsr: dict = field(default_factory=dict)


class ECP5BoardSoC(InnetSoC):
    """InnetSoC on `board` (ECP5Board) with `cores`. Parameters: sys_clk_freq (Hz, default the board's),
    eth_ip (the management port's IP), cores (names of soc.common.CORE_NAMES), mgmt_ports (with minisharp: mask
    of the data ports Etherbone answers on), minisharp / sparsr (options over the board's), plus InnetSoC
    arguments. A board's subclass adds its DRAM in add_dram(platform, sys_clk_freq)."""
    def __init__(self, board, sys_clk_freq=None, eth_ip=SOC_IP_ADDRESS, cores=(), mgmt_ports=0b01, minisharp=None,
                 sparsr=None, **kwargs):
        with_minisharp = "minisharp" in cores
        sys_clk_freq = sys_clk_freq or (DATA_PORT_SYS_CLK_FREQ if with_minisharp else board.sys_clk_freq)
        sparsr, with_dram = sparsr_options(board.xmem_rows, dict(board.sparsr, **(sparsr or {})))
        with_dram &= "sparsr" in cores
        if with_dram:
            kwargs = dict(DRAM_CPU, **board.dram_cpu, **kwargs)
        platform = board.platform()
        self.crg = board.crg(platform, sys_clk_freq, with_dram, with_minisharp)
        InnetSoC.__init__(self, platform, sys_clk_freq, ident=board.ident, **kwargs)
        if with_dram:
            self.add_dram(platform, sys_clk_freq)
        if with_minisharp:
            add_minisharp_ports(self, platform, mgmt_ports, ip_address=eth_ip, **board.rgmii, **board.minisharp_ports,
                                **dict(board.minisharp, **(minisharp or {})))
        else:
            self.ethphy = LiteEthPHYRGMII(
                clock_pads = platform.request("eth_clocks", 0),
                pads       = platform.request("eth", 0),
                **board.rgmii)
            self.add_management_etherbone(self.ethphy, data_width=32, ip_address=eth_ip)
        for core in cores:
            if core == "sparsr":
                self.add_sparsr(**sparsr)
            elif core != "minisharp":
                getattr(self, f"add_{core}")(**BOARD_CORE_OPTIONS.get(core, {}))

    def add_dram(self, platform, sys_clk_freq):
        raise NotImplementedError(f"{type(self).__name__} has no DRAM for Sparsr's XMEM")

"""InnetSoC: a LiteX SoC that the host drives over Etherbone, with one `add_<core>()` method per core.

No CPU by default: the host reads and writes every CSR over Etherbone (LiteEth UDP/IP core on a management
Ethernet port). `cpu_type="vexriscv"` adds a VexRiscv with its BIOS, ROM, RAM and UART. A free-running
uptime counter (timer0 uptime) lets host tools measure simulated cycles. The LiteX Builder exports the CSR
map as csr.csv and csr.json.
"""
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore

from soc.common import CORE_NAMES, ETHERBONE_UDP_PORT, SOC_IP_ADDRESS, SOC_MAC_ADDRESS


class InnetSoC(SoCCore):
    """LiteX SoC for the innet cores.

    Parameters: platform, sys_clk_freq (Hz), ident (string read back by the host), cpu_type (None or
    "vexriscv"), plus any SoCCore keyword argument.
    """
    def __init__(self, platform, sys_clk_freq, ident="innet SoC", cpu_type=None, **kwargs):
        if cpu_type not in (None, "vexriscv"):
            raise ValueError(f"cpu_type must be None or 'vexriscv', not {cpu_type!r}")
        if cpu_type is None:
            kwargs.setdefault("with_uart", False)
            kwargs["integrated_rom_size"] = 0
            kwargs["integrated_sram_size"] = 0
        else:
            kwargs.setdefault("integrated_rom_size", 0x10000)
            kwargs.setdefault("integrated_sram_size", 0x2000)
        SoCCore.__init__(self, platform, sys_clk_freq,
            ident         = ident,
            cpu_type      = cpu_type,
            with_timer    = True,
            timer_uptime  = True,
            **kwargs)
        self.cores = []

    def add_management_etherbone(self, phy, phy_cd="eth", data_width=8,
                                 mac_address=SOC_MAC_ADDRESS, ip_address=SOC_IP_ADDRESS):
        """Etherbone (Wishbone over UDP, port ETHERBONE_UDP_PORT) on the management Ethernet PHY `phy`."""
        self.add_etherbone(phy=phy, phy_cd=phy_cd, data_width=data_width, mac_address=mac_address,
                           ip_address=ip_address, udp_port=ETHERBONE_UDP_PORT)

    def _register_core(self, name, module):
        self.check_if_exists(name)
        setattr(self, name, module)
        self.cores.append(name)
        return module

    # Cores ----------------------------------------------------------------------------------------
    def add_sync(self, name=CORE_NAMES["sync"], **kwargs):
        """Synchronizer mesh (width x height nodes plus the lamlet) with CSR triggers, results and latency.
        Keyword arguments go to SyncBlock (width, height, n_idents, value_width, hop_latency, with_lamlet)."""
        from cores.sync.soc_block import SyncBlock
        return self._register_core(name, SyncBlock(**kwargs))

    def add_rifl(self, name=CORE_NAMES["rifl"], **kwargs):
        """Two RIFL endpoints looped through fault-injecting channels, with traffic generators and checkers.
        Keyword arguments go to RIFLLoopback (frame_bits, latency)."""
        from cores.rifl.soc_block import RIFLLoopback
        return self._register_core(name, RIFLLoopback(**kwargs))

    def add_rifl_net(self, name=CORE_NAMES["rifl_net"], **kwargs):
        """A RIFL network: hosts (L2 over L1) on a RIFL switch over lossy links, with on-chip generators and
        checkers and a BER CSR per link. Keyword arguments go to RIFLNetBlock (n, frame_bits, data_width,
        latency)."""
        from cores.rifl.soc_block import RIFLNetBlock
        return self._register_core(name, RIFLNetBlock(**kwargs))

    def add_switch(self, name=CORE_NAMES["switch"], **kwargs):
        """A small RIFL switch between on-chip traffic generators and checkers (load points over CSRs).
        Keyword arguments go to SwitchBlock (n, data_width, voq_cells, iterations)."""
        from cores.switch.soc_block import SwitchBlock
        return self._register_core(name, SwitchBlock(**kwargs))

    def add_minisharp(self, phys, name=CORE_NAMES["minisharp"], **kwargs):
        """MiniSharp on the data ports `phys`: one (sink, source) pair of 8-bit LiteEth PHY-layout streams per
        port carrying whole Ethernet frames without preamble/FCS (e.g. a LiteEthMACCore's user side).
        Keyword arguments go to MiniSharpSoCBlock (chunk_elements, n_contexts, n_slots, max_ranks, ...)."""
        from cores.minisharp.soc_block import MiniSharpSoCBlock
        if len(phys) < 2:
            raise ValueError(f"MiniSharp needs at least 2 data ports, got {len(phys)}")
        block = self._register_core(name, MiniSharpSoCBlock(num_ports=len(phys), **kwargs))
        block.connect_phys(phys)
        return block

    def add_sparsr(self, name=CORE_NAMES["sparsr"], wmem_rows=64, xmem_rows=8, origin=0x40000000):
        """Sparsr frame receiver with WMEM/XMEM; the host writes frames into a Wishbone window at `origin`."""
        from cores.sparsr.common import WINDOW_BYTES
        from cores.sparsr.soc_block import SparsrBlock
        block = self._register_core(name, SparsrBlock(wmem_rows=wmem_rows, xmem_rows=xmem_rows))
        self.bus.add_slave(name=name, slave=block.bus,
                           region=SoCRegion(origin=origin, size=WINDOW_BYTES, cached=False))
        return block

"""InnetSoC: a LiteX SoC that the host drives over Etherbone, with one `add_<core>()` method per core.

No CPU by default: the host reads and writes every CSR over Etherbone (LiteEth UDP/IP core on a management
Ethernet port). `cpu_type="vexriscv"` adds a VexRiscv with its BIOS, ROM, RAM and UART. A free-running
uptime counter (timer0 uptime) lets host tools measure simulated cycles. The LiteX Builder exports the CSR
map as csr.csv and csr.json.
"""
from migen import ClockDomainsRenamer, If, Signal

from litex.gen import LiteXModule
from litex.soc.integration.soc import SoCRegion
from litex.soc.integration.soc_core import SoCCore

from soc.common import CORE_NAMES, ETHERBONE_UDP_PORT, SOC_IP_ADDRESS, SOC_MAC_ADDRESS


class InternalPHY(LiteXModule):
    """The PHY side of an internal Ethernet port for a LiteEth MAC of `dw` bits, in sys, without preamble,
    FCS or inter-frame gap: `to_mac` / `from_mac` carry the frames to and from the MAC in `port_dw`-bit
    LiteEth PHY layout (converted to dw bits as LiteEth's MAC converts its PHY side; port_dw >= dw)."""
    with_preamble_crc = False
    integrated_ifg_inserter = True
    model = True                # no PHY clocks to constrain

    def __init__(self, dw, to_mac, from_mac, port_dw=None):
        from litex.soc.interconnect import stream
        from liteeth.common import eth_phy_description
        from liteeth.mac.last_be import LiteEthMACRXLastBE, LiteEthMACTXLastBE
        self.dw = dw
        port_dw = port_dw or dw
        if port_dw == dw:
            self.source, self.sink = to_mac, from_mac
            return
        down = stream.StrideConverter(eth_phy_description(port_dw), eth_phy_description(dw))
        cut = LiteEthMACTXLastBE(dw)          # ends the frame at its last valid byte
        mark = LiteEthMACRXLastBE(dw)         # last_be from last
        up = stream.StrideConverter(eth_phy_description(dw), eth_phy_description(port_dw))
        self.submodules += down, cut, mark, up
        self.source, self.sink = cut.source, mark.sink
        self.comb += [to_mac.connect(down.sink), down.source.connect(cut.sink),
                      mark.source.connect(up.sink), up.source.connect(from_mac)]


class WishboneClockCrossing(LiteXModule):
    """Wishbone from the master `master` in clock domain `cd_master` to the bus `slave` (a new Interface of
    the same widths) in `cd_slave`: each access (address, data, select, write) crosses in a 4-entry
    stream.ClockDomainCrossing and its answer (read data, error) comes back in another. One access at a time,
    as Etherbone's master makes them: about 8 master and 3 slave cycles per access (two 2-flop
    synchronisers)."""
    def __init__(self, master, cd_master, cd_slave="sys"):
        from litex.soc.interconnect import stream, wishbone
        if master.addressing != "word":
            raise ValueError(f"WishboneClockCrossing takes word-addressed masters, not {master.addressing!r}")
        dw, aw = len(master.dat_w), len(master.adr)
        self.slave = slave = wishbone.Interface(data_width=dw, adr_width=aw)

        # # #

        self.request = request = stream.ClockDomainCrossing(
            [("adr", aw), ("dat_w", dw), ("sel", dw // 8), ("we", 1)], cd_from=cd_master, cd_to=cd_slave, depth=4)
        self.answer = answer = stream.ClockDomainCrossing(
            [("dat_r", dw), ("err", 1)], cd_from=cd_slave, cd_to=cd_master, depth=4)
        pending = Signal()
        sync_master = getattr(self.sync, cd_master)
        self.comb += [
            request.sink.valid.eq(master.cyc & master.stb & ~pending),
            request.sink.adr.eq(master.adr), request.sink.dat_w.eq(master.dat_w),
            request.sink.sel.eq(master.sel), request.sink.we.eq(master.we),
            answer.source.ready.eq(1),
            master.ack.eq(answer.source.valid & ~answer.source.err),
            master.err.eq(answer.source.valid & answer.source.err),
            master.dat_r.eq(answer.source.dat_r),
        ]
        sync_master += If(answer.source.valid, pending.eq(0)).Elif(request.sink.valid & request.sink.ready,
                                                                   pending.eq(1))
        done = Signal()
        self.comb += [
            slave.cyc.eq(request.source.valid), slave.stb.eq(request.source.valid),
            slave.adr.eq(request.source.adr), slave.dat_w.eq(request.source.dat_w),
            slave.sel.eq(request.source.sel), slave.we.eq(request.source.we),
            done.eq(request.source.valid & (slave.ack | slave.err)),
            request.source.ready.eq(done),
            answer.sink.valid.eq(done), answer.sink.dat_r.eq(slave.dat_r), answer.sink.err.eq(slave.err),
        ]


class InternalEtherbone(LiteXModule):
    """Etherbone (port ETHERBONE_UDP_PORT) on an internal port of the SoC's own datapath: `to_stack` /
    `from_stack` carry `dw`-bit LiteEth PHY-layout frames (no preamble/FCS) in sys (e.g. MiniSharp's
    management port); `bus` is its Wishbone master, in sys. LiteEth's MAC, ARP, IP and UDP and Etherbone run
    in clock domain `cd` (of `cd_freq` Hz; sys_clk_freq when cd is sys), `stack_dw` bits wide (8 by default:
    management needs no line rate, and the 8-bit stack is the smallest). With cd other than sys, the MAC's
    clock-domain FIFOs cross between the port (sys) and the stack, and Etherbone's accesses cross to `bus` in
    a WishboneClockCrossing: the stack's combinational ready chain (about 25 ns on ECP5) then leaves sys.
    with_icmp: answer ICMP echo (ping); without it the stack is ARP, IP, UDP and Etherbone only."""
    def __init__(self, to_stack, from_stack, dw, sys_clk_freq, mac_address=SOC_MAC_ADDRESS,
                 ip_address=SOC_IP_ADDRESS, stack_dw=8, cd="sys", cd_freq=None, with_icmp=True):
        from liteeth.core import LiteEthUDPIPCore
        from liteeth.frontend.etherbone import LiteEthEtherbone
        if (cd == "sys") != (cd_freq is None):
            raise ValueError(f"the management stack in clock domain {cd!r}: give cd_freq exactly when cd is not sys")

        # # #

        self.phy = phy = InternalPHY(stack_dw, to_stack, from_stack, port_dw=dw)
        ethcore = LiteEthUDPIPCore(phy, mac_address=mac_address, ip_address=ip_address,
                                   clk_freq=cd_freq or sys_clk_freq, dw=stack_dw, with_sys_datapath=True,
                                   with_icmp=with_icmp)
        # The stack's "sys" becomes `cd`, then the MAC's PHY side (eth_tx / eth_rx) the port's sys.
        self.ethcore = ClockDomainsRenamer({"eth_tx": "sys", "eth_rx": "sys"})(
            ClockDomainsRenamer({"sys": cd})(ethcore))
        self.etherbone = ClockDomainsRenamer({"sys": cd})(
            LiteEthEtherbone(ethcore.udp, ETHERBONE_UDP_PORT, buffer_depth=16, cd="sys"))
        self.bus = self.etherbone.wishbone.bus
        if cd != "sys":
            self.cdc = WishboneClockCrossing(self.bus, cd_master=cd)
            self.bus = self.cdc.slave


class InnetSoC(SoCCore):
    """LiteX SoC for the innet cores.

    Parameters: platform, sys_clk_freq (Hz), ident (string read back by the host), cpu_type (None or
    "vexriscv"), plus any SoCCore keyword argument.
    """
    def __init__(self, platform, sys_clk_freq, ident="innet SoC", cpu_type=None, **kwargs):
        if cpu_type not in (None, "vexriscv"):
            raise ValueError(f"cpu_type must be None or 'vexriscv', not {cpu_type!r}")
        # LiteX merges the CPU's memory map into self.mem_map in place: without a copy per SoC, a VexRiscv build
        # would move the CSRs of every later SoC of the same process (the class's dict) to the CPU's 0xf0000000.
        self.mem_map = dict(SoCCore.mem_map)
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

    def add_internal_etherbone(self, to_stack, from_stack, dw, **kwargs):
        """Etherbone on an internal port of the SoC's own datapath (InternalEtherbone: `to_stack` / `from_stack`
        carry `dw`-bit frames in sys; keyword arguments: mac_address, ip_address, stack_dw, cd, cd_freq, with_icmp),
        mastering the SoC's bus."""
        self.etherbone_internal = InternalEtherbone(to_stack, from_stack, dw, sys_clk_freq=self.clk_freq, **kwargs)
        self.bus.add_master(name="etherbone", master=self.etherbone_internal.bus)

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
        from cores.rifl_net.soc_block import RIFLNetBlock
        return self._register_core(name, RIFLNetBlock(**kwargs))

    def add_switch(self, name=CORE_NAMES["switch"], **kwargs):
        """A small RIFL switch between on-chip traffic generators and checkers (load points over CSRs).
        Keyword arguments go to SwitchBlock (n, data_width, voq_cells, iterations)."""
        from cores.switch.soc_block import SwitchBlock
        return self._register_core(name, SwitchBlock(**kwargs))

    def add_minisharp(self, phys, name=CORE_NAMES["minisharp"], management=None, ip_address=SOC_IP_ADDRESS,
                      mgmt_cd="sys", mgmt_clk_freq=None, mgmt_icmp=True, **kwargs):
        """MiniSharp on the data ports `phys`: one (sink, source) pair of LiteEth PHY-layout streams per port
        (`dw` bits, default 8) carrying whole Ethernet frames without preamble/FCS (e.g. a LiteEthMACCore's
        user side). management (a port mask): Etherbone becomes MiniSharp's management port, reached from
        those ports only (at SOC_MAC_ADDRESS / ip_address; see docs/minisharp.md, "Management through the
        data ports"), its stack in clock domain mgmt_cd (of mgmt_clk_freq Hz; add_internal_etherbone), answering ping
        with mgmt_icmp. Keyword arguments go to MiniSharpSoCBlock (dw, chunk_elements, n_contexts, n_slots,
        max_ranks, ...)."""
        from cores.minisharp.soc_block import MiniSharpSoCBlock
        if len(phys) < 2:
            raise ValueError(f"MiniSharp needs at least 2 data ports, got {len(phys)}")
        if management is not None:
            kwargs.update(mgmt_ports=management, mgmt_mac=SOC_MAC_ADDRESS)
        block = self._register_core(name, MiniSharpSoCBlock(num_ports=len(phys), **kwargs))
        block.connect_phys(phys)
        if management is not None:
            self.add_internal_etherbone(block.mgmt_source, block.mgmt_sink, block.core.dw, ip_address=ip_address,
                                        cd=mgmt_cd, cd_freq=mgmt_clk_freq, with_icmp=mgmt_icmp)
        return block

    def add_sparsr(self, name=CORE_NAMES["sparsr"], wmem_rows=64, xmem_rows=8, origin=None, xmem="bram",
                   xmem_base=0):
        """Sparsr frame receiver with WMEM/XMEM; the host writes frames into a Wishbone window at `origin`
        (default 0x40000000, or 0x90000000 in the IO region of a SoC with a CPU, whose main RAM sits at
        0x40000000). xmem="dram": XMEM in the SoC's DRAM (add_sdram() first), on a native port of its
        crossbar, from byte `xmem_base` of the DRAM."""
        if origin is None:
            origin = 0x40000000 if self.cpu_type is None else 0x90000000
        from cores.sparsr.common import WINDOW_BYTES, XMEM_DRAM
        from cores.sparsr.soc_block import SparsrBlock
        port = None
        if xmem == XMEM_DRAM:
            if not hasattr(self, "sdram"):
                raise ValueError("Sparsr with xmem='dram' needs the SoC's DRAM: call add_sdram() first")
            port = self.sdram.crossbar.get_port()
        block = self._register_core(name, SparsrBlock(wmem_rows=wmem_rows, xmem_rows=xmem_rows, xmem=xmem,
                                                      dram_port=port, xmem_base=xmem_base))
        self.bus.add_slave(name=name, slave=block.bus,
                           region=SoCRegion(origin=origin, size=WINDOW_BYTES, cached=False))
        return block

"""RIFL NICs over PCIe on a RIFL switch, end to end in one Verilated model, stepped cycle by cycle from Python.

`NICNetwork`: a RIFLNetwork (cores.rifl_net.network) whose every host is a RIFL NIC as the AC701 target builds
it: ModelPHY, LitePCIe's endpoint, a LitePCIeDMA without tables, a RIFLNICPort with its CSRs, and LitePCIe's
Wishbone master on BAR0 in front of the CSR bank. `NICSim` steps it with one TLPHost (sim.models.pcie: host
memory, the root complex answering the card's reads, the CPU's MMIO) per NIC and gives each host a `BarPort`,
the port object of software.rifl.nic.RiflNic. A packet goes host memory -> DMA read -> segmenter -> RIFL
link -> switch -> RIFL link -> reassembler -> DMA write -> host slot + completion record; the descriptors,
slots and ring registers are MMIO writes to BAR0, the TX counter an MMIO read.
"""
from collections import Counter
from dataclasses import dataclass

from migen import Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import csr_bus, wishbone
from litepcie.core import LitePCIeEndpoint
from litepcie.frontend.dma import LitePCIeDMA
from litepcie.frontend.wishbone import LitePCIeWishboneMaster

from cores.rifl_net.network import RIFLNetwork
from cores.rifl_nic.common import NIC_COUNTERS
from cores.rifl_nic.nic import RIFLNICPort
from cores.switch.common import VOQ_COUNTERS
from software.rifl.nic import RiflNic
from sim.models.pcie import ModelPHY, TLPHost, phy_ports
from sim.verilated.stepping import CycleSim

CSR_PAGING = 0x800              # LiteX's CSR page (bytes): the NIC's bank is page 0 of BAR0


class NICCard(LiteXModule):
    """One NIC's PCIe side: ModelPHY, LitePCIeEndpoint (8 pending reads), LitePCIeDMA (no tables, reader
    buffering), the RIFLNICPort on `host` with its CSRs, reached over BAR0 by LitePCIe's Wishbone master
    through Wishbone2CSR. `csr_address[name]`: a CSR's BAR0 byte address."""
    def __init__(self, host, data_width, depth, slots):
        self.phy = ModelPHY()
        self.endpoint = LitePCIeEndpoint(self.phy, endianness=self.phy.endianness, max_pending_requests=8)
        self.dma = LitePCIeDMA(self.phy, self.endpoint, with_table=False, with_buffering=True, buffering_depth=4096)
        self.port = RIFLNICPort(self.dma, host, data_width=data_width, depth=depth, slots=slots, with_csr=True)
        self.bar0 = LitePCIeWishboneMaster(self.endpoint, address_decoder=lambda a: a < self.phy.bar0_size)
        bus = csr_bus.Interface(data_width=32, address_width=14)
        self.wb2csr = wishbone.Wishbone2CSR(bus_wishbone=self.bar0.wishbone, bus_csr=bus)
        csrs = self.port.get_csrs()
        self.bank = csr_bus.CSRBank(csrs, address=0, bus=bus, paging=CSR_PAGING)
        words = [-(-c.size // 32) for c in csrs]            # the bank's 32-bit words per CSR, in order
        self.csr_address = {c.name: 4 * sum(words[:i]) for i, c in enumerate(csrs)}
        assert sum(words) == len(self.bank.simple_csrs)


class NICNetwork(LiteXModule):
    """A NICCard on every host of `topology`; keyword arguments go to RIFLNetwork."""
    def __init__(self, topology, depth=8, slots=64, data_width=256, **kw):
        self.net = RIFLNetwork(topology, data_width=data_width, **kw)
        self.cards = []
        for h, host in enumerate(self.net.hosts):
            card = NICCard(host, data_width, depth, slots)
            setattr(self, f"card{h}", card)
            self.cards.append(card)
        self.drops = Signal(32)
        self.comb += self.drops.eq(sum(inp.counters[name] for node in self.net.switches for inp in node.switch.inputs
                                       for name, _ in VOQ_COUNTERS if name.startswith("drop_")))

    def ports(self):
        ports = {"drops": (self.drops, False)}
        for h, card in enumerate(self.cards):
            p = f"h{h}_"
            ports.update(phy_ports(card.phy, p))
            for name, _ in NIC_COUNTERS:
                ports[p + name] = (card.port.counters[name], False)
            host = self.net.hosts[h]
            ports[p + "link_up"] = (host.link_up, False)
            ports[p + "segmented"] = (host.segmenter.counters["packets"], False)
            ports[p + "delivered"] = (host.reassembler.counters["delivered"], False)
        return ports


class BarPort:
    """software.rifl.nic's port over the simulated PCIe link: host memory is the TLPHost's, the NIC's registers
    are its CSRs on BAR0.

    Posts and ring registers are MMIO writes (posted), each through LitePCIe's Wishbone master, which holds the
    card's incoming TLPs (the DMA's completions too) for the few cycles of a CSR access: so the port writes a
    descriptor register only when its value changes (the registers keep theirs), and `tx_length` (the write
    that posts) and `rx_slot` always. tx_done reads tx_packets over BAR0 without waiting: it returns the last
    value read and sends a new read once the previous one has completed and `read_interval` cycles have passed
    since it was sent (a CPU's MMIO read takes about a microsecond, 125 cycles at 125 MHz; here the hosts
    share one Python loop, so a read that waited would stop the other host's model too)."""
    ALWAYS = ("tx_length", "rx_slot")

    def __init__(self, nsim, h, read_interval=128):
        self.nsim, self.host, self.csr = nsim, nsim.hosts[h], nsim.cards[h].csr_address
        self.read_interval = read_interval
        self.reads, self.writes = 0, Counter()       # MMIO reads sent; writes sent per register
        self._done, self._tag, self._sent = 0, None, -read_interval    # last value; read in flight; its cycle
        self._shadow = {}

    def write(self, address, data):
        if address % 4 or len(data) % 4:
            raise ValueError(f"host memory writes are whole dwords, got {len(data)} bytes at {address:#x}")
        for k in range(0, len(data), 4):
            self.host.mem[(address + k) // 4] = int.from_bytes(data[k:k + 4], "little")

    def read(self, address, n):
        words = [self.host.mem.get(address // 4 + k, 0) for k in range(-(-n // 4))]
        return b"".join(w.to_bytes(4, "little") for w in words)[:n]

    def _write(self, name, value):
        if name in self.ALWAYS or self._shadow.get(name) != value:
            self.host.mmio_write(self.csr[name], value)
            self._shadow[name] = value
            self.writes[name] += 1

    def post_tx(self, address, length, route):
        self._write("tx_route_hi", route >> 32)
        self._write("tx_route_lo", route & 0xffffffff)
        self._write("tx_address", address)
        self._write("tx_length", length)

    def post_slot(self, address):
        self._write("rx_slot", address)

    def configure(self, ring_base, ring_log2):
        self._write("rx_ring_base", ring_base)
        self._write("rx_ring_log2", ring_log2)

    def tx_done(self):
        """The card's tx_packets as last read over BAR0 (see the class)."""
        if self._tag is not None and self._tag in self.host.mmio_done:
            self._done, self._tag = self.host.mmio_done.pop(self._tag), None
        if self._tag is None and self.nsim.cycle - self._sent >= self.read_interval:
            self._tag, self._sent = self.host.mmio_read(self.csr["tx_packets"]), self.nsim.cycle
            self.reads += 1
        return self._done


class NICSim:
    """The Verilated NICNetwork of `topology` with a TLPHost per NIC (seeded; ready_prob / valid_prob: the
    root complex's back-pressure and completion pace; quick_build: the cheaper C++ build, for short runs).
    `step()` runs one cycle; `ports[h]`: host h's BarPort;
    `out`: the outputs of the last cycle (counters h<h>_<name>; drops: cells the switches dropped)."""
    def __init__(self, topology, seed=1, ready_prob=1.0, valid_prob=1.0, quick_build=False, **kw):
        self.topology = topology
        dut = NICNetwork(topology, **kw)
        self.cards = dut.cards
        self.sim = CycleSim(dut, dut.ports(), name="rifl_nic_" + topology.name.replace("-", "_"),
                            quick_build=quick_build)
        self.restart(seed, ready_prob, valid_prob)

    def restart(self, seed=1, ready_prob=1.0, valid_prob=1.0):
        """A new run from reset with new host models (the same Verilated model)."""
        self.sim.restart()
        self.hosts = [TLPHost(seed * 1000 + h, ready_prob=ready_prob, valid_prob=valid_prob, queues={},
                              prefix=f"h{h}_") for h in range(self.topology.hosts)]
        self.out = {}
        self.ports = [BarPort(self, h) for h in range(self.topology.hosts)]

    @property
    def cycle(self):
        return self.sim.cycle

    def step(self):
        ins = {}
        for host in self.hosts:
            ins.update(host.drive())
        self.out = self.sim.step(**ins)
        for host in self.hosts:
            host.observe(self.out)
        return self.out

    def close(self):
        self.sim.close()


@dataclass
class Delivery:
    src: int
    dst: int
    index: int          # the packet's place in its source's list
    payload: bytes
    header: int
    posted: int         # cycle the source's driver posted it
    arrived: int        # cycle the destination's driver saw its record


def run_traffic(nsim, packets, drivers=None, poll_every=1, max_cycles=1_000_000, stall_cycles=50_000):
    """Plays `packets` (per source host, a list of (dst, payload) sent in order, each as soon as a TX buffer
    is free) through `nsim` (a NICSim) with a RiflNic driver per host (`drivers`, default RiflNic(port)), polling
    every host every `poll_every` cycles. Returns the Deliveries in arrival order; raises RuntimeError naming the
    counters if nothing moves for `stall_cycles` or the run passes `max_cycles`."""
    topo = nsim.topology
    drivers = drivers or [RiflNic(port) for port in nsim.ports]
    nxt = [0] * topo.hosts
    posted = {}
    seen = {}                                         # (src, dst) -> deliveries so far
    per_pair = {}                                     # (src, dst) -> packet indices in order
    for src, plist in enumerate(packets):
        for i, (dst, _) in enumerate(plist):
            per_pair.setdefault((src, dst), []).append(i)
    total = sum(len(p) for p in packets)
    out, start, last_move = [], nsim.cycle, nsim.cycle
    while len(out) < total:
        for src, plist in enumerate(packets):
            while nxt[src] < len(plist) and drivers[src].send(plist[nxt[src]][1], topo.route(src, plist[nxt[src]][0])):
                posted[(src, nxt[src])] = nsim.cycle
                nxt[src] += 1
                last_move = nsim.cycle
        nsim.step()
        if nsim.cycle % poll_every:
            continue
        for dst, drv in enumerate(drivers):
            for r in drv.poll():
                src = topo.follow(dst, r.reply)             # the reply route leads back to the source
                if src is None or (src, dst) not in per_pair:
                    raise RuntimeError(f"host {dst} received a packet with reply route {r.reply:#x}: no host")
                k = seen.get((src, dst), 0)
                seen[(src, dst)] = k + 1
                index = per_pair[(src, dst)][k]
                out.append(Delivery(src, dst, index, r.payload, r.header, posted[(src, index)], nsim.cycle))
                last_move = nsim.cycle
        if nsim.cycle - last_move > stall_cycles or nsim.cycle - start > max_cycles:
            names = tuple(n for n, _ in NIC_COUNTERS) + ("segmented", "delivered", "link_up", "drops")
            counters = {k: v for k, v in nsim.out.items() if k.endswith(names)}
            raise RuntimeError(f"RIFL NIC traffic stalled at cycle {nsim.cycle}: {len(out)} of {total} packets "
                               f"delivered; {counters}")
    return out

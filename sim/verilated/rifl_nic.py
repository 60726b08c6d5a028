"""RIFL NICs over PCIe on a RIFL switch, end to end in one Verilated model, stepped cycle by cycle from Python.

`NICNetwork`: a RIFLNetwork (cores.rifl_net.network) whose every host is a RIFL NIC: ModelPHY, LitePCIe's
endpoint, a LitePCIeDMA without tables and a RIFLNICPort (cores/rifl_nic). `NICSim` steps it with one
TLPHost (sim.models.pcie: host memory, the root complex answering the card's reads) per NIC and gives each
host a `SimPort`, the port object of software.rifl.nic.RiflNic. A packet goes host memory -> DMA read ->
segmenter -> RIFL link -> switch -> RIFL link -> reassembler -> DMA write -> host slot + completion record.
"""
from dataclasses import dataclass

from migen import Signal

from litex.gen import LiteXModule
from litepcie.core import LitePCIeEndpoint
from litepcie.frontend.dma import LitePCIeDMA

from cores.rifl_net.network import RIFLNetwork
from cores.rifl_nic.common import NIC_COUNTERS, RX_SLOT_LAYOUT, TX_DESC_LAYOUT
from cores.rifl_nic.nic import RIFLNICPort
from cores.switch.common import VOQ_COUNTERS
from software.rifl.nic import RiflNic
from sim.models.pcie import ModelPHY, TLPHost, phy_ports, stream_ports
from sim.verilated.stepping import CycleSim

NIC_QUEUES = {"send": tuple(n for n, _ in TX_DESC_LAYOUT), "slot": tuple(n for n, _ in RX_SLOT_LAYOUT)}


class NICCard(LiteXModule):
    """One NIC's PCIe side: ModelPHY, LitePCIeEndpoint (8 pending reads), LitePCIeDMA (no tables, reader
    buffering) and the RIFLNICPort on `host`."""
    def __init__(self, host, data_width, depth, slots):
        self.phy = ModelPHY()
        self.endpoint = LitePCIeEndpoint(self.phy, endianness=self.phy.endianness, max_pending_requests=8)
        self.dma = LitePCIeDMA(self.phy, self.endpoint, with_table=False, with_buffering=True, buffering_depth=4096)
        self.port = RIFLNICPort(self.dma, host, data_width=data_width, depth=depth, slots=slots)


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
            ports.update(stream_ports("send", card.port.tx_desc, NIC_QUEUES["send"], p))
            ports.update(stream_ports("slot", card.port.rx_slot, NIC_QUEUES["slot"], p))
            ports[p + "ring_base"] = (card.port.ring_base, True)
            ports[p + "ring_log2"] = (card.port.ring_log2, True)
            for name, _ in NIC_COUNTERS:
                ports[p + name] = (card.port.counters[name], False)
            host = self.net.hosts[h]
            ports[p + "link_up"] = (host.link_up, False)
            ports[p + "segmented"] = (host.segmenter.counters["packets"], False)
            ports[p + "delivered"] = (host.reassembler.counters["delivered"], False)
        return ports


class SimPort:
    """software.rifl.nic's port over a TLPHost: host memory is the model's, posts go to its queues."""
    def __init__(self, sim, h):
        self.sim, self.h, self.host = sim, h, sim.hosts[h]

    def write(self, address, data):
        if address % 4 or len(data) % 4:
            raise ValueError(f"host memory writes are whole dwords, got {len(data)} bytes at {address:#x}")
        for k in range(0, len(data), 4):
            self.host.mem[(address + k) // 4] = int.from_bytes(data[k:k + 4], "little")

    def read(self, address, n):
        words = [self.host.mem.get(address // 4 + k, 0) for k in range(-(-n // 4))]
        return b"".join(w.to_bytes(4, "little") for w in words)[:n]

    def post_tx(self, address, length, route):
        self.host.queues["send"].append((address, length, route))

    def post_slot(self, address):
        self.host.queues["slot"].append((address,))

    def configure(self, ring_base, ring_log2):
        self.sim.static[f"h{self.h}_ring_base"] = ring_base
        self.sim.static[f"h{self.h}_ring_log2"] = ring_log2

    def tx_done(self):
        return self.sim.out.get(f"h{self.h}_tx_packets", 0)


class NICSim:
    """The Verilated NICNetwork of `topology` with a TLPHost per NIC (seeded; ready_prob / valid_prob: the
    root complex's back-pressure and completion pace; quick_build: the cheaper C++ build, for short runs).
    `step()` runs one cycle; `ports[h]`: host h's SimPort;
    `out`: the outputs of the last cycle (counters h<h>_<name>; drops: cells the switches dropped)."""
    def __init__(self, topology, seed=1, ready_prob=1.0, valid_prob=1.0, quick_build=False, **kw):
        self.topology = topology
        dut = NICNetwork(topology, **kw)
        self.sim = CycleSim(dut, dut.ports(), name="rifl_nic_" + topology.name.replace("-", "_"),
                            quick_build=quick_build)
        self.restart(seed, ready_prob, valid_prob)

    def restart(self, seed=1, ready_prob=1.0, valid_prob=1.0):
        """A new run from reset with new host models (the same Verilated model)."""
        self.sim.restart()
        self.hosts = [TLPHost(seed * 1000 + h, ready_prob=ready_prob, valid_prob=valid_prob, queues=NIC_QUEUES,
                              prefix=f"h{h}_") for h in range(self.topology.hosts)]
        self.static, self.out = {}, {}
        self.ports = [SimPort(self, h) for h in range(self.topology.hosts)]

    @property
    def cycle(self):
        return self.sim.cycle

    def step(self):
        ins = dict(self.static)
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

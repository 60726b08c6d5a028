"""A PCIe link at TLP level: a model PHY, the Sparsr card behind it and the host side, for the Sparsr PCIe
path in simulation.

LitePCIe's pip package has no simulation models (its repository keeps them under test/model), and Migen's
simulator runs the endpoint + DMA + receiver at about 20 cycles per second, so the card (`PCIeCard`) runs
as a Verilated model, stepped cycle by cycle from Python (`sim.verilated.CycleSim`). `TLPHost` models the
root complex and host memory from the PCIe TLP formats, with LitePCIe's header field definitions: the
card's memory-read requests are answered with completions (split at the max payload size, completions of
different requests interleaved at random), its memory writes land in host memory.
"""
import random

from migen import Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litepcie.common import phy_layout, get_bar_mask
from litepcie.core import LitePCIeEndpoint
from litepcie.frontend.dma import LitePCIeDMA
from litepcie.tlp.common import tlp_request_header, tlp_completion_header, fmt_dict, type_dict

from cores.sparsr.common import FRAME_WORDS
from cores.sparsr.pcie import SparsrDMAPort

PCIE_DW = 64
COMPLETER_ID = 0x0000
MAX_PAYLOAD_BYTES = 128


class ModelPHY(LiteXModule):
    """The PHY as LitePCIe's endpoint sees it: S7PCIEPHY's streams, endianness and parameters."""
    endianness = "big"

    def __init__(self, data_width=PCIE_DW):
        self.sink = stream.Endpoint(phy_layout(data_width))
        self.source = stream.Endpoint(phy_layout(data_width))
        self.data_width = data_width
        self.id = Signal(16, reset=0x0100)
        self.bar0_size = 0x20000
        self.bar0_mask = get_bar_mask(self.bar0_size)
        self.max_request_size = Signal(16, reset=512)
        self.max_payload_size = Signal(16, reset=MAX_PAYLOAD_BYTES)


DMA_QUEUES = {"rd": ("address", "length"), "wr": ("address", "length")}     # PCIeCard's descriptor streams


class PCIeCard(LiteXModule):
    """What the AC701 target puts behind its PHY (LitePCIe endpoint with add_pcie's 8 pending requests,
    DMA with add_pcie's buffering, the Sparsr DMA port), with the DMA descriptors fed by streams instead
    of the CSR-programmed tables (the tables only queue the same descriptors)."""
    def __init__(self, wmem_rows, xmem_rows):
        self.phy = ModelPHY()
        self.endpoint = LitePCIeEndpoint(self.phy, endianness=self.phy.endianness, max_pending_requests=8)
        self.dma = LitePCIeDMA(self.phy, self.endpoint, with_table=False, with_buffering=True,
                               buffering_depth=1024)
        self.port = SparsrDMAPort(self.dma, wmem_rows=wmem_rows, xmem_rows=xmem_rows)
        self.rx_fire = Signal()
        rx = self.port.receiver.sink
        self.comb += self.rx_fire.eq(rx.valid & rx.ready)

    def ports(self):
        ports = {"rx_fire": (self.rx_fire, False), **phy_ports(self.phy)}
        for name, fields in DMA_QUEUES.items():
            desc = getattr(self.dma, {"rd": "reader", "wr": "writer"}[name]).desc_sink
            ports.update(stream_ports(name, desc, fields))
        return ports


def phy_ports(phy, prefix=""):
    """CycleSim ports of a ModelPHY's streams: tx_* (card -> host) and rx_* (host -> card)."""
    ports = {}
    for name in ("valid", "first", "last", "dat", "be"):
        ports[prefix + "tx_" + name] = (getattr(phy.sink, name), False)
        ports[prefix + "rx_" + name] = (getattr(phy.source, name), True)
    ports[prefix + "tx_ready"] = (phy.sink.ready, True)
    ports[prefix + "rx_ready"] = (phy.source.ready, False)
    return ports


def stream_ports(name, endpoint, fields):
    """CycleSim ports of a stream into the card that a TLPHost queue feeds: valid and `fields` in, ready out."""
    ports = {f"{name}_{f}": (getattr(endpoint, f), True) for f in ("valid",) + tuple(fields)}
    ports[f"{name}_ready"] = (endpoint.ready, False)
    return ports


def _field(header, dwords, name, value=None):
    f = header.fields[name]
    mask = (1 << f.width) - 1
    if value is None:
        return (dwords[f.byte // 4] >> f.offset) & mask
    dwords[f.byte // 4] |= (value & mask) << f.offset


def _bswap(dw):
    return int.from_bytes(dw.to_bytes(4, "little"), "big")


class TLPHost:
    """Host memory (dword address -> value) and the root complex's side of the link, one cycle per `step`:
    takes the card's TLPs (ready with probability ready_prob), answers memory reads with completions (a beat
    offered with probability valid_prob; the next completion belongs to a random pending read if
    `interleave`, else to the oldest), feeds the card's input streams listed in `queues` (name -> field
    names; entries of `self.queues[name]` are tuples in that order: for PCIeCard the DMA descriptors).
    The CPU's MMIO to the card's BAR0: `mmio_write` (a posted 1-dword write) and `mmio_read` (a 1-dword
    read, its completion's value in `mmio_done[tag]`), sent in order, between the card's completions.
    Port names carry `prefix` (several cards in one model); `drive()` and `observe()` split `step()` for
    a caller that steps them together."""
    def __init__(self, seed, ready_prob=0.8, valid_prob=0.8, interleave=True, ratio=PCIE_DW // 32,
                 endianness=ModelPHY.endianness, queues=DMA_QUEUES, prefix=""):
        self.rng, self.ratio, self.endianness = random.Random(seed), ratio, endianness
        self.ready_prob, self.valid_prob, self.interleave = ready_prob, valid_prob, interleave
        self.prefix, self.fields = prefix, dict(queues)
        self.mem = {}
        self.reads = []          # pending: [requester, tag, next byte address, bytes left]
        self.writes = 0          # payload bytes the card wrote
        self.tlps = []           # (fmt, type, length in dwords) of the card's TLPs
        self.queues = {name: [] for name in queues}
        self.mmio_done = {}      # tag -> value of a completed mmio_read
        self._requests = []      # the beats of each MMIO request TLP not yet sent
        self._tag = 0
        self._in, self._out = [], []       # TLP dwords being received; the TLP's beats being sent

    def _payload(self, dwords):
        """Payload dwords between host byte order and the PHY's: a "big" PHY (7-series) presents each
        payload dword with its first byte in the high bits; header dwords are plain integers either way."""
        return [_bswap(d) for d in dwords] if self.endianness == "big" else list(dwords)

    def _beats(self, dwords):
        beats = [dwords[i:i + self.ratio] for i in range(0, len(dwords), self.ratio)]
        return [dict(rx_dat=sum(d << (32 * k) for k, d in enumerate(b)),
                     rx_be=sum(0xf << (4 * k) for k in range(len(b))),
                     rx_first=int(i == 0), rx_last=int(i == len(beats) - 1)) for i, b in enumerate(beats)]

    def _request(self, fmt, address, payload):
        if address % 4 or not 0 <= address < 1 << 32:
            raise ValueError(f"MMIO is to dword addresses below 4 GiB, got {address:#x}")
        tag, self._tag = self._tag, (self._tag + 1) % 256
        header = [0, 0, 0]
        for name, value in (("fmt", fmt), ("type", type_dict["mem_rd32"]), ("length", 1),
                            ("requester_id", COMPLETER_ID), ("tag", tag), ("first_be", 0xf), ("address", address)):
            _field(tlp_request_header, header, name, value)
        self._requests.append(self._beats(header + self._payload(payload)))
        return tag

    def mmio_write(self, address, value):
        """Queues a posted write of the dword `value` to BAR0 byte address `address`."""
        self._request(fmt_dict["mem_wr32"], address, [value & 0xffffffff])

    def mmio_read(self, address):
        """Queues a read of the dword at BAR0 byte address `address`; returns its tag (see mmio_done)."""
        tag = self._request(fmt_dict["mem_rd32"], address, [])
        self.mmio_done.pop(tag, None)
        return tag

    def _card_tlp(self, dw):
        fmt, typ = _field(tlp_request_header, dw, "fmt"), _field(tlp_request_header, dw, "type")
        length = _field(tlp_request_header, dw, "length") or 1024
        if (fmt, typ) == (fmt_dict["cpld"], type_dict["cpld"]):
            if length != 1 or len(dw) != 4:
                raise RuntimeError(f"an MMIO read's completion of {length} dwords, {len(dw) - 3} carried")
            self.mmio_done[_field(tlp_completion_header, dw, "tag")] = self._payload(dw[3:])[0]
            return
        self.tlps.append((fmt, typ, length))
        if typ != type_dict["mem_rd32"] or fmt not in (fmt_dict["mem_rd32"], fmt_dict["mem_wr32"]):
            raise RuntimeError(f"the card sent a TLP of fmt {fmt:#x} type {typ:#x}")
        address = dw[2] & ~3
        if fmt == fmt_dict["mem_rd32"]:
            self.reads.append([_field(tlp_request_header, dw, "requester_id"),
                               _field(tlp_request_header, dw, "tag"), address, 4 * length])
            return
        if len(dw) != 3 + length:
            raise RuntimeError(f"memory write of {length} dwords carries {len(dw) - 3}")
        for k, d in enumerate(self._payload(dw[3:])):
            self.mem[address // 4 + k] = d
        self.writes += 4 * length

    def _completion(self):
        req = self.rng.choice(self.reads) if self.interleave else self.reads[0]
        requester, tag, address, left = req
        n = min(left, MAX_PAYLOAD_BYTES - address % MAX_PAYLOAD_BYTES)
        header = [0, 0, 0]
        for name, value in (("fmt", fmt_dict["cpld"]), ("type", type_dict["cpld"]), ("length", n // 4),
                            ("completer_id", COMPLETER_ID), ("byte_count", left), ("requester_id", requester),
                            ("tag", tag), ("lower_address", address)):
            _field(tlp_completion_header, header, name, value)
        dwords = header + self._payload([self.mem.get(address // 4 + k, 0) for k in range(n // 4)])
        req[2], req[3] = address + n, left - n
        if req[3] == 0:
            self.reads.remove(req)
        return self._beats(dwords)

    def drive(self):
        """This cycle's inputs of the card (prefixed port names)."""
        if not self._out and self._requests:
            self._out = self._requests.pop(0)
        elif not self._out and self.reads:
            self._out = self._completion()
        ins = dict(tx_ready=int(self.rng.random() < self.ready_prob),
                   rx_valid=int(bool(self._out) and self.rng.random() < self.valid_prob))
        if self._out:
            ins.update(self._out[0])
        for name, queue in self.queues.items():
            ins[f"{name}_valid"] = int(bool(queue))
            if queue:
                ins.update((f"{name}_{f}", v) for f, v in zip(self.fields[name], queue[0]))
        self._ins = ins
        return {self.prefix + k: v for k, v in ins.items()}

    def observe(self, out):
        """Takes the card's outputs of the cycle driven by the last `drive()` (prefixed names)."""
        ins, p = self._ins, self.prefix
        if ins["tx_ready"] and out[p + "tx_valid"]:
            dat, be = out[p + "tx_dat"], out[p + "tx_be"]
            self._in += [(dat >> (32 * i)) & 0xffffffff for i in range(self.ratio) if (be >> (4 * i)) & 0xf == 0xf]
            if out[p + "tx_last"]:
                self._card_tlp(self._in)
                self._in = []
        if ins["rx_valid"] and out[p + "rx_ready"]:
            self._out.pop(0)
        for name, queue in self.queues.items():
            if ins[f"{name}_valid"] and out[f"{p}{name}_ready"]:
                queue.pop(0)

    def step(self, sim):
        out = sim.step(**self.drive())
        self.observe(out)
        return out


TX_BASE, RX_BASE = 0x10000, 0x800000
FRAME_BYTES = FRAME_WORDS * 4


def exchange(sim, frames, n_answers, seed=0, ready_prob=0.8, valid_prob=0.8, interleave=True,
             frames_per_descriptor=1, max_cycles=None):
    """Runs `frames` through a Verilated PCIeCard (`sim`, a CycleSim of PCIeCard.ports()): they sit in a host
    buffer read by DMA descriptors of `frames_per_descriptor` frames; each of the `n_answers` expected
    answer frames gets a 1 KiB host buffer (a DMA writer descriptor). Steps until every answer is written.
    Returns (answer frames, cycles at which the receiver took a word, the host model)."""
    host = TLPHost(seed, ready_prob=ready_prob, valid_prob=valid_prob, interleave=interleave)
    for i, f in enumerate(frames):
        for k, w in enumerate(f):
            host.mem[TX_BASE // 4 + i * FRAME_WORDS + k] = w
    host.queues["wr"] = [(RX_BASE + i * FRAME_BYTES, FRAME_BYTES) for i in range(n_answers)]
    host.queues["rd"] = [(TX_BASE + i * FRAME_BYTES, min(frames_per_descriptor, len(frames) - i) * FRAME_BYTES)
                    for i in range(0, len(frames), frames_per_descriptor)]
    max_cycles = max_cycles or 40 * FRAME_WORDS * (len(frames) + n_answers)
    fires, start = [], sim.cycle
    while host.writes < n_answers * FRAME_BYTES or len(fires) < len(frames) * FRAME_WORDS:
        if sim.cycle - start > max_cycles:
            raise RuntimeError(f"PCIe exchange stalled: {host.writes} answer bytes written, {len(fires)} words "
                               f"received, card TLPs {host.tlps[:6]}")
        if host.step(sim)["rx_fire"]:
            fires.append(sim.cycle)
    answers = [[host.mem.get(RX_BASE // 4 + i * FRAME_WORDS + k) for k in range(FRAME_WORDS)]
               for i in range(n_answers)]
    return answers, fires, host

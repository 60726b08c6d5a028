"""Sparsr over PCIe: the DMA width adapter (Migen), the receiver behind LitePCIe's endpoint and DMA driven
at TLP level by a host model (Migen), and the Xilinx board target's gateware (generation + Verilator lint)."""
import random

import pytest
from migen import *
from migen.sim import run_simulation

from cores.sparsr.common import FRAME_WORDS
from cores.sparsr.pcie import SparsrDMAAdapter


def _adapter_run(data_width, beats, answers, seed, resync_at=None):
    """Drive the adapter with random valid/ready: DMA beats in, answer words (with last) in.
    Returns (words out with last, DMA beats out with last)."""
    dut = SparsrDMAAdapter(data_width)
    rng = random.Random(seed)
    got_words, got_beats = [], []
    n_words = len(beats) * data_width // 32

    def feed_beats():
        for i, beat in enumerate(beats):
            if resync_at is not None and i == resync_at:
                while len(got_words) < i * data_width // 32:      # the beats before are fully out
                    yield
                yield dut.resync.eq(1)
                yield
                yield dut.resync.eq(0)
            while rng.random() < 0.3:
                yield
            yield dut.dma_sink.valid.eq(1)
            yield dut.dma_sink.data.eq(beat)
            yield
            while not (yield dut.dma_sink.ready):
                yield
            yield dut.dma_sink.valid.eq(0)

    def take_words():
        while len(got_words) < n_words:
            ready = rng.random() < 0.7
            yield dut.source.ready.eq(ready)
            yield
            if ready and (yield dut.source.valid):
                got_words.append(((yield dut.source.data), (yield dut.source.last)))
        yield dut.source.ready.eq(0)

    def feed_answers():
        for i, w in enumerate(answers):
            while rng.random() < 0.3:
                yield
            yield dut.sink.valid.eq(1)
            yield dut.sink.data.eq(w)
            yield dut.sink.last.eq(int(i % FRAME_WORDS == FRAME_WORDS - 1))
            yield
            while not (yield dut.sink.ready):
                yield
            yield dut.sink.valid.eq(0)

    def take_beats():
        while len(got_beats) < len(answers) * 32 // data_width:
            ready = rng.random() < 0.6
            yield dut.dma_source.ready.eq(ready)
            yield
            if ready and (yield dut.dma_source.valid):
                got_beats.append(((yield dut.dma_source.data), (yield dut.dma_source.last)))

    run_simulation(dut, [feed_beats(), take_words(), feed_answers(), take_beats()])
    return got_words, got_beats


@pytest.mark.parametrize("data_width", [32, 64, 128])
def test_adapter_frames_and_packing(data_width):
    """Two frames of DMA beats become 512 words, lowest word of a beat first, `last` on words 255 and 511;
    answer words are packed back lowest first with `last` on the beat ending each frame."""
    rng = random.Random(data_width)
    ratio = data_width // 32
    words = [rng.getrandbits(32) for _ in range(2 * FRAME_WORDS)]
    beats = beats_from(words, ratio)
    answers = [rng.getrandbits(32) for _ in range(2 * FRAME_WORDS)]
    got_words, got_beats = _adapter_run(data_width, beats, answers, seed=data_width)
    assert got_words == [(w, int(i % FRAME_WORDS == FRAME_WORDS - 1)) for i, w in enumerate(words)]
    beats_per_frame = FRAME_WORDS // ratio
    assert got_beats == [(b, int(i % beats_per_frame == beats_per_frame - 1))
                         for i, b in enumerate(beats_from(answers, ratio))]


def beats_from(words, ratio):
    return [sum(w << (32 * k) for k, w in enumerate(words[i:i + ratio])) for i in range(0, len(words), ratio)]


def test_adapter_resync():
    """A resync between beats restarts frame counting: the next word is a frame's first."""
    words = list(range(1, 64 + FRAME_WORDS + 1))
    got_words, _ = _adapter_run(64, beats_from(words, 2), [], seed=7, resync_at=32)   # after 64 words
    assert [w for w, _ in got_words] == words
    assert [i for i, (_, last) in enumerate(got_words) if last] == [64 + FRAME_WORDS - 1]


def test_adapter_rejects_bad_width():
    with pytest.raises(ValueError):
        SparsrDMAAdapter(48)


def test_xilinx_board_gateware_and_lint(tmp_path):
    """The AC701 PCIe target generates its gateware (Verilog, XDC, Vivado TCL; Vivado is not run) with the
    receiver's counters as CSRs, and the whole generated Verilog passes `verilator --lint-only` with
    blackbox stubs for what only Vivado provides (unisim primitives, the PCIe hard block wrapper): no
    error, and no warning beyond width extension/truncation and incomplete cases (Migen's style)."""
    from litex.soc.integration.builder import Builder
    from boards.xilinx_ac701_pcie import BoardSoC
    from software.sparsr.vsim import lint
    name = "xilinx_ac701_pcie"
    builder = Builder(BoardSoC(wmem_rows=16, xmem_rows=4), output_dir=str(tmp_path), compile_software=False,
                      compile_gateware=False, csr_csv=str(tmp_path / "csr.csv"))
    builder.build(build_name=name, run=False)
    gateware = tmp_path / "gateware"
    verilog = (gateware / f"{name}.v").read_text()
    assert f"module {name}" in verilog and "pcie_s7 " in verilog
    assert (gateware / f"{name}.xdc").exists() and "pcie_s7" in (gateware / f"{name}.tcl").read_text()
    csr = (tmp_path / "csr.csv").read_text()
    for reg in ("sparsr_receiver_frames_ok", "sparsr_receiver_refused_length", "pcie_dma0_reader_enable",
                "pcie_dma0_writer_enable"):
        assert reg in csr
    rc, messages, stubbed = lint(str(gateware / f"{name}.v"), name, ["-Wno-COMBDLY"])
    assert rc == 0 and not [m for m in messages if m.startswith("%Error")]
    assert {m.split(":")[0] for m in messages} <= {"%Warning-WIDTH", "%Warning-CASEINCOMPLETE"}
    assert "pcie_s7" in stubbed and "sparsrreceiver" in verilog.lower()


# TLP level ----------------------------------------------------------------------------------------
# LitePCIe's pip package has no simulation models (its repository keeps them under test/model), and
# Migen's simulator runs the endpoint + DMA + receiver at about 20 cycles per second. So the card runs in
# Verilator, stepped cycle by cycle from Python (software.sparsr.vsim.CycleSim), and the host side of the
# link is modelled here from the PCIe TLP formats with LitePCIe's header field definitions: the card's
# memory-read requests are answered with completions (split at the max payload size, completions of
# different requests interleaved at random), its memory writes land in host memory.

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litepcie.common import phy_layout, get_bar_mask
from litepcie.core import LitePCIeEndpoint
from litepcie.frontend.dma import LitePCIeDMA
from litepcie.tlp.common import tlp_request_header, tlp_completion_header, fmt_dict, type_dict

from cores.sparsr.pcie import SparsrDMAPort
from software.sparsr.frames import encode_rows, read_frame, status_frame, dma_frame
from software.sparsr.model import CardModel
from software.sparsr.demo import random_row
from software.sparsr.vsim import CycleSim

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
        phy, rd, wr = self.phy, self.dma.reader.desc_sink, self.dma.writer.desc_sink
        ports = {"rx_fire": (self.rx_fire, False)}
        for name, sig in (("valid", phy.sink.valid), ("first", phy.sink.first), ("last", phy.sink.last),
                          ("dat", phy.sink.dat), ("be", phy.sink.be)):
            ports["tx_" + name] = (sig, False)
        ports["tx_ready"] = (phy.sink.ready, True)
        for name, sig in (("valid", phy.source.valid), ("first", phy.source.first), ("last", phy.source.last),
                          ("dat", phy.source.dat), ("be", phy.source.be)):
            ports["rx_" + name] = (sig, True)
        ports["rx_ready"] = (phy.source.ready, False)
        for prefix, desc in (("rd", rd), ("wr", wr)):
            for name in ("valid", "address", "length"):
                ports[f"{prefix}_{name}"] = (getattr(desc, name), True)
            ports[f"{prefix}_ready"] = (desc.ready, False)
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
    takes the card's TLPs (random ready), answers memory reads with completions (random gaps), feeds the
    DMA descriptors queued in `rd_desc` / `wr_desc`."""
    def __init__(self, seed, ratio=PCIE_DW // 32, endianness=ModelPHY.endianness):
        self.rng, self.ratio, self.endianness = random.Random(seed), ratio, endianness
        self.mem = {}
        self.reads = []          # pending: [requester, tag, next byte address, bytes left]
        self.writes = 0          # payload bytes the card wrote
        self.tlps = []           # (fmt, type, length in dwords) of the card's TLPs
        self.rd_desc, self.wr_desc = [], []
        self._in, self._out = [], []       # TLP dwords being received; completion beats being sent

    def _payload(self, dwords):
        """Payload dwords between host byte order and the PHY's: a "big" PHY (7-series) presents each
        payload dword with its first byte in the high bits; header dwords are plain integers either way."""
        return [_bswap(d) for d in dwords] if self.endianness == "big" else list(dwords)

    def _card_tlp(self, dw):
        fmt, typ = _field(tlp_request_header, dw, "fmt"), _field(tlp_request_header, dw, "type")
        length = _field(tlp_request_header, dw, "length") or 1024
        self.tlps.append((fmt, typ, length))
        assert typ == type_dict["mem_rd32"] and fmt in (fmt_dict["mem_rd32"], fmt_dict["mem_wr32"])
        address = dw[2] & ~3
        if fmt == fmt_dict["mem_rd32"]:
            self.reads.append([_field(tlp_request_header, dw, "requester_id"),
                               _field(tlp_request_header, dw, "tag"), address, 4 * length])
            return
        assert len(dw) == 3 + length
        for k, d in enumerate(self._payload(dw[3:])):
            self.mem[address // 4 + k] = d
        self.writes += 4 * length

    def _completion(self):
        req = self.rng.choice(self.reads)
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
        beats = [dwords[i:i + self.ratio] for i in range(0, len(dwords), self.ratio)]
        return [dict(rx_dat=sum(d << (32 * k) for k, d in enumerate(b)),
                     rx_be=sum(0xf << (4 * k) for k in range(len(b))),
                     rx_first=int(i == 0), rx_last=int(i == len(beats) - 1)) for i, b in enumerate(beats)]

    def step(self, sim):
        if not self._out and self.reads:
            self._out = self._completion()
        ins = dict(tx_ready=int(self.rng.random() < 0.8),
                   rx_valid=int(bool(self._out) and self.rng.random() < 0.8))
        if self._out:
            ins.update(self._out[0])
        for prefix, queue in (("rd", self.rd_desc), ("wr", self.wr_desc)):
            ins[f"{prefix}_valid"] = int(bool(queue))
            if queue:
                ins[f"{prefix}_address"], ins[f"{prefix}_length"] = queue[0]
        out = sim.step(**ins)
        if ins["tx_ready"] and out["tx_valid"]:
            dat, be = out["tx_dat"], out["tx_be"]
            self._in += [(dat >> (32 * i)) & 0xffffffff for i in range(self.ratio) if (be >> (4 * i)) & 0xf == 0xf]
            if out["tx_last"]:
                self._card_tlp(self._in)
                self._in = []
        if ins["rx_valid"] and out["rx_ready"]:
            self._out.pop(0)
        for prefix, queue in (("rd", self.rd_desc), ("wr", self.wr_desc)):
            if ins[f"{prefix}_valid"] and out[f"{prefix}_ready"]:
                queue.pop(0)
        return out


@pytest.fixture(scope="module")
def pcie_card():
    card = PCIeCard(wmem_rows=4, xmem_rows=2)
    return card, card.ports()


def test_frames_over_pcie_dma_at_tlp_level(pcie_card):
    """Frames in a host buffer reach the receiver through LitePCIe's DMA reader (memory reads answered by
    split, interleaved completions); answer frames come back through the DMA writer (memory writes, one
    1 KiB host buffer per answer frame) and equal the reference model's word for word; the receiver
    takes the frames at one word per cycle once the DMA streams."""
    card, ports = pcie_card
    rng = random.Random(21)
    rows = [random_row(rng, n) for n in (102, 256, 7, 0)]
    frames = ([status_frame()] + encode_rows(0, rows[:2]) + encode_rows(0, rows[2:], 0x02) +
              [dma_frame(0, 2, 2), read_frame(0, 4), status_frame()])
    model = CardModel(4, 2)
    expected = [a for f in frames for a in model.receive(f)]
    host = TLPHost(seed=22)
    tx_base, rx_base, frame_bytes = 0x10000, 0x80000, FRAME_WORDS * 4
    for i, f in enumerate(frames):
        for k, w in enumerate(f):
            host.mem[tx_base // 4 + i * FRAME_WORDS + k] = w
    host.wr_desc = [(rx_base + i * frame_bytes, frame_bytes) for i in range(len(expected))]
    host.rd_desc = [(tx_base, 3 * frame_bytes)] + [(tx_base + i * frame_bytes, frame_bytes)
                                                    for i in range(3, len(frames))]
    sim = CycleSim(card, ports, top="sparsr_pcie")
    try:
        fires = []
        while host.writes < len(expected) * frame_bytes:
            assert sim.cycle < 40 * FRAME_WORDS * len(frames), (host.writes, len(fires), host.tlps[:6])
            if host.step(sim)["rx_fire"]:
                fires.append(sim.cycle)
    finally:
        sim.close()
    got = [[host.mem.get(rx_base // 4 + i * FRAME_WORDS + k) for k in range(FRAME_WORDS)]
           for i in range(len(expected))]
    assert len(fires) == len(frames) * FRAME_WORDS
    assert got == expected
    assert {(f, t) for f, t, _ in host.tlps} == {(fmt_dict["mem_rd32"], 0), (fmt_dict["mem_wr32"], 0)}

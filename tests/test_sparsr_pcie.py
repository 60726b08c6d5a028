"""Sparsr over PCIe: the DMA width adapter (Migen), the receiver behind LitePCIe's endpoint and DMA driven
at TLP level by a host model (a Verilated model stepped from Python), and the Xilinx board target's
gateware (generation + the lint of sim.verilated)."""
import random

import pytest
from migen import *
from migen.sim import run_simulation

from litepcie.tlp.common import fmt_dict

from cores.sparsr.common import FRAME_WORDS, CMD_WRITE_XMEM
from cores.sparsr.pcie import SparsrDMAAdapter
from software.sparsr.frames import encode_rows, read_frame, status_frame, dma_frame
from sim.models.pcie import PCIeCard, exchange
from sim.verilated import CycleSim, lint
from software.sparsr.rows import random_row
from software.sparsr.reference import CardModel
from tests.harness.streams import send, collect


def _adapter_run(data_width, beats, answers, seed, resync_at=None):
    """Drive the adapter with random valid/ready: DMA beats in, answer words (with last) in; with
    `resync_at`, pulse resync before that beat, once the words of the beats before are out.
    Returns (words out with last, DMA beats out with last)."""
    dut = SparsrDMAAdapter(data_width)
    rng = random.Random(seed)
    got_words, got_beats = [], []
    ratio = data_width // 32
    n_words, n_beats = len(beats) * ratio, len(answers) // ratio
    split = len(beats) if resync_at is None else resync_at

    def feed_beats():
        yield from send(dut.dma_sink, [{"data": b} for b in beats[:split]], rng, valid_p=0.7)
        if resync_at is not None:
            while len(got_words) < resync_at * ratio:
                yield
            yield dut.resync.eq(1)
            yield
            yield dut.resync.eq(0)
        yield from send(dut.dma_sink, [{"data": b} for b in beats[split:]], rng, valid_p=0.7)

    def done():
        while len(got_words) < n_words or len(got_beats) < n_beats:
            yield

    answer_beats = [{"data": w, "last": int(i % FRAME_WORDS == FRAME_WORDS - 1)} for i, w in enumerate(answers)]
    run_simulation(dut, [feed_beats(), send(dut.sink, answer_beats, rng, valid_p=0.7), done(),
                         collect(dut.source, got_words, rng, ("data", "last"), ready_p=0.7),
                         collect(dut.dma_source, got_beats, rng, ("data", "last"), ready_p=0.6)])
    return [(b["data"], b["last"]) for b in got_words], [(b["data"], b["last"]) for b in got_beats]


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
    receiver's counters as CSRs, and the whole generated Verilog passes `sim.verilated.lint` with
    blackbox stubs for what only Vivado provides (unisim primitives, the PCIe hard block wrapper): no
    error, and no warning beyond Migen's style: width extension/truncation (WIDTH, or WIDTHEXPAND/WIDTHTRUNC
    in newer Verilators), incomplete cases and a combinational block of constants (LitePCIe's, ALWNEVER)."""
    from litex.soc.integration.builder import Builder
    from boards.xilinx_ac701_pcie import BoardSoC
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
    assert {m.split(":")[0] for m in messages} <= {"%Warning-WIDTH", "%Warning-WIDTHEXPAND", "%Warning-WIDTHTRUNC",
                                                   "%Warning-CASEINCOMPLETE", "%Warning-ALWNEVER"}
    assert "pcie_s7" in stubbed and "sparsrreceiver" in verilog.lower()


# TLP level (sim.models.pcie) --------------------------------------------------------------------

@pytest.fixture(scope="module")
def pcie_card():
    card = PCIeCard(wmem_rows=4, xmem_rows=2)
    return card, card.ports()


def test_frames_over_pcie_dma_at_tlp_level(pcie_card):
    """Frames in a host buffer reach the receiver through LitePCIe's DMA reader (memory reads answered by
    split, interleaved completions, random gaps both ways); answer frames come back through the DMA writer
    (memory writes, one 1 KiB host buffer per answer frame) and equal the reference model's word for word."""
    card, ports = pcie_card
    rng = random.Random(21)
    rows = [random_row(rng, n) for n in (102, 256, 7, 0)]
    frames = ([status_frame()] + encode_rows(0, rows[:2]) + encode_rows(0, rows[2:], CMD_WRITE_XMEM) +
              [dma_frame(0, 2, 2), read_frame(0, 4), status_frame()])
    model = CardModel(4, 2)
    expected = [a for f in frames for a in model.receive(f)]
    sim = CycleSim(card, ports, name="sparsr_pcie")
    try:
        got, fires, host = exchange(sim, frames, len(expected), seed=22, frames_per_descriptor=3)
    finally:
        sim.close()
    assert len(fires) == len(frames) * FRAME_WORDS
    assert got == expected
    assert {(f, t) for f, t, _ in host.tlps} == {(fmt_dict["mem_rd32"], 0), (fmt_dict["mem_wr32"], 0)}

"""Sparsr with XMEM in DRAM (cores/sparsr/xmem_dram.py) on LiteDRAM's SDRAM model behind a LiteDRAM core
(sim.models.dram), as generated Verilog in Verilator, against the reference model: XMEM rows written (raw in
pieces, LIL, rewritten), rows past the end of the memory (dropped and counted), junk frames (nothing reaches the
DRAM), copied to WMEM by the DMA and read back, under random valid/ready; with the Colorlight's kind of SDR
SDRAM (32-bit native port) and the Versa's DDR3 chip (128-bit native port in the model)."""
import random

import pytest

from cores.sparsr.common import CMD_WRITE_XMEM, FRAME_WORDS, KIND_LIL, KIND_RAW, ROW_WORDS, XMEM_DRAM, make_tag
from cores.sparsr.receiver import SparsrReceiver
from software.sparsr.demo import DEMO_DENSITIES
from software.sparsr.rows import random_row
from software.sparsr.frames import (encode_rows, frame, read_frame, dma_frame, status_frame, lil_payload,
                                    stored_words)
from software.sparsr.reference import CardModel
from sim.verilated.sparsr import VerilatedReceiver, WAIT, Probe
from tests.harness.tiers import extended

pytestmark = pytest.mark.long        # the whole file: tens of seconds or more

WROWS, XROWS = 8, 4096


@pytest.fixture(scope="module", params=["sdr", extended("ddr3")])
def card(request):
    return VerilatedReceiver(WROWS, XROWS, dram=request.param)


def frames_of(items):
    return [f for f in items if isinstance(f, list)]


def check(card, items, seed, valid_prob=0.8, ready_prob=0.7):
    """Run `items` (frames, WAIT, Probe) on the card; answers and counters must equal the model's."""
    model = CardModel(WROWS, XROWS)
    expected = [a for f in frames_of(items) for a in model.receive(f)]
    run = card.run(items, seed=seed, valid_prob=valid_prob, ready_prob=ready_prob)
    assert len(run.answers) == len(expected)
    assert run.answers == expected
    assert run.counters == model.counters
    return run, model


def xmem_words(frames):
    """Payload words that the (valid) XMEM write frames among `frames` store."""
    return stored_words(frames, CMD_WRITE_XMEM, XROWS)


def junk_frames(rng):
    """Frames the receiver refuses, each for a different rule; none may reach the DRAM."""
    row = random_row(rng, 30)
    lil = [make_tag(KIND_LIL, 30), 5] + lil_payload(row)
    swapped = list(lil)
    swapped[2], swapped[3] = swapped[3], swapped[2]          # lane numbers out of order
    return [
        frame(CMD_WRITE_XMEM, [make_tag(KIND_RAW, 5, 3), 7] + [9] * 5, 1),        # piece without its start
        frame(CMD_WRITE_XMEM, [make_tag(0b11, 4), 7] + [9] * 4, 1),               # kind 11
        frame(CMD_WRITE_XMEM, swapped, 1),                                        # LIL lanes
        frame(CMD_WRITE_XMEM, lil, 2),                                            # ADDR != slots
        frame(CMD_WRITE_XMEM, lil, 1)[:100],                                      # short frame
        frame(CMD_WRITE_XMEM, lil, 1) + [1, 2],                                   # long frame
        dma_frame(XROWS - 2, 0, 3),                                               # DMA past XMEM's end
    ]


def test_xmem_rows_through_dram(card):
    """Rows of every density at the start, the middle and the end of 4096 rows of XMEM in DRAM, rewritten
    (raw over LIL and back: the row map moves them between physical rows), rows past the end, junk frames
    between them; every row copied to WMEM by the DMA and read back equals the model's."""
    rng = random.Random(11)
    densities = DEMO_DENSITIES + (97, 101, 255)
    valid, items = [], []
    for first in (0, 2048, XROWS - 6, XROWS - 3, 2048):     # the last batch rewrites rows 2048..
        rows = [random_row(rng, rng.choice(densities)) for _ in range(6)]
        batch = encode_rows(first, rows, CMD_WRITE_XMEM)   # from XROWS - 3 on: rows 4096..4098 are past the end
        valid += batch
        items += batch + [rng.choice(junk_frames(rng))]
    for xr in (0, 2048, XROWS - 8):
        items += [dma_frame(xr, 0, WROWS), read_frame(0, WROWS)]
    items += [WAIT, status_frame()]
    run, model = check(card, items, seed=12)
    assert run.counters["slots_refused_row"] >= 3             # rows 4096..4098 (a raw row: each piece)
    assert run.dram["dram_words_written"] == xmem_words(valid)
    assert run.dram["dram_words_read"] >= 3 * WROWS * 2            # every DMA row came through the DRAM


def test_junk_writes_nothing_to_dram(card):
    """The same valid frames with and without junk frames between them: the DRAM receives the same words
    (a refused frame writes nothing), and the rows copied out of XMEM are the model's."""
    rng = random.Random(13)
    rows = [random_row(rng, rng.choice(DEMO_DENSITIES)) for _ in range(8)]
    valid = encode_rows(100, rows, CMD_WRITE_XMEM)
    tail = [dma_frame(100, 0, WROWS), read_frame(0, WROWS), WAIT]
    clean, _ = check(card, valid + tail, seed=14)
    mixed = []
    for f in valid:
        mixed += [f, rng.choice(junk_frames(rng))]
    dirty, model = check(card, mixed + tail, seed=15, valid_prob=0.6, ready_prob=0.5)
    assert sum(v for k, v in model.counters.items() if k.startswith("refused_")) == len(valid)
    assert dirty.dram["dram_words_written"] == clean.dram["dram_words_written"] == xmem_words(valid)


def test_dma_and_write_rates(card):
    """At full rate: raw rows written to XMEM go in at the DRAM's write rate or faster, and the DMA copies raw
    rows at the slower of the executor's rate (a row's 256 words + 4 cycles) and the DRAM's read rate (the next
    rows are fetched while the executor copies one); the DRAM's own rates (LiteDRAM's DMA reader and writer
    on a native port) are measured in the same run."""
    rng = random.Random(16)
    rows = [random_row(rng, 256) for _ in range(2 * WROWS)]
    writes = encode_rows(0, rows, CMD_WRITE_XMEM)
    items = writes + [WAIT, dma_frame(0, 0, WROWS), WAIT, Probe(write=False, words=4096),
                      Probe(write=True, words=4096), status_frame()]
    run, _ = check(card, items, seed=17, valid_prob=1.0, ready_prob=1.0)
    (last_write, _), (dma_word, dma_idle) = run.waits
    (_, _, read_cycles), (_, _, write_cycles) = run.probes
    dram_read = 4096 * card.native_bits // 32 / read_cycles           # 32-bit words per cycle
    dram_write = 4096 * card.native_bits // 32 / write_cycles
    input_rate = FRAME_WORDS * len(writes) / (last_write - run.first_word_cycle + 1)
    assert dram_read > 0.9 and dram_write > 0.9
    assert input_rate >= min(1.0, dram_write) * 0.95
    row = max(ROW_WORDS + 4, ROW_WORDS / dram_read)
    # the first row's fetch and the last row's copy are not overlapped
    assert ROW_WORDS * WROWS < dma_idle - dma_word < row * WROWS + ROW_WORDS + 100


def test_parameters_are_checked():
    from sim.models.dram import DRAMModel
    dram = DRAMModel("sdr")                                     # 8 MiB: 8191 rows + the spare
    with pytest.raises(ValueError, match="needs a dram_port"):
        SparsrReceiver(4, 16, xmem=XMEM_DRAM)
    with pytest.raises(ValueError, match="xmem must be one of"):
        SparsrReceiver(4, 16, xmem="sram")
    with pytest.raises(ValueError, match="past the end"):
        SparsrReceiver(4, 4096, xmem=XMEM_DRAM, dram_port=dram.crossbar.get_port(), xmem_base=4 << 20)
    with pytest.raises(ValueError, match="multiple of 1024"):
        SparsrReceiver(4, 16, xmem=XMEM_DRAM, dram_port=dram.crossbar.get_port(), xmem_base=512)
    with pytest.raises(ValueError, match="mode 'both'"):
        SparsrReceiver(4, 16, xmem=XMEM_DRAM, dram_port=dram.crossbar.get_port(mode="read"))
    with pytest.raises(ValueError, match="1..4096"):
        SparsrReceiver(4, 4097, xmem=XMEM_DRAM, dram_port=dram.crossbar.get_port())
    SparsrReceiver(4, 4096, xmem=XMEM_DRAM, dram_port=dram.crossbar.get_port(), xmem_base=(4 << 20) - 1024)


def test_bench_quick():
    from sim.bench.bench_sparsr_dram import run
    (d,) = run(quick=True).data["xmem_dram"]            # the SDR model, 8 rows
    assert d["write_rate"] > 0.9 and d["dram_read"] > 0.9 * 4
    assert 256 <= d["raw_cycles"] < 2 * 256            # the fetches overlap the copies

"""Sparsr receiver as generated Verilog, a Verilated model (sim.verilated.sparsr), against the reference model.

Migen's simulator evaluates every expression at unbounded width; Verilog evaluates it at the width of its
widest operand or target. The receiver's LIL word count ceil(5 n / 4), assigned to a 9-bit register, wrapped
in Verilog for n = 102 (5 * 102 + 3 = 513 > 511): a 102-lane LIL row was stored as an empty row. The Migen
tests passed; litex_sim (the demo) failed. These tests run the gateware's semantics.
"""
import random

import pytest

from cores.sparsr.common import (FRAME_WORDS, KIND_LIL, KIND_RAW, CMD_WRITE_XMEM, CMD_DMA_XMEM_WMEM,
                                 CMD_READ_WMEM, CMD_WRITE_WMEM, LIL_MAX_ENTRIES, make_tag)
from software.sparsr.demo import DEMO_DENSITIES
from software.sparsr.rows import random_row
from software.sparsr.frames import (encode_rows, frame, read_frame, dma_frame, status_frame, lil_payload,
                                    AnswerDecoder)
from software.sparsr.reference import CardModel
from sim.verilated.sparsr import VerilatedReceiver

WROWS, XROWS = 8, 4


@pytest.fixture(scope="module")
def card():
    return VerilatedReceiver(WROWS, XROWS)


def check(card, frames, seed, valid_prob=0.8, ready_prob=0.7, wrows=WROWS, xrows=XROWS):
    """Run frames through the Verilated receiver; answers and counters must equal the model's."""
    model = CardModel(wrows, xrows)
    expected = [a for f in frames for a in model.receive(f)]
    run = card.run(frames, seed=seed, valid_prob=valid_prob, ready_prob=ready_prob)
    assert len(run.answers) == len(expected)
    assert run.answers == expected
    assert run.counters == model.counters
    return run, model


def demo_failing_rows():
    """The rows the litex_sim demo (seed 1, 64 WMEM rows) read back wrong: numbers 43, 48, 53, 56, 62 of
    its random rows, every one with 102 non-zero lanes."""
    rng = random.Random(1)
    rows = [random_row(rng, rng.choice(DEMO_DENSITIES)) for _ in range(64)]
    failing = [rows[i] for i in (43, 48, 53, 56, 62)]
    assert all(sum(1 for v in r if v) == LIL_MAX_ENTRIES for r in failing)
    return failing


def test_demo_rows_with_102_lanes(card):
    """The demo's failing rows, written to WMEM directly and through XMEM + DMA (both paths count LIL
    words), read back with back-pressure: every lane equal."""
    rows = demo_failing_rows()
    direct, via_x = rows[:4], rows[4:]
    frames = (encode_rows(0, direct) + encode_rows(0, via_x, CMD_WRITE_XMEM) + [dma_frame(0, 4, 1)]
              + [read_frame(0, 5), status_frame()])
    run, model = check(card, frames, seed=1)
    decoder = AnswerDecoder()
    for answer in run.answers[:-1]:
        decoder.push(answer)
    assert decoder.rows == [(i, r) for i, r in enumerate(rows)]
    assert run.counters["slots_stored"] == 5 and run.counters["frames_ok"] == len(frames)


def test_lil_counts_around_the_limit(card):
    """LIL slots of 97..102 entries (the word counts where 5 n + 3 crosses 512) and 103 entries (refused
    tag), each stored directly and through the DMA."""
    rng = random.Random(2)
    rows = [random_row(rng, n) for n in range(97, 103)]
    frames = []
    for k, row in enumerate(rows):
        frames += encode_rows(k % WROWS, [row])
        frames += encode_rows(k % XROWS, [row], CMD_WRITE_XMEM)
        frames += [dma_frame(k % XROWS, (k + 1) % WROWS, 1), read_frame(0, WROWS)]
    frames += [frame(CMD_WRITE_WMEM, [make_tag(KIND_LIL, 103), 2] + [0] * 129, 1), status_frame()]
    run, _ = check(card, frames, seed=2, valid_prob=0.9, ready_prob=0.5)
    assert run.counters["refused_tag"] == 1


def test_random_traffic(card):
    """Random rows of every density and every write path, reads and bad frames, random valid/ready."""
    rng = random.Random(3)
    densities = DEMO_DENSITIES + (97, 101, 255)
    frames = []
    for _ in range(6):
        n = rng.randint(1, WROWS)
        rows = [random_row(rng, rng.choice(densities)) for _ in range(n)]
        if rng.random() < 0.4:
            m = min(n, XROWS)
            xr = rng.randrange(XROWS - m + 1)
            frames += encode_rows(xr, rows[:m], CMD_WRITE_XMEM)
            frames.append(dma_frame(xr, rng.randrange(WROWS - m + 1), m))
        else:
            frames += encode_rows(WROWS - n, rows)
        frames.append(read_frame(0, WROWS))
        bad = [frame(0x09, [], 0),                                            # unknown command
               frame(CMD_WRITE_WMEM, [make_tag(KIND_RAW, 5, 3), 0] + [1] * 5, 1),   # piece without start
               frame(CMD_WRITE_WMEM, [0, 0, 0], 1)[:200]]                     # short frame
        frames.append(rng.choice(bad + [status_frame()]))
    run, _ = check(card, frames + [status_frame()], seed=3)
    assert run.counters["frames_ok"] >= 18


def test_parameter_sums_do_not_wrap(card):
    """Read/DMA ranges whose 32-bit sums wrap (first + n past 2**32) are refused, not run for 4 billion rows."""
    top = 2**32 - 1
    bad = [read_frame(1, top), frame(CMD_READ_WMEM, [2, top - 1]), dma_frame(1, 0, top), dma_frame(0, 1, top),
           frame(CMD_DMA_XMEM_WMEM, [0, 3, top - 2])]
    frames = bad + encode_rows(0, [random_row(random.Random(4), 5)]) + [read_frame(0, 1), status_frame()]
    run, _ = check(card, frames, seed=4)
    assert run.counters["refused_cmd"] == len(bad)
    assert run.cycles < 20 * FRAME_WORDS * len(frames)


def test_answer_fifo_depth_not_power_of_two():
    """An answer FIFO of 2**k - 1 entries (its level register is k bits) under heavy output back-pressure."""
    card = VerilatedReceiver(4, 2, fifo_depth=7)
    rng = random.Random(5)
    rows = [random_row(rng, n) for n in (256, 3, 102, 204)]
    frames = encode_rows(0, rows) + [read_frame(0, 4), status_frame()]
    check(card, frames, seed=5, valid_prob=1.0, ready_prob=0.3, wrows=4, xrows=2)


def test_input_rate_in_verilog(card):
    """Write frames queued back to back (the costliest slot mixes) go in at one word per cycle."""
    rng = random.Random(6)
    frames = []
    for counts in ((48, 48, 49, 49), (0, 0, 0, 0), (102, 90), (60, 60, 60)):
        slots = []
        for k, n in enumerate(counts):
            slots += [make_tag(KIND_LIL, n), k] + lil_payload(random_row(rng, n))
        frames.append(frame(CMD_WRITE_WMEM, slots, len(counts)))
    rows = [random_row(rng, rng.choice(DEMO_DENSITIES)) for _ in range(48)]
    for k in range(0, len(rows), WROWS):
        frames += encode_rows(0, rows[k:k + WROWS])
    run, _ = check(card, frames + [status_frame()], seed=6, valid_prob=1.0, ready_prob=1.0)
    assert run.words_in == FRAME_WORDS * (len(frames) + 1)
    assert run.input_rate == 1.0


def test_one_row_memories_elaborate():
    """The smallest memories the constructor accepts (1 row each) generate Verilog (the row maps keep two
    entries: a one-entry memory has no address)."""
    from migen.fhdl.verilog import convert
    from cores.sparsr.receiver import SparsrReceiver
    rx = SparsrReceiver(1, 1, with_csr=False)
    verilog = str(convert(rx, ios={rx.sink.valid, rx.sink.data, rx.source.valid, rx.source.data}))
    assert "sparsr_wmap" in verilog and "sparsr_xmap" in verilog

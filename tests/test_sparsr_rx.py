"""Sparsr receiver RTL against the reference card model and the host encoder.

One card per test module (its Verilog in Verilator, random valid/ready) carries state from test to test;
every answer frame (rows read back, status counters) must equal the model's word for word. The API runs
over the Migen simulation (an interactive link); the parser is also tested alone (no executor).
"""
import random

import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from migen import Mux, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counters
from cores.sparsr.common import (
    ROW_LANES, ROW_WORDS, KIND_RAW, KIND_LIL, KIND_REFUSED, CMD_WRITE_WMEM, CMD_WRITE_XMEM,
    CMD_READ_WMEM, LIL_MAX_ENTRIES, COUNTERS, REASONS, WORD_LAYOUT, make_tag, lil_words,
)
from cores.sparsr.memories import FrameBanks
from cores.sparsr.parser import SparsrParser
from cores.sparsr.receiver import SparsrReceiver
from software.sparsr.api import Sparsr, FrameRefused, RowRefused
from software.sparsr.frames import (encode_rows, frame, lil_payload, read_frame, dma_frame, choose_kind,
                                    AnswerDecoder)
from software.sparsr.reference import CardModel
from software.sparsr.rows import random_row
from sim.models.sparsr_link import MigenLink
from sim.verilated.sparsr import VerilatedReceiver

WROWS, XROWS = 8, 2
DENSITIES = (0, 1, 48, 49, 102, 103, 204, 256)


class Card:
    """The receiver's Verilog (sim.verilated.sparsr) and the model fed the same frames. The card keeps the
    frames it was sent: each exchange replays them from reset with the new ones (runs take milliseconds),
    so state carries from exchange to exchange as on one card."""
    def __init__(self, seed, valid_prob, ready_prob):
        self.card = VerilatedReceiver(WROWS, XROWS)
        self.seed, self.valid_prob, self.ready_prob = seed, valid_prob, ready_prob
        self.model = CardModel(WROWS, XROWS)
        self.status = dict(self.model.counters)
        self.sent, self.answers = [], []

    def exchange(self, frames):
        """Send frames; every answer and, afterwards, every counter must equal the model's."""
        expected = [a for f in frames for a in self.model.receive(f)]
        self.sent += frames
        run = self.card.run(self.sent, seed=self.seed, valid_prob=self.valid_prob, ready_prob=self.ready_prob)
        assert run.answers == self.answers + expected
        self.answers = run.answers
        assert run.counters == self.model.counters
        self.status = dict(run.counters)
        return expected

    def delta(self, frames):
        """Counter increments caused by `frames`."""
        before = self.status
        self.exchange(frames)
        return {k: self.status[k] - before[k] for k in before if self.status[k] != before[k]}


@pytest.fixture(scope="module")
def card():
    return Card(seed=11, valid_prob=0.85, ready_prob=0.8)


def test_encoder_raw_escape():
    """The encoder picks LIL up to 102 non-zero lanes (128 payload words), raw beyond."""
    rng = random.Random(1)
    kinds = {n: choose_kind(random_row(rng, n)) for n in DENSITIES}
    assert kinds == {0: KIND_LIL, 1: KIND_LIL, 48: KIND_LIL, 49: KIND_LIL, 102: KIND_LIL, 103: KIND_RAW,
                     204: KIND_RAW, 256: KIND_RAW}
    assert lil_words(LIL_MAX_ENTRIES) == 128 and len(lil_payload(random_row(rng, 102))) == 128


def test_roundtrip_every_density(card):
    """One row of each density class at shuffled row numbers, stored and read back."""
    rng = random.Random(3)
    numbers = list(range(WROWS))
    rng.shuffle(numbers)
    frames = []
    for number, n in zip(numbers, DENSITIES):
        frames += encode_rows(number, [random_row(rng, n)])
    card.exchange(frames + [read_frame(0, WROWS)])


@settings(max_examples=12, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, WROWS - 1), st.sampled_from(DENSITIES)), min_size=1, max_size=3),
       st.integers(0, 2**32 - 1))
def test_roundtrip(card, rows, seed):
    """Encode rows of every density class at random row numbers, store them, read back, compare."""
    rng = random.Random(seed)
    contents = {}
    frames = []
    for number, n in rows:
        contents[number] = random_row(rng, n)
        frames += encode_rows(number, [contents[number]], CMD_WRITE_WMEM)
    lo, hi = min(contents), max(contents)
    answers = card.exchange(frames + [read_frame(lo, hi - lo + 1)])
    dec = AnswerDecoder()
    for a in answers:
        dec.push(a)
    back = dict(dec.rows)
    for number, row in contents.items():
        assert back[number] == row


def test_xmem_dma(card):
    """Rows written to XMEM as sent (LIL or raw) reach WMEM through the DMA and the LIL decoder."""
    rng = random.Random(5)
    rows = [random_row(rng, 49), random_row(rng, 204)]
    card.exchange(encode_rows(0, rows, CMD_WRITE_XMEM) + [dma_frame(0, 2, 2), read_frame(2, 2)])


def test_pieces_across_frames_with_other_slots(card):
    """A raw row cut into three pieces, with LIL slots before and after it in the same frames."""
    rng = random.Random(7)
    raw = random_row(rng, 256)
    lil1, lil2 = random_row(rng, 10), random_row(rng, 30)
    s1 = [make_tag(KIND_LIL, 10), 0] + lil_payload(lil1)
    s2 = [make_tag(KIND_RAW, 100, 0), 1] + raw[:100]
    s3 = [make_tag(KIND_RAW, 100, 100), 1] + raw[100:200]
    s4 = [make_tag(KIND_RAW, 56, 200), 1] + raw[200:]
    s5 = [make_tag(KIND_LIL, 30), 3] + lil_payload(lil2)
    frames = [frame(CMD_WRITE_WMEM, s1 + s2, 2), frame(CMD_WRITE_WMEM, s3, 1), frame(CMD_WRITE_WMEM, s4 + s5, 2)]
    assert card.delta(frames) == {"frames_ok": 3, "slots_stored": 5}
    card.exchange([read_frame(0, 4)])
    assert card.model.wmem[1] == raw and card.model.wmem[0] == lil1 and card.model.wmem[3] == lil2


def _bad_frames():
    """(name, frames, expected counter deltas): each frame breaks exactly one rule."""
    rng = random.Random(9)
    lil = random_row(rng, 5)
    good_lil = [make_tag(KIND_LIL, 5), 2] + lil_payload(lil)
    W = lambda slots, n, **kw: frame(CMD_WRITE_WMEM, slots, n, **kw)
    raw = [rng.getrandbits(32) for _ in range(ROW_WORDS)]
    p1 = [make_tag(KIND_RAW, 200, 0), 3] + raw[:200]
    entries = lil_payload(lil)

    def lil_with(lanes, pad=0):
        data = bytearray()
        for lane in lanes:
            data += bytes([lane]) + (7).to_bytes(4, "little")
        data += bytes(-len(data) % 4)
        if pad:
            data[-1] = pad
        return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]

    cases = [
        ("short frame", [W(good_lil, 1)[:-1]], "refused_length"),
        ("long frame", [W(good_lil, 1) + [0]], "refused_length"),
        ("unknown cmd", [frame(0x09, good_lil, 1)], "refused_cmd"),
        ("read bad LEN", [frame(CMD_READ_WMEM, [0, 1], 0, length=3)], "refused_cmd"),
        ("read past end", [read_frame(WROWS - 1, 2)], "refused_cmd"),
        ("dma past end", [dma_frame(XROWS, 0, 1)], "refused_cmd"),
        ("kind 11", [W([make_tag(KIND_REFUSED, 5), 2] + entries, 1)], "refused_tag"),
        ("lane width", [W([make_tag(KIND_LIL, 5, width=4), 2] + entries, 1)], "refused_tag"),
        ("reserved bit", [W([make_tag(KIND_LIL, 5) | 1 << 31, 2] + entries, 1)], "refused_tag"),
        ("raw count 0", [W([make_tag(KIND_RAW, 0, 0), 2], 1)], "refused_tag"),
        ("raw past row end", [W([make_tag(KIND_RAW, 10, 250), 2] + raw[:10], 1)], "refused_tag"),
        ("lil 103 entries", [W([make_tag(KIND_LIL, 103), 2] + [0] * 129, 1)], "refused_tag"),
        ("lil offset", [W([make_tag(KIND_LIL, 5, 3), 2] + entries, 1)], "refused_tag"),
        ("slot overruns frame", [W([make_tag(KIND_LIL, 0), 1, make_tag(KIND_RAW, 251, 0), 2] + raw[:249], 2)],
         "refused_tag"),
        ("lane repeats", [W([make_tag(KIND_LIL, 3), 2] + lil_with([4, 9, 9]), 1)], "refused_lil"),
        ("lane backwards", [W([make_tag(KIND_LIL, 3), 2] + lil_with([4, 9, 8]), 1)], "refused_lil"),
        ("non-zero padding", [W([make_tag(KIND_LIL, 3), 2] + lil_with([4, 9, 10], pad=1), 1)], "refused_lil"),
        ("ADDR wrong", [W(good_lil, 2)], "refused_header"),
        ("LEN wrong", [W(good_lil, 1, length=len(good_lil) + 1)], "refused_header"),
        ("no slot", [W([], 0)], "refused_header"),
        ("five slots", [W([make_tag(KIND_LIL, 0), 1] * 5, 5)], "refused_header"),
        ("piece without start", [W([make_tag(KIND_RAW, 10, 20), 2] + raw[:10], 1)], "refused_piece"),
        ("unfinished piece not last", [W(p1 + [make_tag(KIND_LIL, 0), 1], 2)], "refused_piece"),
    ]
    # With row 3 in progress (p1 accepted), frames that do not continue it are refused; it then completes.
    in_progress = [
        ("LIL instead of piece", [W(good_lil, 1)], "refused_piece"),
        ("wrong offset", [W([make_tag(KIND_RAW, 56, 199), 3] + raw[199:255], 1)], "refused_piece"),
        ("wrong row", [W([make_tag(KIND_RAW, 56, 200), 2] + raw[200:], 1)], "refused_piece"),
        ("read while in progress", [read_frame(0, 1)], "refused_piece"),
        ("other memory", [frame(CMD_WRITE_XMEM, [make_tag(KIND_RAW, 56, 200), 1] + raw[200:], 1)],
         "refused_piece"),
    ]
    finish = W([make_tag(KIND_RAW, 56, 200), 3] + raw[200:], 1)
    return cases, W(p1, 1), in_progress, finish, raw


def test_every_refusal_rule(card):
    """Each bad frame increments exactly its reason's counter and stores nothing (the model, which
    stores nothing either, must still agree on every row read back at the end)."""
    cases, start, in_progress, finish, raw = _bad_frames()
    card.exchange(encode_rows(0, [[0] * ROW_LANES] * 4))     # known contents of the rows the cases touch
    for name, frames, counter in cases:
        assert card.delta(frames) == {counter: 1}, name
    assert card.delta([start]) == {"frames_ok": 1, "slots_stored": 1}
    for name, frames, counter in in_progress:
        assert card.delta(frames) == {counter: 1}, name
    assert card.delta([finish]) == {"frames_ok": 1, "slots_stored": 1}
    card.exchange([read_frame(0, 4)])
    assert card.model.wmem[3] == raw and card.model.wmem[2] == [0] * ROW_LANES


def test_row_past_end_refuses_only_its_slot(card):
    rng = random.Random(13)
    rows = [random_row(rng, 3), random_row(rng, 7), random_row(rng, 0)]
    frames = encode_rows(WROWS - 2, rows)          # the third row is past the end
    assert len(frames) == 1
    assert card.delta(frames) == {"frames_ok": 1, "slots_stored": 2, "slots_refused_row": 1}
    card.exchange([read_frame(WROWS - 2, 2)])


@pytest.mark.extended
def test_api_exceptions():
    """The API maps the card's refusals to exceptions and reads back what it wrote."""
    link = MigenLink(SparsrReceiver(WROWS, XROWS, with_csr=False), seed=3, valid_prob=0.9, ready_prob=0.9)
    try:
        api = Sparsr(link, WROWS, XROWS)
        rng = random.Random(17)
        rows = [random_row(rng, n) for n in (102, 256, 20, 103)]
        api.write_wmem(0, rows)
        assert api.read_wmem(1, 3) == rows[1:]
        with pytest.raises(RowRefused):
            api.write_wmem(WROWS - 1, rows[2:])
        with pytest.raises(FrameRefused) as e:
            api._exchange([frame(CMD_WRITE_WMEM, [make_tag(KIND_RAW, 3, 7), 0, 1, 2, 3], 1)])
        assert e.value.reasons == {"piece": 1}
        assert api.read_wmem(WROWS - 1, 1) == rows[2:3]
    finally:
        link.close()


# The parser alone ---------------------------------------------------------------------------------------

VERDICTS = [c for c in COUNTERS if c[0] != "slots_stored"]      # what the parser decides


class ParserAlone(LiteXModule):
    """SparsrParser with its FrameBanks and no executor: a bank is released the cycle after it was
    accepted. Counts the parser's verdicts as the receiver does (VERDICTS)."""
    def __init__(self):
        self.banks = banks = FrameBanks(row_bits=(WROWS - 1).bit_length())
        self.parser = parser = SparsrParser(banks, WROWS, XROWS)
        self.sink, self.source = parser.sink, stream.Endpoint(WORD_LAYOUT)
        self.idle = Signal()
        self.comb += [banks.release.eq(banks.pending), self.idle.eq(parser.idle & banks.empty)]
        add_counters(self, VERDICTS, {
            "frames_ok": parser.accept,
            **{"refused_" + n: parser.refuse & (parser.reason == code) for code, n in REASONS.items()},
            "slots_refused_row": Mux(parser.accept, parser.rows_refused, 0),
        })


def test_parser_alone_gives_the_reference_verdicts():
    """Every frame of the refusal cases, a raw row in progress with the frames it refuses, rows past the
    end of WMEM and command frames: after each frame, the parser's verdict counters equal the model's."""
    cases, start, in_progress, finish, _ = _bad_frames()
    rng = random.Random(19)
    frames = encode_rows(WROWS - 2, [random_row(rng, n) for n in (3, 7, 0)])            # one row past the end
    frames += [f for _, fs, _ in cases for f in fs] + [start] + [f for _, fs, _ in in_progress for f in fs]
    frames += [finish, read_frame(0, 2), dma_frame(0, 1, 2)] + encode_rows(0, [random_row(rng, 204)])
    dut = ParserAlone()
    link = MigenLink(dut, seed=21, valid_prob=0.8)
    model = CardModel(WROWS, XROWS)
    names = [n for n, _ in VERDICTS]
    try:
        for f in frames:
            link.send_frame(f)
            model.receive(f)
            got = dict(zip(names, link.peek([dut.counters[n] for n in names])))
            assert got == {n: model.counters[n] for n in names}, f[:3]
    finally:
        link.close()
    assert model.counters["slots_refused_row"] == 1 and model.counters["refused_piece"] == 7

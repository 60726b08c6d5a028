"""Host encoder/decoder against the reference card model (pure Python, many examples)."""
import random

from hypothesis import given, settings, strategies as st

from cores.sparsr.common import (FRAME_WORDS, MAX_SLOTS, PAYLOAD_WORDS, CMD_WRITE_XMEM,
                                 TAG, KIND_END)
from software.sparsr.frames import encode_rows, read_frame, dma_frame, AnswerDecoder, answer_frames_needed
from software.sparsr.reference import CardModel
from software.sparsr.rows import random_row

R = 16


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.lists(st.sampled_from((0, 1, 48, 49, 102, 103, 204, 256)), min_size=1, max_size=R),
       st.integers(0, 2**32 - 1), st.booleans())
def test_encode_store_read_decode(densities, seed, via_xmem):
    rng = random.Random(seed)
    rows = [random_row(rng, n) for n in densities]
    first = rng.randrange(R - len(rows) + 1)
    card = CardModel(R, R)
    frames = encode_rows(first, rows, CMD_WRITE_XMEM) if via_xmem else encode_rows(first, rows)
    for f in frames:
        assert len(f) == FRAME_WORDS and 1 <= f[2] <= MAX_SLOTS and f[1] <= PAYLOAD_WORDS
        assert card.receive(f) == []
    if via_xmem:
        assert card.receive(dma_frame(first, first, len(rows))) == []
    assert card.counters["frames_ok"] == len(frames) + via_xmem
    assert sum(v for k, v in card.counters.items() if k.startswith("refused")) == 0
    answers = card.receive(read_frame(first, len(rows)))
    assert len(answers) == answer_frames_needed(len(rows))
    dec = AnswerDecoder()
    for a in answers:
        dec.push(a)
        assert TAG.get(a[3], "kind") != KIND_END
    assert dec.rows == [(first + i, r) for i, r in enumerate(rows)]

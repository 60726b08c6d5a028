"""Sparsr frames on the host: encode rows into write frames, build command frames, decode answers.

A row is a list of ROW_LANES 32-bit lane values. `choose_kind` applies the raw escape: LIL when the row has
at most LIL_MAX_ENTRIES non-zero lanes and its LIL payload is shorter than the raw row, raw otherwise.
`encode_rows` packs slots into frames in order: up to MAX_SLOTS slots and PAYLOAD_WORDS payload words a
frame; a raw row is cut into pieces, a piece that leaves its row unfinished ends its frame and the next
frame opens with the next piece.
"""
from cores.sparsr.common import (
    FRAME_WORDS, HEADER_WORDS, PAYLOAD_WORDS, MAX_SLOTS, SLOT_HEADER_WORDS, ROW_LANES, ROW_WORDS, WORD_MASK,
    KIND_END, KIND_RAW, KIND_LIL, LIL_MAX_ENTRIES, CMD_READ_WMEM, CMD_DMA_XMEM_WMEM,
    CMD_STATUS, CMD_ANSWER_ROWS, CMD_ANSWER_STATUS, WRITE_CMDS, STATUS_COUNTERS, WIRE_VERSION, TAG, make_tag,
    lil_words,
)


class AnswerError(ValueError):
    """An answer frame from the card that does not follow the format."""


def check_row(row):
    if len(row) != ROW_LANES or any(not 0 <= v <= WORD_MASK for v in row):
        raise ValueError(f"a row is {ROW_LANES} lane values of 32 bits")


def choose_kind(row):
    n = sum(1 for v in row if v)
    return KIND_LIL if n <= LIL_MAX_ENTRIES and lil_words(n) < ROW_WORDS else KIND_RAW


def lil_payload(row):
    """The payload words of a row's LIL slot: (lane byte, 32-bit value) entries, zero-padded to a word."""
    data = bytearray()
    for lane, v in enumerate(row):
        if v:
            data.append(lane)
            data += v.to_bytes(4, "little")
    data += bytes(-len(data) % 4)
    return [int.from_bytes(data[i:i + 4], "little") for i in range(0, len(data), 4)]


def frame(cmd, payload, n_slots=0, length=None):
    """One 256-word frame: header (CMD, LEN, ADDR) then payload, zero-padded."""
    if len(payload) > PAYLOAD_WORDS:
        raise ValueError("payload longer than a frame")
    length = len(payload) if length is None else length
    return [cmd, length, n_slots] + list(payload) + [0] * (PAYLOAD_WORDS - len(payload))


def row_slots(row_number, row, allow_lil=True):
    """One row before packing: ("lil", slot words) or ("raw", row number, row words)."""
    check_row(row)
    if allow_lil and choose_kind(row) == KIND_LIL:
        payload = lil_payload(row)
        n = sum(1 for v in row if v)
        return ("lil", [make_tag(KIND_LIL, n), row_number] + payload)
    return ("raw", row_number, list(row))


def encode_rows(first_row, rows, cmd=WRITE_CMDS[0], allow_lil=True):
    """Write frames storing `rows` at first_row, first_row+1, ... in memory `cmd` (write WMEM or XMEM).
    allow_lil=False sends every row raw (the baseline the benchmark compares against)."""
    if cmd not in WRITE_CMDS:
        raise ValueError(f"cmd must be one of {WRITE_CMDS}")
    frames, slots, used = [], [], 0

    def flush():
        nonlocal slots, used
        if slots:
            frames.append(frame(cmd, [w for s in slots for w in s], len(slots)))
        slots, used = [], 0

    for i, row in enumerate(rows):
        item = row_slots(first_row + i, row, allow_lil)
        if item[0] == "lil":
            words = item[1]
            if len(slots) == MAX_SLOTS or used + len(words) > PAYLOAD_WORDS:
                flush()
            slots.append(words)
            used += len(words)
            continue
        _, number, data = item
        offset = 0
        while offset < ROW_WORDS:
            if len(slots) == MAX_SLOTS or PAYLOAD_WORDS - used < SLOT_HEADER_WORDS + 1:
                flush()
            count = min(PAYLOAD_WORDS - used - SLOT_HEADER_WORDS, ROW_WORDS - offset)
            slots.append([make_tag(KIND_RAW, count, offset), number] + data[offset:offset + count])
            used += SLOT_HEADER_WORDS + count
            offset += count
            if offset < ROW_WORDS:
                flush()          # an unfinished piece is the last slot of its frame
    flush()
    return frames


def stored_words(frames, cmd, n_rows):
    """Payload words that the write frames of memory `cmd` among `frames` (valid ones) store: those of the
    slots whose row is below n_rows (the others are dropped)."""
    total = 0
    for f in frames:
        if f[0] != cmd:
            continue
        pos = HEADER_WORDS
        while pos < FRAME_WORDS and TAG.get(f[pos], "kind") != KIND_END:
            kind, count = TAG.get(f[pos], "kind"), TAG.get(f[pos], "count")
            n = count if kind == KIND_RAW else lil_words(count)
            total += n if f[pos + 1] < n_rows else 0
            pos += SLOT_HEADER_WORDS + n
    return total


def read_frame(first_row, n_rows):
    return frame(CMD_READ_WMEM, [first_row, n_rows])


def dma_frame(xmem_row, wmem_row, n_rows):
    return frame(CMD_DMA_XMEM_WMEM, [xmem_row, wmem_row, n_rows])


def status_frame():
    return frame(CMD_STATUS, [])


def answer_frames_needed(n_rows):
    """How many answer frames the card sends for a read of n_rows (greedy packing of raw pieces)."""
    frames, pos, total = 0, 0, n_rows * ROW_WORDS
    while pos < total:
        frames += 1
        space = PAYLOAD_WORDS
        while pos < total and space >= SLOT_HEADER_WORDS + 1:
            piece = min(space - SLOT_HEADER_WORDS, ROW_WORDS - pos % ROW_WORDS)
            pos += piece
            space -= SLOT_HEADER_WORDS + piece
            if pos % ROW_WORDS:
                break
    return frames


class AnswerDecoder:
    """Rebuilds rows from answer frames (raw slots only, pieces contiguous); `rows` holds (row, words)."""
    def __init__(self):
        self.rows = []
        self._row, self._words = None, []

    def push(self, words):
        if len(words) != FRAME_WORDS or words[0] != CMD_ANSWER_ROWS:
            raise AnswerError(f"not a rows answer frame: {words[:3]}")
        pos, n_slots = HEADER_WORDS, 0
        while pos < FRAME_WORDS:
            tag = words[pos]
            kind = TAG.get(tag, "kind")
            if kind == KIND_END:
                break
            if kind != KIND_RAW or pos + SLOT_HEADER_WORDS > FRAME_WORDS:
                raise AnswerError(f"answer slot at word {pos} is not raw")
            count, offset, number = TAG.get(tag, "count"), TAG.get(tag, "offset"), words[pos + 1]
            if offset != len(self._words) or (self._row is not None and number != self._row):
                raise AnswerError(f"answer piece row {number} offset {offset} does not continue the row")
            self._row = number
            self._words += words[pos + 2:pos + 2 + count]
            pos += SLOT_HEADER_WORDS + count
            n_slots += 1
            if len(self._words) == ROW_WORDS:
                self.rows.append((self._row, self._words))
                self._row, self._words = None, []
        if words[1] != pos - HEADER_WORDS or words[2] != n_slots:
            raise AnswerError(f"answer header LEN={words[1]} ADDR={words[2]} disagrees with its slots")
        return self


def parse_status(words):
    if len(words) != FRAME_WORDS or words[0] != CMD_ANSWER_STATUS or words[1] != len(STATUS_COUNTERS):
        raise AnswerError(f"not a status answer frame: {words[:3]}")
    if words[2] != WIRE_VERSION:
        raise AnswerError(f"the card speaks wire protocol version {words[2]}; this host speaks {WIRE_VERSION}")
    return dict(zip(STATUS_COUNTERS, words[HEADER_WORDS:HEADER_WORDS + len(STATUS_COUNTERS)]))

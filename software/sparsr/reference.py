"""Reference model of the Sparsr card, written from the spec: what a stream of frames stores and answers.

`CardModel.receive(words)` takes one frame as delimited on the wire (any length) and returns the answer
frames it causes. It keeps WMEM, XMEM, the raw row in progress and the counters. Refusal reasons follow
the order in which a receiver meets the words: the first rule broken, word by word.
"""
from cores.sparsr.common import (
    FRAME_WORDS, HEADER_WORDS, PAYLOAD_WORDS, SLOT_HEADER_WORDS, MAX_SLOTS, ROW_WORDS, ROW_LANES,
    KIND_END, KIND_RAW, KIND_LIL, LANE_WIDTH_CODE, LIL_MAX_ENTRIES, LIL_ENTRY_BYTES, TAG, CMD_WRITE_WMEM,
    CMD_WRITE_XMEM, CMD_READ_WMEM, CMD_DMA_XMEM_WMEM, CMD_STATUS, CMD_ANSWER_ROWS, CMD_ANSWER_STATUS, CMD_PARAMS,
    STATUS_COUNTERS, WIRE_VERSION, REASONS, REASON_LENGTH, REASON_CMD, REASON_TAG, REASON_LIL, REASON_PIECE,
    REASON_HEADER,
)


class _Refuse(Exception):
    def __init__(self, reason):
        self.reason = reason


def _bytes(words):
    return b"".join(w.to_bytes(4, "little") for w in words)


class CardModel:
    def __init__(self, wmem_rows, xmem_rows):
        self.wmem_rows, self.xmem_rows = wmem_rows, xmem_rows
        self.wmem = [[0] * ROW_LANES for _ in range(wmem_rows)]
        self.xmem = [("lil", []) for _ in range(xmem_rows)]       # as sent: ("lil", entries) / ("raw", words)
        self.counters = dict.fromkeys(STATUS_COUNTERS, 0)
        self.pending = None        # (cmd, row, next offset, words so far) of a raw row in progress

    # Validation -----------------------------------------------------------------------------------
    def _parse_slots(self, words, cmd):
        """The slots of a write frame, or _Refuse. Each slot: dict(kind, row, offset, count, data)."""
        pending = self.pending
        slots, pos = [], HEADER_WORDS
        while True:
            if pos == FRAME_WORDS:
                break
            tag = words[pos]
            f = TAG.unpack(tag)
            kind = f["kind"]
            if kind == KIND_END:
                break
            count, offset = f["count"], f["offset"]
            n_words = (count * LIL_ENTRY_BYTES + 3) // 4 if kind == KIND_LIL else count
            bad = (kind not in (KIND_RAW, KIND_LIL) or f["width"] != LANE_WIDTH_CODE
                   or tag & TAG.reserved_mask() or pos + SLOT_HEADER_WORDS + n_words > FRAME_WORDS
                   or (kind == KIND_RAW and (count == 0 or offset + count > ROW_WORDS))
                   or (kind == KIND_LIL and (count > LIL_MAX_ENTRIES or offset != 0)))
            if bad:
                raise _Refuse(REASON_TAG)
            if len(slots) == MAX_SLOTS:
                raise _Refuse(REASON_HEADER)
            if pending is not None:
                if slots or kind != KIND_RAW or offset != pending[2]:
                    raise _Refuse(REASON_PIECE)
            elif kind == KIND_RAW and offset != 0:
                raise _Refuse(REASON_PIECE)
            row = words[pos + 1]
            if pending is not None and row != pending[1]:
                raise _Refuse(REASON_PIECE)
            data = words[pos + 2:pos + 2 + n_words]
            slot = dict(kind=kind, row=row, offset=offset, count=count, data=data)
            if kind == KIND_LIL:
                raw = _bytes(data)
                lanes = [raw[LIL_ENTRY_BYTES * i] for i in range(count)]
                if any(b >= a for a, b in zip(lanes[1:], lanes)) or any(raw[LIL_ENTRY_BYTES * count:]):
                    raise _Refuse(REASON_LIL)
                slot["entries"] = [(raw[5 * i], int.from_bytes(raw[5 * i + 1:5 * i + 5], "little"))
                                   for i in range(count)]
            else:
                done = offset + count == ROW_WORDS
                pending = None if done else (cmd, row, offset + count)
            slots.append(slot)
            pos += SLOT_HEADER_WORDS + n_words
        if len(slots) == 0 or words[2] != len(slots) or words[1] != pos - HEADER_WORDS:
            raise _Refuse(REASON_HEADER)
        return slots

    def _check(self, words):
        cmd = words[0]
        if cmd not in (CMD_WRITE_WMEM, CMD_WRITE_XMEM, CMD_READ_WMEM, CMD_DMA_XMEM_WMEM, CMD_STATUS):
            raise _Refuse(REASON_CMD)
        if self.pending is not None and cmd not in (self.pending[0], CMD_STATUS):
            raise _Refuse(REASON_PIECE)
        if cmd in (CMD_WRITE_WMEM, CMD_WRITE_XMEM):
            return self._parse_slots(words, cmd)
        if words[1] != CMD_PARAMS[cmd] or words[2] != 0:
            raise _Refuse(REASON_CMD)
        p = words[HEADER_WORDS:HEADER_WORDS + 3]
        R, X = self.wmem_rows, self.xmem_rows
        ok = {CMD_READ_WMEM: p[0] < R and p[1] and p[0] + p[1] <= R,
              CMD_DMA_XMEM_WMEM: p[0] < X and p[1] < R and p[2] and p[0] + p[2] <= X and p[1] + p[2] <= R,
              CMD_STATUS: True}[cmd]
        if not ok:
            raise _Refuse(REASON_CMD)
        return p

    # Effects --------------------------------------------------------------------------------------
    def receive(self, words):
        c = self.counters
        try:
            if len(words) != FRAME_WORDS:
                raise _Refuse(REASON_LENGTH)
            checked = self._check(words)
        except _Refuse as e:
            c["refused_" + REASONS[e.reason]] += 1
            return []
        c["frames_ok"] += 1
        cmd = words[0]
        if cmd in (CMD_WRITE_WMEM, CMD_WRITE_XMEM):
            self._store(cmd, checked)
            return []
        if cmd == CMD_READ_WMEM:
            return self._answer_rows(checked[0], checked[1])
        if cmd == CMD_DMA_XMEM_WMEM:
            for k in range(checked[2]):
                form, data = self.xmem[checked[0] + k]
                self.wmem[checked[1] + k] = list(data) if form == "raw" else self._lil_row(data)
            return []
        body = [c[n] for n in STATUS_COUNTERS]
        return [[CMD_ANSWER_STATUS, len(body), WIRE_VERSION] + body + [0] * (PAYLOAD_WORDS - len(body))]

    @staticmethod
    def _lil_row(entries):
        row = [0] * ROW_LANES
        for lane, value in entries:
            row[lane] = value
        return row

    def _store(self, cmd, slots):
        c = self.counters
        limit = self.wmem_rows if cmd == CMD_WRITE_WMEM else self.xmem_rows
        mem = self.wmem if cmd == CMD_WRITE_WMEM else self.xmem
        for s in slots:
            in_range = s["row"] < limit
            c["slots_stored" if in_range else "slots_refused_row"] += 1
            if s["kind"] == KIND_LIL:
                if in_range:
                    mem[s["row"]] = (self._lil_row(s["entries"]) if cmd == CMD_WRITE_WMEM
                                     else ("lil", s["entries"]))
                continue
            so_far = [] if s["offset"] == 0 else self.pending[3]
            so_far = so_far + s["data"]
            if len(so_far) == ROW_WORDS:
                self.pending = None
                if in_range:
                    mem[s["row"]] = so_far if cmd == CMD_WRITE_WMEM else ("raw", so_far)
            else:
                self.pending = (cmd, s["row"], len(so_far), so_far)

    def _answer_rows(self, first, n):
        stream = [(first + i, k, self.wmem[first + i][k]) for i in range(n) for k in range(ROW_WORDS)]
        frames, pos = [], 0
        while pos < len(stream):
            payload, n_slots = [], 0
            while pos < len(stream) and PAYLOAD_WORDS - len(payload) >= SLOT_HEADER_WORDS + 1:
                row, offset, _ = stream[pos]
                count = min(PAYLOAD_WORDS - len(payload) - SLOT_HEADER_WORDS, ROW_WORDS - offset)
                tag = TAG.pack(kind=KIND_RAW, width=LANE_WIDTH_CODE, count=count, offset=offset)
                payload += [tag, row] + [v for _, _, v in stream[pos:pos + count]]
                pos += count
                n_slots += 1
                if offset + count < ROW_WORDS:
                    break
            frames.append([CMD_ANSWER_ROWS, len(payload), n_slots] + payload
                          + [0] * (PAYLOAD_WORDS - len(payload)))
        return frames

"""Sparsr host API in the spirit of sparsr.h: write rows at a row number, read them back, DMA, status.

`Sparsr(link, wmem_rows, xmem_rows)` talks to the card through any `link` with `send_frame(words)` and
`recv_frame() -> words` (see `links.py`). Every call sends its frames followed by a STATUS frame and reads
answers up to the status answer, so refusals are seen at once and mapped to exceptions:
`FrameRefused` (a whole frame dropped; `.reasons` maps reason name -> frames) and `RowRefused`
(slots whose row number is past the end of the memory).
"""
from cores.sparsr.common import (CMD_WRITE_WMEM, CMD_WRITE_XMEM, CMD_ANSWER_ROWS, CMD_ANSWER_STATUS,
                                 REASONS)
from software.sparsr.frames import (encode_rows, read_frame, dma_frame, status_frame, parse_status,
                                    AnswerDecoder, AnswerError, check_row)


class SparsrError(RuntimeError):
    """The card refused something (see the subclasses)."""


class FrameRefused(SparsrError):
    def __init__(self, reasons):
        self.reasons = reasons
        super().__init__("card refused frames: " + ", ".join(f"{n} x{k}" for n, k in reasons.items()))


class RowRefused(SparsrError):
    def __init__(self, n):
        self.n = n
        super().__init__(f"card refused {n} slot(s): row number past the end of the memory")


class Sparsr:
    def __init__(self, link, wmem_rows, xmem_rows):
        self.link, self.wmem_rows, self.xmem_rows = link, wmem_rows, xmem_rows
        self.frames_sent = 0
        self.last_status = None

    def _exchange(self, frames):
        """Send frames + STATUS; returns the rows answered. Raises on any refusal counted meanwhile."""
        if self.last_status is None:
            self.link.send_frame(status_frame())
            self.last_status = parse_status(self.link.recv_frame())
        for f in frames + [status_frame()]:
            self.link.send_frame(f)
        self.frames_sent += len(frames) + 1
        decoder = AnswerDecoder()
        while True:
            answer = self.link.recv_frame()
            if answer[0] == CMD_ANSWER_STATUS:
                break
            if answer[0] != CMD_ANSWER_ROWS:
                raise AnswerError(f"unexpected answer CMD {answer[0]:#x}")
            decoder.push(answer)
        before, self.last_status = self.last_status, parse_status(answer)
        delta = {k: self.last_status[k] - before[k] for k in before}
        reasons = {n: delta["refused_" + n] for n in REASONS.values() if delta["refused_" + n]}
        if reasons:
            raise FrameRefused(reasons)
        if delta["slots_refused_row"]:
            raise RowRefused(delta["slots_refused_row"])
        return decoder.rows

    def status(self):
        self._exchange([])
        return dict(self.last_status)

    def write_wmem(self, row, rows):
        """Store rows (lists of 256 lane values) at WMEM rows row, row+1, ..."""
        for r in rows:
            check_row(r)
        self._exchange(encode_rows(row, rows, CMD_WRITE_WMEM))

    def write_xmem(self, row, rows):
        """Store rows in XMEM as sent (LIL form or raw)."""
        for r in rows:
            check_row(r)
        self._exchange(encode_rows(row, rows, CMD_WRITE_XMEM))

    def read_wmem(self, row, n):
        """Rows row .. row+n-1 of WMEM, as lists of 256 lane values."""
        rows = self._exchange([read_frame(row, n)])
        if [r for r, _ in rows] != list(range(row, row + n)):
            raise AnswerError(f"read of rows {row}..{row + n - 1} answered rows {[r for r, _ in rows]}")
        return [words for _, words in rows]

    def dma_xmem_to_wmem(self, xmem_row, wmem_row, n):
        """Copy n XMEM rows into WMEM; LIL rows go through the card's LIL decoder."""
        self._exchange([dma_frame(xmem_row, wmem_row, n)])

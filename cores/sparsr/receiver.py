"""Sparsr card-side receiver: validates whole 256-word frames, then stores their rows in WMEM or XMEM.

Structure (one word per cycle in, see docs/sparsr.md), one submodule each (their modules in this package):

* `FrameBanks` (memories): two 256-word frame buffers (ping-pong), each with what the parser found in it (a
  job and a slot table); the parser fills one while the executor works on the other.
* `SparsrParser` (parser): every accepted input word is written into the free frame buffer and checked on the
  fly (header, tags, LIL lane order and padding, raw-piece continuity, LEN/ADDR against the slots). At the
  frame's last word it either hands the buffer to the executor with a slot table, or drops the whole frame and
  names the reason.
* `SparsrExecutor` (executor): commits the buffered frame (or runs a read/DMA/status command) while the parser
  fills the other buffer. A committed slot costs at most its own length in cycles (slot header words pay for
  the set-up), so a full frame commits in at most 255 cycles and input never stalls on writes. Answers leave
  through `AnswerPath`.
* `WMEM`, `XMEM` (memories; XMEM in DRAM: `DRAMXMEM`, xmem_dram): rows are stored in physical row slots behind
  a row map with one spare slot. A raw row's pieces go into the spare slot and the map is switched when the
  last piece arrives, so a row changes only when complete, at no copy cost. WMEM keeps a 256-bit lane mask per
  physical row: a LIL row writes only its listed lanes and its mask (lanes not listed read as 0), so clearing
  a row costs no cycles. XMEM keeps rows as sent: the LIL payload words verbatim plus a (kind, count) form
  word, or the raw words.
* The only `LILDecoder` sits on the path into WMEM; the XMEM->WMEM DMA feeds LIL rows through it too.
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counters, add_counter_csrs
from cores.lib.logic import index_bits
from cores.sparsr.common import (
    WORD_LAYOUT, REASONS, REASON_BITS, COUNTERS, STATUS_COUNTERS, MAX_ROWS, XMEM_BRAM, XMEM_DRAM, XMEM_KINDS,
    DRAM_COUNTERS,
)
from cores.sparsr.memories import FrameBanks, WMEM, XMEM
from cores.sparsr.parser import SparsrParser
from cores.sparsr.executor import SparsrExecutor
from cores.sparsr.xmem_dram import DRAMXMEM


class SparsrReceiver(LiteXModule):
    """Card-side receiver of the Sparsr wire format, with WMEM, XMEM and the XMEM->WMEM DMA.

    Parameters: `wmem_rows`, `xmem_rows` (rows of 1024 bytes each memory holds, 1..MAX_ROWS), `fifo_depth`
    of the answer FIFO, `with_csr` (one CSRStatus per counter of `common.COUNTERS`, cores.lib.counters; with
    XMEM in DRAM also `common.DRAM_COUNTERS`), `xmem`: where XMEM keeps its rows, XMEM_BRAM (block RAM) or
    XMEM_DRAM (DRAM through `dram_port`, a LiteDRAM native port (crossbar.get_port()), from byte `xmem_base`;
    cores.sparsr.xmem_dram).

    `sink`: 32-bit words, `last` on the 256th word of each frame (a frame of any other length is refused,
    reason LENGTH). `source`: answer frames (rows read, status), same framing. `counters`: name -> Signal.
    Throughput: one input word per cycle sustained for write frames (a frame commits in at most 255
    cycles while the next one streams in); a read or DMA command holds the input only while it runs. With
    XMEM in DRAM, write frames into XMEM take words as fast as the DRAM takes them once its write FIFO is
    full, and a DMA row costs its fetch from DRAM (docs/sparsr.md, "XMEM in DRAM").
    `idle`: nothing received or in progress (with XMEM in DRAM: no XMEM write left for the DRAM). Latency: a
    frame's rows are visible at most 262 cycles after its last word.
    """
    def __init__(self, wmem_rows=32, xmem_rows=16, fifo_depth=8, with_csr=False, xmem=XMEM_BRAM, dram_port=None,
                 xmem_base=0):
        for name, v in (("wmem_rows", wmem_rows), ("xmem_rows", xmem_rows)):
            if not isinstance(v, int) or not 1 <= v <= MAX_ROWS:
                raise ValueError(f"{name} must be an integer in 1..{MAX_ROWS}, got {v!r}")
        if not isinstance(fifo_depth, int) or fifo_depth < 4:
            raise ValueError(f"fifo_depth must be an integer >= 4, got {fifo_depth!r}")
        if xmem not in XMEM_KINDS:
            raise ValueError(f"xmem must be one of {XMEM_KINDS}, got {xmem!r}")
        if (xmem == XMEM_DRAM) != (dram_port is not None):
            raise ValueError(f"xmem={XMEM_DRAM!r} needs a dram_port (a LiteDRAM port), and xmem={XMEM_BRAM!r} none")
        self.wmem_rows, self.xmem_rows = wmem_rows, xmem_rows
        self.sink = stream.Endpoint(WORD_LAYOUT)
        self.source = stream.Endpoint(WORD_LAYOUT)
        self.idle = Signal()

        # # #

        row_bits = index_bits(max(wmem_rows, xmem_rows))
        self.wmem = wmem = WMEM(wmem_rows, row_bits)
        if dram_port is None:
            self.xmem = xmem = XMEM(xmem_rows, row_bits)
        else:
            self.xmem = xmem = DRAMXMEM(xmem_rows, row_bits, dram_port, xmem_base)
        self.banks = banks = FrameBanks(row_bits)
        self.parser = parser = SparsrParser(banks, wmem_rows, xmem_rows)
        self.executor = executor = SparsrExecutor(banks, wmem, xmem, fifo_depth)
        # A status answer gives the counters as its frame left them: no later frame is taken (and so
        # accepted, refused or counted) until the answer is out.
        self.comb += parser.status_sent.eq(executor.status_sent)
        # The counters add their events one cycle late, from registers; the verdict's are registered before
        # (vq_*: its logic reaches neither the increments' registers nor the counters); `counting`: a verdict
        # still to be counted (two cycles).
        vq_ok, vq_no = Signal(name="vq_ok"), Signal(name="vq_no")
        vq_reason, vq_rows = Signal(REASON_BITS, name="vq_reason"), Signal(len(parser.rows_refused), name="vq_rows")
        self.sync += [
            vq_ok.eq(parser.accept), vq_no.eq(parser.refuse), vq_reason.eq(parser.reason),
            vq_rows.eq(Mux(parser.accept, parser.rows_refused, 0)),
        ]
        counting = Signal()
        self.sync += counting.eq(vq_ok | vq_no)
        self.comb += [
            self.sink.connect(parser.sink),
            executor.source.connect(self.source),
            self.idle.eq(parser.idle & ~vq_ok & ~vq_no & ~counting & banks.empty &
                         (xmem.idle if xmem.in_dram else 1)),
        ]
        add_counters(self, COUNTERS, {
            "frames_ok": vq_ok,
            **{"refused_" + name: vq_no & (vq_reason == code) for code, name in REASONS.items()},
            "slots_stored": executor.slot_stored,
            "slots_refused_row": vq_rows,
        }, register=True)
        self.comb += [s.eq(self.counters[n]) for s, n in zip(executor.status, STATUS_COUNTERS)]
        if with_csr:
            add_counter_csrs(self, COUNTERS)
            if xmem.in_dram:
                add_counter_csrs(self, DRAM_COUNTERS, xmem.counters)

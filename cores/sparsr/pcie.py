"""Sparsr over PCIe: the LitePCIe DMA streams to and from the receiver's 32-bit word streams.

The host writes frames into a DMA buffer; the DMA reader streams that buffer into the card as beats of the
DMA's data width, without frame boundaries (a PCIe DMA moves bytes). Frames are always FRAME_WORDS words,
so `SparsrDMAAdapter` cuts the word stream into frames by counting. Answer frames go back through the DMA
writer into a host buffer.
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.sparsr.common import FRAME_WORDS, WORD_BITS, WORD_LAYOUT
from cores.sparsr.receiver import SparsrReceiver

DMA_DATA_WIDTHS = (32, 64, 128, 256, 512)


class SparsrDMAAdapter(LiteXModule):
    """Width adapter between a LitePCIe DMA of `data_width` bits and the receiver's 32-bit words.

    `dma_sink` (DMA reader stream, host -> card) -> `source`: the beat's lowest word first (the DMA puts
    the host buffer's lowest address in the lowest bits), `last` on every FRAME_WORDS-th word. `sink`
    (answer words, `last` on each frame's final word) -> `dma_source` (DMA writer stream): words packed
    lowest first, `last` on the beat that ends a frame. `resync` (e.g. the DMA reader disabled): drop the
    beat being split and count the next word as a frame's first.
    Throughput: one word per cycle each way (data_width / 32 cycles per DMA beat); latency 0 (down) and
    data_width / 32 cycles (up, a beat leaves when full).
    """
    def __init__(self, data_width=64):
        if data_width not in DMA_DATA_WIDTHS:
            raise ValueError(f"data_width must be one of {DMA_DATA_WIDTHS}, got {data_width!r}")
        self.dma_sink = stream.Endpoint([("data", data_width)])
        self.source = stream.Endpoint(WORD_LAYOUT)
        self.sink = stream.Endpoint(WORD_LAYOUT)
        self.dma_source = stream.Endpoint([("data", data_width)])
        self.resync = Signal()

        # # #

        self.down = down = ResetInserter()(stream.Converter(data_width, WORD_BITS))
        self.up = up = stream.Converter(WORD_BITS, data_width)
        word = Signal(max=FRAME_WORDS)
        self.comb += [
            down.reset.eq(self.resync),
            self.dma_sink.connect(down.sink, keep={"valid", "ready", "data"}),
            down.source.connect(self.source, keep={"valid", "ready", "data"}),
            self.source.last.eq(word == FRAME_WORDS - 1),
            self.sink.connect(up.sink),
            up.source.connect(self.dma_source, keep={"valid", "ready", "data", "last"}),
        ]
        self.sync += If(self.resync,
            word.eq(0),
        ).Elif(self.source.valid & self.source.ready,
            word.eq(word + 1),
        )


class SparsrDMAPort(LiteXModule):
    """The receiver fed by a LitePCIe DMA: `dma` is a `LitePCIeDMA` (reader and writer) whose streams
    carry frames; parameters as SparsrReceiver. The receiver's counters are CSRs (`receiver_<counter>`).
    Throughput: one word per cycle in (the receiver's line rate), whatever the DMA width."""
    def __init__(self, dma, wmem_rows=16, xmem_rows=8):
        self.adapter = adapter = SparsrDMAAdapter(dma.data_width)
        self.receiver = rx = SparsrReceiver(wmem_rows=wmem_rows, xmem_rows=xmem_rows, with_csr=True)

        # # #

        self.comb += [
            dma.source.connect(adapter.dma_sink, keep={"valid", "ready", "data"}),
            adapter.resync.eq(~dma.reader.enable),
            adapter.source.connect(rx.sink),
            rx.source.connect(adapter.sink),
            adapter.dma_source.connect(dma.sink, keep={"valid", "ready", "data", "last"}),
        ]

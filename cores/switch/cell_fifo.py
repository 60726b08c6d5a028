"""FIFO of whole cells that keeps one header per cell instead of one per beat."""
from migen import If, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.rifl.common import L2_HEADER_BITS
from cores.switch.common import cell_layout


class CellFIFO(LiteXModule):
    """A FIFO of `cells` cells of `beats` beats (cell_layout(data_width) on `sink` and `source`) whose cells
    carry the same header on every beat, as the switch's network delivers them: the beats' data and `last`
    go through a FIFO of cells * beats beats, each cell's header (taken on its first beat) through a FIFO of
    cells + 1 headers (a full data FIFO holds parts of at most cells + 1 cells), popped with the cell's last
    beat (on the 128-bit switch's outputs: 48 header bits a beat fewer in LUT RAM).
    Throughput: one beat a cycle in and out. Latency: one cycle, as stream.SyncFIFO."""
    def __init__(self, data_width, cells, beats):
        if not isinstance(cells, int) or cells < 1 or not isinstance(beats, int) or beats < 1:
            raise ValueError(f"CellFIFO needs cells >= 1 and beats >= 1, got {cells!r} and {beats!r}")
        self.sink = sink = stream.Endpoint(cell_layout(data_width))
        self.source = source = stream.Endpoint(cell_layout(data_width))

        # # #

        self.beats = beats_fifo = stream.SyncFIFO([("data", data_width)], depth=cells * beats)
        self.headers = headers = stream.SyncFIFO([("header", L2_HEADER_BITS)], depth=cells + 1)
        first = Signal(reset=1)                         # the next beat in starts a cell
        self.comb += [
            beats_fifo.sink.valid.eq(sink.valid & (~first | headers.sink.ready)),
            beats_fifo.sink.data.eq(sink.data),
            beats_fifo.sink.last.eq(sink.last),
            headers.sink.valid.eq(sink.valid & first & beats_fifo.sink.ready),
            headers.sink.header.eq(sink.header),
            sink.ready.eq(beats_fifo.sink.ready & (~first | headers.sink.ready)),
            source.valid.eq(beats_fifo.source.valid),
            source.data.eq(beats_fifo.source.data),
            source.last.eq(beats_fifo.source.last),
            source.header.eq(headers.source.header),
            beats_fifo.source.ready.eq(source.ready),
            headers.source.ready.eq(source.valid & source.ready & source.last),
        ]
        self.sync += If(sink.valid & sink.ready, first.eq(sink.last))

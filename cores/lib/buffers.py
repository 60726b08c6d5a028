"""Stream buffers whose handshake outputs come straight from flip-flops."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.block_ram import BlockRAM


class SkidBuffer(LiteXModule):
    """A skid register: `sink.ready` is its empty flag (a flip-flop), so the consumer's ready reaches only that
    flag. It loads the sink's word in every cycle it is empty, so no data enable depends on the consumer
    (LiteX's `PipeReady` loads only when the consumer's ready is low, which then drives every data bit's
    enable). `source` is the sink, or the held word once one could not pass. Throughput one word per cycle,
    no latency, one word of storage."""
    def __init__(self, layout):
        self.sink = sink = stream.Endpoint(layout)
        self.source = source = stream.Endpoint(layout)

        # # #

        full = Signal()
        held = stream.Endpoint(layout)
        self.sync += [
            If(~full, held.first.eq(sink.first), held.last.eq(sink.last),
               held.payload.eq(sink.payload), held.param.eq(sink.param)),
            If(sink.valid & ~source.ready, full.eq(1)).Elif(source.ready, full.eq(0)),
        ]
        self.comb += [
            sink.ready.eq(~full),
            If(full,
                held.connect(source, omit={"valid", "ready"}), source.valid.eq(1)
            ).Else(
                sink.connect(source, omit={"ready"})
            ),
        ]


class RegisteredBuffer(LiteXModule):
    """A SkidBuffer followed by a `PipeValid`: `sink.ready` and `source.valid` (and the data) are each one
    flip-flop, so neither side's handshake logic reaches the other's. (LiteX's `Buffer(pipe_valid=True,
    pipe_ready=True)` puts the two stages the other way round, leaving a gate on `source.valid`.)
    Throughput one word per cycle, latency one cycle, two words of storage."""
    def __init__(self, layout):
        self.sink = stream.Endpoint(layout)
        self.source = stream.Endpoint(layout)

        # # #

        self.skid = SkidBuffer(layout)
        self.pipe_valid = stream.PipeValid(layout)
        self.comb += [
            self.sink.connect(self.skid.sink),
            self.skid.source.connect(self.pipe_valid.sink),
            self.pipe_valid.source.connect(self.source),
        ]


class BlockRAMFIFO(LiteXModule):
    """A stream FIFO of `depth` words in a BlockRAM whose read data reaches `source` only through a small
    LUT-RAM FIFO of `out_depth` words: `source` never comes from the block RAM's (slow) output, and
    `sink.ready` (the RAM not full) is a compare of one register. A read is issued only with a place in the
    small FIFO for it (credits), so the RAM's read pipeline never stalls. `level`: words taken from sink and
    not yet delivered (up to depth + out_depth). Throughput one word per cycle (out_depth >= 4: the credit
    loop is issue, RAM address and output registers, FIFO write, pop); latency 4 cycles. `re`: the
    BlockRAM's read enable, the clock enable of a CEInserter around the FIFO (None: none)."""
    def __init__(self, layout, depth, out_depth=4, re=None):
        if depth < 2 or out_depth < 4:
            raise ValueError(f"BlockRAMFIFO needs depth >= 2 and out_depth >= 4, got {depth}, {out_depth}")
        self.sink = sink = stream.Endpoint(layout)
        self.source = source = stream.Endpoint(layout)
        self.level = level = Signal(max=depth + out_depth + 1)

        # # #

        word = lambda ep: Cat(*[v for v in (ep.payload.raw_bits(), ep.param.raw_bits(), ep.first, ep.last) if len(v)])
        self.ram = ram = BlockRAM(len(word(sink)), depth, re)     # a read never meets a write (the pointers)
        self.ofifo = ofifo = stream.SyncFIFO(layout, out_depth)
        wp, rp = Signal(max=depth), Signal(max=depth)
        used = Signal(max=depth + 1)                          # words in the RAM
        credits = Signal(max=out_depth + 1, reset=out_depth)
        do_write, do_read, pop, v1, v2 = Signal(), Signal(), Signal(), Signal(), Signal()
        self.comb += [
            sink.ready.eq(used != depth),
            do_write.eq(sink.valid & sink.ready),
            ram.we.eq(do_write), ram.adr_w.eq(wp), ram.dat_w.eq(word(sink)),
            do_read.eq((used != 0) & (credits != 0)),
            ram.adr_r.eq(rp),
            ofifo.sink.valid.eq(v2), word(ofifo.sink).eq(ram.dat_r),
            ofifo.source.connect(source),
            pop.eq(source.valid & source.ready),
        ]
        self.sync += [
            If(do_write, wp.eq(Mux(wp == depth - 1, 0, wp + 1))),
            If(do_read, rp.eq(Mux(rp == depth - 1, 0, rp + 1))),
            # each count +1 or -1 by the late enables selecting between sums from registers
            If(do_write & ~do_read, used.eq(used + 1)).Elif(do_read & ~do_write, used.eq(used - 1)),
            v1.eq(do_read), v2.eq(v1),
            If(pop & ~do_read, credits.eq(credits + 1)).Elif(do_read & ~pop, credits.eq(credits - 1)),
            If(do_write & ~pop, level.eq(level + 1)).Elif(pop & ~do_write, level.eq(level - 1)),
        ]

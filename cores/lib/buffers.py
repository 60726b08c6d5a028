"""Stream buffers whose handshake outputs come straight from flip-flops."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream


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

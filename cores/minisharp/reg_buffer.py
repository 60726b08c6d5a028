"""Stream buffer whose `sink.ready` and `source.valid` both come straight from flip-flops."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream


class RegisteredBuffer(LiteXModule):
    """A skid register (`sink.ready` is its empty flag) followed by a `PipeValid` (`source.valid` and the data
    are flip-flops), so that neither side's handshake logic reaches the other's. The skid register loads the
    sink's word in every cycle it is empty, so its enable does not depend on the far side's ready either
    (LiteX's `PipeReady` loads only when that ready is low; its `Buffer(pipe_valid=True, pipe_ready=True)`
    also puts the two stages the other way round, leaving a gate on `source.valid`).
    Throughput one word per cycle, latency one cycle, two words of storage."""
    def __init__(self, layout):
        self.sink = sink = stream.Endpoint(layout)
        self.source = stream.Endpoint(layout)

        # # #

        self.pipe_valid = pipe_valid = stream.PipeValid(layout)
        mid = pipe_valid.sink
        full = Signal()
        skid = stream.Endpoint(layout)
        self.sync += [
            If(~full, skid.first.eq(sink.first), skid.last.eq(sink.last),
               skid.payload.eq(sink.payload), skid.param.eq(sink.param)),
            If(sink.valid & ~mid.ready, full.eq(1)).Elif(mid.ready, full.eq(0)),
        ]
        self.comb += [
            sink.ready.eq(~full),
            If(full,
                skid.connect(mid, omit={"valid", "ready"}), mid.valid.eq(1)
            ).Else(
                sink.connect(mid, omit={"ready"})
            ),
            pipe_valid.source.connect(self.source),
        ]

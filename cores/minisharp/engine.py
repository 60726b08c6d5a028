"""MiniSharp collective engine: validation (cores.minisharp.validation), payload stage
(cores.minisharp.payload) and the exact accumulator bank (cores.minisharp.accumulator)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.buffers import RegisteredBuffer
from cores.minisharp.accumulator import MSAccumulatorBank
from cores.minisharp.common import DONE_WINDOW, DROP, TIMEOUT_BITS, TIMEOUT_TICK_LOG2, descriptor_layout
from cores.minisharp.payload import MSPayloadStage, MSResultWords
from cores.minisharp.validation import MSValidation, engine_meta_layout


class MSCollectiveEngine(LiteXModule):
    """Serves the descriptors and payloads of `num_ports` ingress ports.

    Two stages that overlap, so that frames follow each other in the accumulator with no gap:
    * validation (MSValidation, one frame after the other): setups install contexts, data frames are
      checked against their context and chunk slot and queue a job (or are dropped: drop/drop_reason/
      drop_port); the completing contribution of a chunk emits its result `meta` record. 9 cycles a frame
      (5 for a setup).
    * payload (MSPayloadStage): jobs in order, one payload word (`lanes` FP32) per cycle into the slot's
      accumulators (the first contribution initialises, the completing one adds and emits the rounded sums
      on `result`).
    Throughput: one payload word per cycle, back-to-back frames (validation hides behind the previous
    frame's words when a frame has at least 9 words). Latency: descriptor to first result word: validation
    (9 cycles), the job queue and the accumulator bank's `latency`; MiniSharpCore end to end: 54 cycles
    at 1 lane, 50 with more (rounding pipelines of 18 and 14 stages).
    """
    def __init__(self, num_ports=2, lanes=1, chunk_elements=256, n_contexts=8, n_slots=4, max_ranks=64,
                 window=DONE_WINDOW, tick_log2=TIMEOUT_TICK_LOG2, partials=None, carry_limbs=None):
        partials = lanes == 1 if partials is None else partials
        for name, v in (("lanes", lanes), ("chunk_elements", chunk_elements)):
            if v < 1 or v & (v - 1):
                raise ValueError(f"{name} must be a power of two, got {v}")
        if chunk_elements < lanes:
            raise ValueError("chunk_elements must be >= lanes")
        if n_contexts < 1 or n_slots < 1:
            raise ValueError("n_contexts and n_slots must be >= 1")
        if not 1 <= max_ranks <= 256:
            raise ValueError(f"max_ranks must be in 1..256 (8-bit Rank), got {max_ranks}")
        self.desc_sinks = [stream.Endpoint(descriptor_layout) for _ in range(num_ports)]
        self.payload_sinks = [stream.Endpoint([("data", 32 * lanes)]) for _ in range(num_ports)]
        self.meta = stream.Endpoint(engine_meta_layout(num_ports))
        self.result = stream.Endpoint([("data", 32 * lanes)])
        self.drop = Signal()
        self.drop_reason = Signal(max=len(DROP))
        self.drop_port = Signal(max=max(num_ports, 2))
        self.setup_done = Signal()
        self.chunk_done = Signal()
        self.teardown_done, self.ctx_expired = Signal(), Signal()
        self.slots_expired = Signal(max=n_slots + 1)
        self.slot_timeout, self.ctx_timeout = Signal(TIMEOUT_BITS), Signal(TIMEOUT_BITS)

        # # #

        wpc = chunk_elements // lanes
        self.bank = bank = MSAccumulatorBank(lanes=lanes, depth=n_slots * wpc, max_ranks=max_ranks, out_depth=32,
                                             partials=partials, carry_limbs=carry_limbs)
        if partials:
            self.words = MSResultWords()
            self.comb += bank.source.connect(self.words.sink), self.words.source.connect(self.result)
        else:
            self.comb += bank.source.connect(self.result)
        # Registered ready and valid between the engine and the bank (timing); order is kept.
        self.bank_buf = RegisteredBuffer(bank.sink.description)
        self.comb += self.bank_buf.source.connect(bank.sink)
        self.validation = val = MSValidation(num_ports, lanes, chunk_elements, n_contexts, n_slots, max_ranks,
                                             window, tick_log2, partials)
        self.payload_stage = pay = MSPayloadStage(num_ports, lanes, wpc, n_slots, partials)
        self.comb += [
            [s.connect(d) for s, d in zip(self.desc_sinks, val.desc_sinks)],
            [s.connect(d) for s, d in zip(self.payload_sinks, pay.sinks)],
            val.job.connect(pay.jobs), val.meta.connect(self.meta), pay.source.connect(self.bank_buf.sink),
            self.drop.eq(val.drop), self.drop_reason.eq(val.drop_reason), self.drop_port.eq(val.drop_port),
            self.setup_done.eq(val.setup_done), self.chunk_done.eq(val.chunk_done),
            self.teardown_done.eq(val.teardown_done), self.ctx_expired.eq(val.ctx_expired),
            self.slots_expired.eq(val.slots_expired),
            val.slot_timeout.eq(self.slot_timeout), val.ctx_timeout.eq(self.ctx_timeout),
        ]

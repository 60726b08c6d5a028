"""MiniSharp payload stage: the validated frames' payload words into accumulator ops (MSPayloadStage), and the
accumulator bank's results as 32-bit words (MSResultWords)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.buffers import SkidBuffer
from cores.lib.logic import index_bits
from cores.minisharp.accumulator import ACC_OP_ADD, ACC_OP_ADDP, ACC_OP_PASS, acc_op_layout, acc_result_layout
from cores.minisharp.common import PARTIAL_WORDS
from cores.minisharp.validation import job_layout


class MSPayloadStage(LiteXModule):
    """Runs the jobs in order: the job's payload words, one per cycle, from its port (`sinks[port]`) to the
    accumulator ops on `source` (ADD at the job's slot, word by word; `init` and `emit` from the job), or
    drained (a dropped frame, and words past the chunk's length). The next job starts in the cycle after the
    last word of the previous one. `wpc`: words a chunk (a slot's addresses); jobs wait in a 2-entry queue.
    partials (one lane): an `exact` job's words are gathered PARTIAL_WORDS at a time into one ADDP op per
    element (element e of the chunk at address e of the slot); `xout` marks its emitted results exact; a
    `pas` job's words become PASS ops.
    """
    def __init__(self, num_ports, lanes, wpc, n_slots, partials=False):
        layout = job_layout(num_ports, n_slots)
        self.jobs = stream.Endpoint(layout)
        self.sinks = [stream.Endpoint([("data", 32 * lanes)]) for _ in range(num_ports)]
        self.source = stream.Endpoint(acc_op_layout(lanes, n_slots * wpc, partials))

        # # #

        pw, sw = index_bits(num_ports), index_bits(n_slots)
        self.queue = stream.SyncFIFO(layout, 2)
        # The stage reads the queue through a skid buffer: `load` (late, from the payload handshake) reaches
        # only its flag, not the queue's level logic and LUT RAM.
        self.job_buf = job_buf = SkidBuffer(layout)
        self.comb += self.jobs.connect(self.queue.sink), self.queue.source.connect(job_buf.sink)
        job = job_buf.source
        acc_in = self.source

        # wleft: words after this one; aleft: words still to add (the rest is discarded, as a drained frame's
        # words); `last` and `in_acc` are their registered == 0 / != 0 flags.
        # Only b_active has a reset: the rest is loaded with each job and unused while b_active is low. The
        # word index is not reset by `load` (its loads sit at the bank, far from the handshake): `first` marks
        # a job's first word, whose index is 0, and the index counts from there.
        b_active = Signal()
        b_port, b_emit, b_init = Signal(pw, reset_less=True), Signal(reset_less=True), Signal(reset_less=True)
        b_slot, wleft, aleft = Signal(sw, reset_less=True), Signal(16, reset_less=True), Signal(16, reset_less=True)
        last, in_acc = Signal(reset_less=True), Signal(reset_less=True)
        b_exact, b_xout, b_pas = Signal(reset_less=True), Signal(reset_less=True), Signal(reset_less=True)
        # exact jobs: g = word of the element (0 .. PARTIAL_WORDS-1), gather = the element's words so far
        g, eidx = Signal(max=PARTIAL_WORDS, reset_less=True), Signal(max=max(wpc, 2), reset_less=True)
        gather = Signal(32 * (PARTIAL_WORDS - 1), reset_less=True)
        first_e, elem_done = Signal(reset_less=True), Signal()
        self.comb += elem_done.eq(~b_exact | (g == PARTIAL_WORDS - 1) if partials else 1)
        widx, first = Signal(max=max(wpc, 2), reset_less=True), Signal(reset_less=True)
        # The job's port feeds a skid buffer: a port's ready comes from the skid's flag and the stage's
        # registers, never from the bank's ready.
        self.skid = skid = SkidBuffer([("data", 32 * lanes)])
        self.comb += [
            Case(b_port, {i: self.sinks[i].connect(skid.sink, omit={"valid", "ready"})
                          for i in range(num_ports)}),
            skid.sink.valid.eq(b_active & Array(s.valid for s in self.sinks)[b_port]),
            [s.ready.eq(b_active & (b_port == i) & skid.sink.ready) for i, s in enumerate(self.sinks)],
        ]
        payload = skid.source
        take, load = Signal(), Signal()
        word_addr = Mux(first, 0, widx)
        if partials:
            word_addr = Mux(b_exact, Mux(first_e, 0, eidx), word_addr)
            self.comb += acc_in.pdata.eq(Cat(payload.data, gather)), acc_in.xout.eq(b_xout)
        addr = Cat(word_addr, b_slot) if wpc > 1 else b_slot
        self.comb += [
            acc_in.valid.eq(b_active & payload.valid & in_acc & elem_done),
            acc_in.op.eq(Mux(b_pas, ACC_OP_PASS, Mux(b_exact, ACC_OP_ADDP, ACC_OP_ADD))),
            acc_in.addr.eq(addr), acc_in.init.eq(b_init), acc_in.emit.eq(b_emit),
            acc_in.data.eq(payload.data),
            payload.ready.eq(b_active & (~in_acc | ~elem_done | acc_in.ready)),
            take.eq(payload.valid & payload.ready),
            load.eq(~b_active | (take & last)),
            job.ready.eq(load),
        ]
        self.sync += [
            If(take,
                widx.eq(Mux(first, 1, widx + 1)), first.eq(0), wleft.eq(wleft - 1), last.eq(wleft == 1),
                If(in_acc, aleft.eq(aleft - 1), in_acc.eq(aleft != 1))
            ),
            If(take & b_exact,
                g.eq(Mux(g == PARTIAL_WORDS - 1, 0, g + 1)),
                gather.eq(Cat(payload.data, gather[:-32])),
                If(g == PARTIAL_WORDS - 1, eidx.eq(Mux(first_e, 1, eidx + 1)), first_e.eq(0))
            ) if partials else [],
            If(load,
                b_active.eq(job.valid), b_port.eq(job.port),
                b_emit.eq(job.emit), b_init.eq(job.init), b_slot.eq(job.slot),
                wleft.eq(job.lastw), last.eq(job.lastw == 0),
                aleft.eq(job.awords), in_acc.eq(~job.drop),
                first.eq(1),
                b_exact.eq(job.exact), b_xout.eq(job.xout), b_pas.eq(job.pas), g.eq(0), first_e.eq(1)
            ),
        ]


class MSResultWords(LiteXModule):
    """The bank's results (acc_result_layout with partials) as 32-bit words: an FP32 result is one word, an
    exact element PARTIAL_WORDS words, most significant first (its wire order). One word per cycle."""
    def __init__(self):
        self.sink = stream.Endpoint(acc_result_layout(1, partials=True))
        self.source = stream.Endpoint([("data", 32)])

        # # #

        j = Signal(max=PARTIAL_WORDS)
        words = [self.sink.data[32 * (PARTIAL_WORDS - 1 - k):32 * (PARTIAL_WORDS - k)] for k in range(PARTIAL_WORDS)]
        last = Signal()
        self.comb += [
            last.eq(~self.sink.exact | (j == PARTIAL_WORDS - 1)),
            self.source.valid.eq(self.sink.valid),
            self.source.data.eq(Mux(self.sink.exact, Array(words)[j], self.sink.data[:32])),
            self.sink.ready.eq(self.source.ready & last),
        ]
        self.sync += If(self.source.valid & self.source.ready, j.eq(Mux(last, 0, j + 1)))

"""Block-RAM FIFO with commit/abort whose read data ends in a plain register (the ingress payload and raw-frame
buffers; with `commit` tied high, the result-word buffer of each output port)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.block_ram import BlockRAM
from cores.lib.buffers import RegisteredBuffer


class CommitFIFO(LiteXModule):
    """FIFO whose writes become visible only when committed. `commit` publishes every entry written before
    this cycle; `abort` discards the uncommitted ones (a write in the same cycle is kept: it starts the next
    frame). Read side: a stream, one entry per cycle; an entry committed at cycle t is on `source` at t+7.
    `depth`: a power of two."""
    def __init__(self, width, depth):
        if depth & (depth - 1) or depth < 2:
            raise ValueError(f"CommitFIFO depth must be a power of two >= 2, got {depth}")
        self.we = Signal()
        self.din = Signal(width)
        self.full = Signal()
        self.commit = Signal()
        self.abort = Signal()
        self.overflow = Signal()     # a write was refused since the last commit/abort (before this cycle)
        self.source = stream.Endpoint([("data", width)])

        # # #

        aw = log2_int(depth)
        wp, cp, rp = Signal(aw + 1), Signal(aw + 1), Signal(aw + 1)
        self.ram = ram = BlockRAM(width, depth)    # a read never meets a write (the pointers)
        # Both candidate write positions (wp, or cp on an abort), their fullness and their successors come
        # from registers in parallel; the late commit/abort/we signals only select.
        do_write = Signal()
        pos, wp1, cp1, full_w, full_c = Signal(aw + 1), Signal(aw + 1), Signal(aw + 1), Signal(), Signal()
        # The write side compares with its own copy of the read pointer, one cycle old (the read logic sits
        # at the RAM's output, maybe far away): the FIFO can look one entry fuller than it is, never emptier.
        rp_w = Signal(aw + 1)
        self.sync += rp_w.eq(rp)
        self.comb += [
            wp1.eq(wp + 1), cp1.eq(cp + 1),
            # depth entries apart: the wrap bits differ, the addresses are equal (no subtraction).
            full_w.eq((wp[aw] != rp_w[aw]) & (wp[:aw] == rp_w[:aw])),
            full_c.eq((cp[aw] != rp_w[aw]) & (cp[:aw] == rp_w[:aw])),
            pos.eq(Mux(self.abort, cp, wp)),
            self.full.eq(Mux(self.abort, full_c, full_w)),
            do_write.eq(self.we & ~self.full),
        ]
        # The RAM writes one cycle later from registers: commit/abort (late frame decisions) reach only the
        # pointers, not the RAM's address pins, which may sit far away. The delay hides behind the read path:
        # an entry is read at the earliest two cycles after its commit, when its write is done.
        self.sync += ram.adr_w.eq(pos[:aw]), ram.dat_w.eq(self.din), ram.we.eq(do_write)
        self.sync += [
            wp.eq(Mux(self.abort, Mux(do_write, cp1, cp), Mux(do_write, wp1, wp))),
            If(self.commit, cp.eq(wp)),
            If(self.commit | self.abort, self.overflow.eq(self.we & self.full)
            ).Elif(self.we & self.full, self.overflow.eq(1)),
        ]
        # Read side, one entry per cycle: the RAM's two read registers (address, output), a plain register
        # `q2` (no enable, no logic: the RAM may sit far from its consumers), then a small LUT-RAM FIFO with a
        # registered output and a buffer with registered valid and ready (the consumers' handshake logic
        # stays away from the RAM and the FIFO). The read pipeline cannot stall: a read is issued only with a credit
        # (a place in the output FIFO for it). Issue -> output FIFO: 3 cycles; the credit loop (issue, RAM,
        # two plain registers, FIFO write, FIFO output register, pop) is 6 cycles, fewer than the
        # ob_depth + 1 places.
        ob_depth = 6
        v1, v2, v3 = Signal(), Signal(), Signal()
        q2 = Signal(width, reset_less=True)
        credits = Signal(max=ob_depth + 2, reset=ob_depth + 1)
        do_read, pop = Signal(), Signal()
        self.ofifo = ofifo = stream.SyncFIFO([("data", width)], ob_depth, buffered=True)
        self.buf = buf = RegisteredBuffer([("data", width)])
        self.comb += [
            do_read.eq((rp != cp) & (credits != 0)),
            ram.adr_r.eq(rp[:aw]),
            ofifo.sink.valid.eq(v3), ofifo.sink.data.eq(q2),
            ofifo.source.connect(buf.sink), buf.source.connect(self.source),
            pop.eq(ofifo.source.valid & ofifo.source.ready),
        ]
        self.sync += [
            If(do_read, rp.eq(rp + 1)),
            v1.eq(do_read), v2.eq(v1), v3.eq(v2), q2.eq(ram.dat_r),
            credits.eq(credits - do_read + pop),
        ]

"""iSLIP scheduler (McKeown, IEEE/ACM ToN 1999) for an N x N input-queued switch."""
from migen import Signal, Array, If, Cat, Replicate

from litex.gen import LiteXModule

from cores.lib.logic import index_bits, onehot_index, pointer_mask, reduce_or, round_robin_pick_masked
from cores.switch.common import MAX_ITERATIONS, check_ports


class ISLIPScheduler(LiteXModule):
    """iSLIP with `iterations` request-grant-accept iterations over `n` ports.

    Interface: `req` holds N^2 request bits (bit i*N + j: input i has a cell for output j). A one-cycle
    `start` latches `req`; each iteration then takes two cycles (grant, then accept, both registered),
    so `done` pulses 2*iterations + 1 cycles after `start`, with `match_valid[i]` / `match[i]` (the
    output matched to input i; flattened as N*log2(N) bits in `match_flat`) held until the next start.
    Grant pointers move to one past the granted input, accept pointers to one past the accepted output,
    only for grants accepted in the first iteration. `start` while busy is ignored and counted in
    `overruns`. One decision per `latency` cycles at most (`start` in the cycle of `done`). The round-robin
    picks read their pointers as registered masks (pointer_mask) and encode indices after the registers.

    `pipelined=True` registers each input's accept pick before it updates the matching and the pointers
    (three cycles an iteration, `done` 3*iterations + 1 cycles after `start`, same decisions): a shorter
    critical path for a clock shared with a datapath that leaves many cycles per decision.
    """
    def __init__(self, n, iterations=1, pipelined=False):
        check_ports(n)
        if not isinstance(iterations, int) or not 1 <= iterations <= MAX_ITERATIONS:
            raise ValueError(f"iterations must be an int in [1, {MAX_ITERATIONS}], got {iterations!r}")
        self.n = n
        self.iterations = iterations
        self.pipelined = bool(pipelined)
        self.latency = (3 if pipelined else 2) * iterations + 1
        w = index_bits(n)
        self.req = Signal(n * n)
        self.start = Signal()
        self.busy = Signal()
        self.done = Signal()
        self.match_valid = Signal(n)
        self.match_flat = Signal(n * w)
        self.match = [self.match_flat[i * w:(i + 1) * w] for i in range(n)]
        self.grant_ptr = Array(Signal(w, name=f"grant_ptr{j}") for j in range(n))
        self.accept_ptr = Array(Signal(w, name=f"accept_ptr{i}") for i in range(n))
        self.overruns = Signal(32)

        # # #

        req_q = [Signal(n, name=f"req_q{i}") for i in range(n)]      # row i: outputs requested by input i
        in_matched = self.match_valid
        out_matched = Signal(n)
        iteration = Signal(index_bits(iterations) + 1)
        phase = Signal(2)                                           # 0 grant, 1 accept, 2 commit (pipelined)
        # Pointer masks (pointer_mask), registered one cycle after their pointer: a pointer moves in the first
        # iteration's commit only for a port that commit matched, which takes no part in the rest of the
        # decision, so the next decision (two cycles later at the earliest) is the first to read it.
        g_above = [Signal(n, reset=(1 << n) - 1, name=f"g_above{j}") for j in range(n)]
        a_above = [Signal(n, reset=(1 << n) - 1, name=f"a_above{i}") for i in range(n)]
        self.sync += [m.eq(pointer_mask(p, n)) for m, p in zip(g_above + a_above,
                                                               list(self.grant_ptr) + list(self.accept_ptr))]

        self.sync += If(self.start & self.busy, self.overruns.eq(self.overruns + 1))
        self.sync += If(self.start & ~self.busy,
            self.busy.eq(1),
            iteration.eq(0),
            phase.eq(0),
            in_matched.eq(0),
            out_matched.eq(0),
            *[req_q[i].eq(self.req[i * n:(i + 1) * n]) for i in range(n)],
        )
        self.sync += self.done.eq(0)

        # Grant: output j picks among unmatched inputs requesting it (only while j is unmatched); a register per
        # output, one-hot over the inputs (0: no grant).
        g_onehot = [Signal(n, name=f"g_onehot{j}") for j in range(n)]
        grant = []
        for j in range(n):
            col = Signal(n, name=f"col{j}")
            self.comb += col.eq(Cat(*[req_q[i][j] & ~in_matched[i] for i in range(n)])
                                & Replicate(~out_matched[j], n))
            _, onehot = round_robin_pick_masked(self, col, g_above[j], n)
            grant.append(g_onehot[j].eq(onehot))
        self.sync += If(self.busy & (phase == 0), phase.eq(1), *grant)
        g_index = [Signal(w, name=f"g_index{j}") for j in range(n)]
        self.comb += [g_index[j].eq(onehot_index(g_onehot[j], n)) for j in range(n)]

        # Accept: input i picks among the grants it received.
        a_valid, a_onehot = [], []
        for i in range(n):
            row = Signal(n, name=f"row{i}")
            self.comb += row.eq(Cat(*[g_onehot[j][i] for j in range(n)]))
            valid, onehot = round_robin_pick_masked(self, row, a_above[i], n)
            a_valid.append(valid)
            a_onehot.append(onehot)
        if pipelined:
            regs = [Signal(name=f"a_valid{i}") for i in range(n)], [Signal(n, name=f"a_onehot{i}") for i in range(n)]
            self.sync += If(self.busy & (phase == 1), phase.eq(2),
                            *[r.eq(c) for rs, cs in zip(regs, (a_valid, a_onehot)) for r, c in zip(rs, cs)])
            a_valid, a_onehot = regs
        a_index = [Signal(w, name=f"a_index{i}") for i in range(n)]
        self.comb += [a_index[i].eq(onehot_index(a_onehot[i], n)) for i in range(n)]

        # Commit the accepted grants: matching, and the pointers in the first iteration.
        commit = []
        for i in range(n):
            commit.append(If(a_valid[i],
                in_matched[i].eq(1),
                self.match[i].eq(a_index[i]),
                If(iteration == 0, self.accept_ptr[i].eq(a_index[i] + 1)),
            ))
        for j in range(n):
            taken = reduce_or([a_onehot[i][j] for i in range(n)])
            commit.append(If(taken,
                out_matched[j].eq(1),
                If(iteration == 0, self.grant_ptr[j].eq(g_index[j] + 1)),
            ))
        self.sync += If(self.busy & (phase == (2 if pipelined else 1)),
            phase.eq(0),
            iteration.eq(iteration + 1),
            If(iteration == iterations - 1, self.busy.eq(0), self.done.eq(1)),
            *commit,
        )

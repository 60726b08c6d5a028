"""Synchronizer node: 8 neighbour links, a local trigger/completion interface, up to 8 idents in flight."""
from functools import reduce
from operator import and_, add

from migen import *
from migen.genlib.fifo import SyncFIFO

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.sync.common import (DIRS, DIR_NAMES, MAX_IDENTS, IDENT_BITS, MODE_BITS, MODES, MODE_MAX, MODE_UMAX,
                               MODE_MIN, MODE_OR, MODE_AND, LINK_WIDTH, DEFAULT_VALUE_WIDTH, PKT_MODE_LSB,
                               PKT_ERROR_LSB, PKT_VALUE_LSB, deps, n_flits, packet_bits, trigger_layout,
                               completion_layout, link_layout)


def combine(mode, a, b, width):
    """Migen expression: a (op mode) b for the six modes."""
    flip = Signal(width)
    gt = Signal()
    out = Signal(width)
    return out, [
        flip.eq(Mux((mode == MODE_MAX) | (mode == MODE_MIN), 1 << (width - 1), 0)),
        gt.eq((a ^ flip) > (b ^ flip)),
        Case(mode, {
            MODE_MAX: out.eq(Mux(gt, a, b)), MODE_UMAX: out.eq(Mux(gt, a, b)),
            "default": out.eq(Mux(gt, b, a)),          # min, umin
            MODE_OR: out.eq(a | b), MODE_AND: out.eq(a & b),
        }),
    ]


def round_robin(module, requests, grant):
    """Combinational round-robin: `grant` = first set bit of `requests` at or after a pointer that moves past
    each grant (else the first set bit); the caller qualifies `grant` with requests != 0."""
    n = len(requests)
    ptr = Signal(max=max(n, 2))
    chain = None
    for i in reversed(range(n)):
        chain = If(requests[i], grant.eq(i)) if chain is None else If(requests[i], grant.eq(i)).Else(chain)
    hi = chain
    for i in reversed(range(n)):
        hi = If(requests[i] & (ptr <= i), grant.eq(i)).Else(hi)
    module.comb += hi
    module.sync += If(requests != 0, ptr.eq(Mux(grant == n - 1, 0, grant + 1)))


class _SlotState:
    """Registers of one round of one ident: self/arrived/sent flags and the running reduction."""
    def __init__(self, links, with_tx):
        self.self_ = Signal()
        self.arr = {d: Signal(name=f"arr_{DIR_NAMES[d]}") for d in links}
        self.sent = {d: Signal(name=f"sent_{DIR_NAMES[d]}") for d in links} if with_tx else None
        self.done = Signal() if with_tx else None
        self.act = Signal()


class SyncNode(LiteXModule):
    """One synchronizer.

    Parameters: neighbours (directions with a neighbour; the others count as arrived), fold (a direction whose
    incoming message is folded into this node's own trigger: the lamlet port of node (0, 0)), n_idents (<= 8),
    value_width.

    Interfaces: `sink` (trigger: ident, mode, value), `source` (completion: ident, mode, error, value),
    `tx[d]` / `rx[d]` (10-bit flit links to the neighbour at d). Event outputs for counters: `ev_trigger_drop`
    (a trigger for an ident still in flight or with a bad ident/mode), `ev_rx_drop` (number of bad or excess
    packets dropped this cycle), `ev_mismatch` (two contributions with different modes met).

    Every slot keeps a current round and a next round, so an ident may be triggered again as soon as this node
    has emitted its completion. Each outgoing message is sent once its dependencies (`common.deps`) and the own
    trigger are in; it carries the slot's running reduction. One merge (trigger or packet) per cycle;
    hop latency n_flits + 1 cycles without contention; a completion is
    presented in the cycle its last contribution is merged.
    """
    def __init__(self, neighbours=DIRS, fold=None, n_idents=MAX_IDENTS, value_width=DEFAULT_VALUE_WIDTH):
        neighbours = tuple(d for d in DIRS if d in set(neighbours))
        if not 1 <= n_idents <= MAX_IDENTS:
            raise ValueError(f"n_idents must be 1..{MAX_IDENTS}, not {n_idents}")
        if value_width < 1:
            raise ValueError(f"value_width must be >= 1, not {value_width}")
        if fold is not None and fold not in neighbours:
            raise ValueError("fold must be one of the neighbour directions")
        self.neighbours, self.fold, self.n_idents, self.value_width = neighbours, fold, n_idents, value_width
        vw, nf, pb = value_width, n_flits(value_width), packet_bits(value_width)

        self.sink = stream.Endpoint(trigger_layout(vw))
        self.source = stream.Endpoint(completion_layout(vw))
        self.tx = {d: Record(link_layout(), name=f"tx_{DIR_NAMES[d]}") for d in neighbours}
        self.rx = {d: Record(link_layout(), name=f"rx_{DIR_NAMES[d]}") for d in neighbours}
        self.ev_trigger_drop = Signal()
        self.ev_rx_drop = Signal(max=len(neighbours) + 2)
        self.ev_mismatch = Signal()

        # # #

        slots = range(n_idents)
        cur = [_SlotState(neighbours, True) for _ in slots]
        nxt = [_SlotState(neighbours, False) for _ in slots]
        cur_mode = Array(Signal(MODE_BITS) for _ in slots)
        cur_err = Array(Signal() for _ in slots)
        cur_acc = Array(Signal(vw) for _ in slots)
        nxt_mode = Array(Signal(MODE_BITS) for _ in slots)
        nxt_err = Array(Signal() for _ in slots)
        nxt_acc = Array(Signal(vw) for _ in slots)

        def arrived(s, d):
            return cur[s].arr[d] if d in neighbours else 1

        # Per-slot conditions ------------------------------------------------------------------------
        self_eff = [Signal() for _ in slots]      # own trigger (and the folded lamlet) in
        complete = [Signal() for _ in slots]
        retire = Array(Signal() for _ in slots)   # done and every message sent: next round becomes current
        for s in slots:
            self.comb += [
                self_eff[s].eq(cur[s].self_ & (cur[s].arr[fold] if fold is not None else 1)),
                complete[s].eq(cur[s].self_ & reduce(and_, [cur[s].arr[d] for d in neighbours], 1)),
                retire[s].eq(cur[s].done & reduce(and_, [cur[s].sent[d] for d in neighbours], 1)),
            ]

        # Merge sources: one per link, then the local trigger ---------------------------------------
        n_src = len(neighbours) + 1
        local = len(neighbours)
        src_valid = Signal(n_src)
        src_ident = Array(Signal(IDENT_BITS) for _ in range(n_src))
        src_mode = Array(Signal(MODE_BITS) for _ in range(n_src))
        src_err = Array(Signal() for _ in range(n_src))
        src_val = Array(Signal(vw) for _ in range(n_src))
        src_cur = Array(Signal() for _ in range(n_src))   # goes to the current round
        src_drop = Array(Signal() for _ in range(n_src))  # else next round, unless dropped
        grant = Signal(max=max(n_src, 2))
        granted = Signal()

        def bad(ident, mode):
            return (ident >= n_idents) | (mode > max(MODES))

        rx_overflow = []
        for i, d in enumerate(neighbours):
            rx = self.rx[d]
            cnt = Signal(max=max(nf, 2))
            sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
            new = Signal()
            pkt = Signal(pb)
            fifo = SyncFIFO(pb, 2 * n_idents, fwft=True)
            self.submodules += fifo
            head = Signal(pb)
            ovf = Signal()
            rx_overflow.append(ovf)
            self.comb += [
                new.eq(rx.valid & (cnt == nf - 1)),
                pkt.eq(Cat(sh, rx.data) if nf > 1 else rx.data),
                head.eq(Mux(fifo.readable, fifo.dout, pkt)),
                fifo.din.eq(pkt),
                fifo.we.eq(new & ~(granted & (grant == i) & ~fifo.readable)),
                ovf.eq(fifo.we & ~fifo.writable),
                fifo.re.eq(granted & (grant == i)),
            ]
            if nf > 1:
                self.sync += If(rx.valid,
                    If(cnt == nf - 1, cnt.eq(0)).Else(cnt.eq(cnt + 1), sh.eq(Cat(sh[LINK_WIDTH:], rx.data))))
            ident, mode = head[:IDENT_BITS], head[PKT_MODE_LSB:PKT_MODE_LSB + MODE_BITS]
            a_cur = Array(cur[s].arr[d] for s in slots)[ident]
            a_nxt = Array(nxt[s].arr[d] for s in slots)[ident]
            done = Array(cur[s].done for s in slots)[ident]
            wait = a_cur & a_nxt & done          # two rounds ahead: the current one is still sending
            self.comb += [
                src_ident[i].eq(ident), src_mode[i].eq(mode), src_err[i].eq(head[PKT_ERROR_LSB]),
                src_val[i].eq(head[PKT_VALUE_LSB:]),
                src_cur[i].eq(~a_cur),
                src_drop[i].eq(bad(ident, mode) | (a_cur & a_nxt & ~done)),
                src_valid[i].eq((fifo.readable | new) & (bad(ident, mode) | ~(wait | retire[ident]))),
            ]

        sink = self.sink
        t_self = Array(cur[s].self_ for s in slots)[sink.ident]
        t_done = Array(cur[s].done for s in slots)[sink.ident]
        t_nself = Array(nxt[s].self_ for s in slots)[sink.ident]
        self.comb += [
            src_ident[local].eq(sink.ident), src_mode[local].eq(sink.mode), src_err[local].eq(0),
            src_val[local].eq(sink.value),
            src_cur[local].eq(~t_self),
            src_drop[local].eq(bad(sink.ident, sink.mode) | ~(~t_self | (t_done & ~t_nself))),
            src_valid[local].eq(sink.valid & (bad(sink.ident, sink.mode) | ~retire[sink.ident])),
            sink.ready.eq(granted & (grant == local)),
        ]

        self.comb += granted.eq(src_valid != 0)
        round_robin(self, src_valid, grant)

        # Merge -------------------------------------------------------------------------------------
        g_ident, g_mode, g_err, g_val = src_ident[grant], src_mode[grant], src_err[grant], src_val[grant]
        g_cur, g_drop = Signal(), Signal()
        t_act, t_mode, t_err, t_acc = Signal(), Signal(MODE_BITS), Signal(), Signal(vw)
        cur_act = Array(cur[s].act for s in slots)
        nxt_act = Array(nxt[s].act for s in slots)
        self.comb += [
            g_cur.eq(src_cur[grant]), g_drop.eq(src_drop[grant]),
            t_act.eq(Mux(g_cur, cur_act[g_ident], nxt_act[g_ident])),
            t_mode.eq(Mux(g_cur, cur_mode[g_ident], nxt_mode[g_ident])),
            t_err.eq(Mux(g_cur, cur_err[g_ident], nxt_err[g_ident])),
            t_acc.eq(Mux(g_cur, cur_acc[g_ident], nxt_acc[g_ident])),
        ]
        comb_val, comb_stmts = combine(t_mode, t_acc, g_val, vw)
        self.comb += comb_stmts
        mism = Signal()
        m_mode, m_err, m_acc = Signal(MODE_BITS), Signal(), Signal(vw)
        self.comb += [
            mism.eq(t_act & (t_mode != g_mode)),
            m_mode.eq(Mux(t_act, t_mode, g_mode)),
            m_err.eq(g_err | (t_act & (t_err | mism))),
            m_acc.eq(Mux(t_act, comb_val, g_val)),
            self.ev_mismatch.eq(granted & ~g_drop & mism),
            self.ev_trigger_drop.eq(granted & (grant == local) & g_drop),
            self.ev_rx_drop.eq(reduce(add, rx_overflow, 0) + (granted & (grant != local) & g_drop)),
        ]

        def arrive(st):
            stmts = [If(grant == local, st.self_.eq(1))]
            stmts += [If(grant == i, st.arr[d].eq(1)) for i, d in enumerate(neighbours)]
            return stmts

        for s in slots:
            hit = granted & ~g_drop & (g_ident == s)
            self.sync += If(retire[s],
                cur[s].self_.eq(nxt[s].self_), cur[s].act.eq(nxt[s].act), cur[s].done.eq(0),
                cur_mode[s].eq(nxt_mode[s]), cur_err[s].eq(nxt_err[s]), cur_acc[s].eq(nxt_acc[s]),
                nxt[s].self_.eq(0), nxt[s].act.eq(0),
                *[cur[s].arr[d].eq(nxt[s].arr[d]) for d in neighbours],
                *[cur[s].sent[d].eq(0) for d in neighbours],
                *[nxt[s].arr[d].eq(0) for d in neighbours],
            ).Elif(hit & g_cur,
                cur[s].act.eq(1), cur_mode[s].eq(m_mode), cur_err[s].eq(m_err), cur_acc[s].eq(m_acc),
                *arrive(cur[s]),
            ).Elif(hit,
                nxt[s].act.eq(1), nxt_mode[s].eq(m_mode), nxt_err[s].eq(m_err), nxt_acc[s].eq(m_acc),
                *arrive(nxt[s]),
            )

        # Completion: lowest complete slot, held while the sink stalls; when none is waiting, the round that
        # the merge of this cycle completes is presented at once (from the merged value).
        cand = Signal(n_idents)
        pe, sel, sel_q, locked = Signal(max=max(n_idents, 2)), Signal(max=max(n_idents, 2)), \
            Signal(max=max(n_idents, 2)), Signal()
        fresh, use_fresh = Signal(), Signal()
        src = self.source
        self.comb += [cand[s].eq(complete[s] & ~cur[s].done) for s in slots]
        self.comb += reduce(lambda acc, s: If(cand[s], pe.eq(s)).Else(acc),
                            reversed(list(slots)[:-1]), pe.eq(n_idents - 1))
        after = [Array(cur[s].self_ for s in slots)[g_ident] | (grant == local)]
        after += [Array(cur[s].arr[d] for s in slots)[g_ident] | (grant == i) for i, d in enumerate(neighbours)]
        self.comb += [
            fresh.eq(granted & ~g_drop & g_cur & reduce(and_, after)),
            use_fresh.eq(fresh & (cand == 0)),
            sel.eq(Mux(locked, sel_q, Mux(cand != 0, pe, g_ident))),
            src.valid.eq((cand != 0) | fresh), src.ident.eq(sel),
            src.mode.eq(Mux(use_fresh, m_mode, cur_mode[sel])),
            src.error.eq(Mux(use_fresh, m_err, cur_err[sel])),
            src.value.eq(Mux(use_fresh, m_acc, cur_acc[sel])),
        ]
        self.sync += [
            locked.eq(src.valid & ~src.ready), sel_q.eq(sel),
            *[If(src.valid & src.ready & (sel == s), cur[s].done.eq(1)) for s in slots],
        ]

        # Transmitters ------------------------------------------------------------------------------
        for d in neighbours:
            tx = self.tx[d]
            pend = Signal(n_idents)
            for s in slots:
                need = reduce(and_, [arrived(s, o) for o in deps(d)], 1)
                self.comb += pend[s].eq(self_eff[s] & need & ~cur[s].sent[d])
            tsel = Signal(max=max(n_idents, 2))
            self.comb += reduce(lambda acc, s: If(pend[s], tsel.eq(s)).Else(acc),
                                reversed(list(slots)[:-1]), tsel.eq(n_idents - 1))
            pkts = Array(Cat(C(s, IDENT_BITS), cur_mode[s], cur_err[s], cur_acc[s], C(0, nf * LINK_WIDTH - pb))
                         for s in slots)
            pkt = Signal(nf * LINK_WIDTH)
            sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
            rem = Signal(max=max(nf, 2))
            self.comb += pkt.eq(pkts[tsel])
            self.sync += [
                If(rem != 0,
                    tx.valid.eq(1), tx.data.eq(sh[:LINK_WIDTH]), sh.eq(sh[LINK_WIDTH:]), rem.eq(rem - 1),
                ).Elif(pend != 0,
                    tx.valid.eq(1), tx.data.eq(pkt[:LINK_WIDTH]), rem.eq(nf - 1),
                    *([sh.eq(pkt[LINK_WIDTH:])] if nf > 1 else []),
                ).Else(tx.valid.eq(0)),
            ]
            self.sync += [If((rem == 0) & (pend != 0) & (tsel == s), cur[s].sent[d].eq(1)) for s in slots]

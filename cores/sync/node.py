"""Synchronizer node: 8 neighbour links, a local trigger/completion interface, up to 8 idents in flight."""
from functools import reduce
from operator import and_, or_, add

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


def first(module, bits, out):
    """out = index of the lowest set bit of `bits` (the last index when none is set)."""
    n = len(bits)
    module.comb += reduce(lambda acc, s: If(bits[s], out.eq(s)).Else(acc), reversed(range(n - 1)),
                          out.eq(n - 1))


class _SlotState:
    """Registers of one round of one ident: self/arrived/sent flags and the running reduction."""
    def __init__(self, links, value_width, with_tx):
        self.self_ = Signal()
        self.arr = {d: Signal(name=f"arr_{DIR_NAMES[d]}") for d in links}
        self.sent = {d: Signal(name=f"sent_{DIR_NAMES[d]}") for d in links} if with_tx else None
        self.done = Signal() if with_tx else None
        self.act = Signal()
        self.mode = Signal(MODE_BITS)
        self.err = Signal()
        self.acc = Signal(value_width)


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
    trigger are in; it carries the slot's running reduction.

    Pipeline: a received packet is selected (round-robin over the links, with its slot decisions) into a
    register in the cycle its last flit arrives, and merged into the slot state the cycle after; a local
    trigger is merged in the cycle it is taken. One merge a cycle. The first flit of a message leaves in the
    cycle its condition holds (the other flits from a snapshot register). Hop latency n_flits + 1 cycles
    without contention; a completion is presented in the cycle its last contribution is merged.
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
        nl = len(neighbours)
        local = nl                                # source index of the local trigger
        cur = [_SlotState(neighbours, vw, True) for _ in slots]
        nxt = [_SlotState(neighbours, vw, False) for _ in slots]

        def pick(values, index):
            """A signal = values[index]: one multiplexer, the index decoded once."""
            values = list(values)
            out = Signal(max(len(v) for v in values))
            self.comb += out.eq(Array(values)[index]) if len(values) > 1 else out.eq(values[0])
            return out

        def arrived(s, d):
            return cur[s].arr[d] if d in neighbours else 1

        def bad(ident, mode):
            return (ident >= n_idents) | (mode > max(MODES))

        # Per-slot conditions ------------------------------------------------------------------------
        self_eff = [Signal() for _ in slots]      # own trigger (and the folded lamlet) in
        complete = [Signal() for _ in slots]
        retire = [Signal() for _ in slots]        # done and every message sent: next round becomes current
        for s in slots:
            self.comb += [
                self_eff[s].eq(cur[s].self_ & (cur[s].arr[fold] if fold is not None else 1)),
                complete[s].eq(cur[s].self_ & reduce(and_, [cur[s].arr[d] for d in neighbours], 1)),
                retire[s].eq(cur[s].done & reduce(and_, [cur[s].sent[d] for d in neighbours], 1)),
            ]

        # Stage 1: receive and select one packet a cycle ---------------------------------------------
        # s1: the selected packet with its slot decisions (to the current round, dropped), merged next cycle.
        s1_valid, s1_src = Signal(), Signal(max=max(nl, 2))
        s1_ident, s1_mode, s1_err, s1_val = Signal(IDENT_BITS), Signal(MODE_BITS), Signal(), Signal(vw)
        s1_cur, s1_drop = Signal(), Signal()
        suppress = Signal()                       # a waiting trigger needs stage 2 free next cycle
        rx_overflow = []
        if nl:
            src_valid = Signal(nl)
            grant = Signal(max=max(nl, 2))
            granted = Signal()
            entries = []
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
                take = Signal()
                self.comb += [
                    # the flits of a packet come on consecutive cycles: the last one is due when cnt says so
                    new.eq((cnt == nf - 1) if nf > 1 else rx.valid),
                    pkt.eq(Cat(sh, rx.data) if nf > 1 else rx.data),
                    head.eq(Mux(fifo.readable, fifo.dout, pkt)),
                    take.eq(granted & (grant == i)),
                    fifo.din.eq(pkt),
                    fifo.we.eq(new & ~(take & ~fifo.readable)),
                    ovf.eq(fifo.we & ~fifo.writable),
                    fifo.re.eq(take),
                ]
                if nf > 1:
                    # (no sh[LINK_WIDTH:] with 2 flits: Migen prints that zero-width slice as the backward
                    # 2-bit select sh[9:10] in the Verilog)
                    self.sync += If(rx.valid | (cnt != 0),
                        If(cnt == nf - 1, cnt.eq(0)).Else(cnt.eq(cnt + 1),
                            sh.eq(Cat(sh[LINK_WIDTH:], rx.data) if nf > 2 else rx.data)))
                ident, mode = head[:IDENT_BITS], head[PKT_MODE_LSB:PKT_MODE_LSB + MODE_BITS]
                # Flags of this link's direction in the addressed slot: exact, because the link is never
                # selected twice in a row (its previous packet has been merged).
                flags = pick([Cat(cur[s].arr[d], nxt[s].arr[d], cur[s].done, retire[s]) for s in slots], ident)
                a_cur, a_nxt, done, ret = flags[0], flags[1], flags[2], flags[3]
                is_bad = Signal()
                self.comb += [
                    is_bad.eq(bad(ident, mode)),
                    # two rounds ahead (the current one is still sending) or the slot retires: wait
                    src_valid[i].eq((fifo.readable | new) & ~(s1_valid & (s1_src == i)) &
                                    (is_bad | ~((a_cur & a_nxt & done) | ret))),
                ]
                entries.append(Cat(head, ~a_cur, is_bad | (a_cur & a_nxt & ~done)))
            req = Signal(nl)
            self.comb += [req.eq(Mux(suppress, 0, src_valid)), granted.eq(req != 0)]
            round_robin(self, req, grant)
            chosen = pick(entries, grant)
            self.sync += [
                s1_valid.eq(granted), s1_src.eq(grant),
                s1_ident.eq(chosen[:IDENT_BITS]), s1_mode.eq(chosen[PKT_MODE_LSB:PKT_MODE_LSB + MODE_BITS]),
                s1_err.eq(chosen[PKT_ERROR_LSB]), s1_val.eq(chosen[PKT_VALUE_LSB:pb]),
                s1_cur.eq(chosen[pb]), s1_drop.eq(chosen[pb + 1]),
            ]

        # Stage 2: merge the selected packet, else the local trigger ----------------------------------
        sink = self.sink
        t_flags = pick([Cat(cur[s].self_, cur[s].done, nxt[s].self_, retire[s]) for s in slots], sink.ident)
        t_self, t_done, t_nself, t_ret = t_flags[0], t_flags[1], t_flags[2], t_flags[3]
        t_bad = Signal()
        e_valid, e_src, e_ident, e_mode, e_err, e_val, e_cur, e_drop = (
            Signal(), Signal(max=nl + 2), Signal(IDENT_BITS), Signal(MODE_BITS), Signal(), Signal(vw), Signal(),
            Signal())
        self.comb += [
            t_bad.eq(bad(sink.ident, sink.mode)),
            sink.ready.eq(~s1_valid & (t_bad | ~t_ret)),
            suppress.eq(sink.valid & ~sink.ready),
            If(s1_valid,
                e_valid.eq(1), e_src.eq(s1_src), e_ident.eq(s1_ident), e_mode.eq(s1_mode), e_err.eq(s1_err),
                e_val.eq(s1_val), e_cur.eq(s1_cur), e_drop.eq(s1_drop),
            ).Else(
                e_valid.eq(sink.valid & sink.ready), e_src.eq(local), e_ident.eq(sink.ident),
                e_mode.eq(sink.mode), e_err.eq(0), e_val.eq(sink.value), e_cur.eq(~t_self),
                e_drop.eq(t_bad | ~(~t_self | (t_done & ~t_nself))),
            ),
        ]
        e_ok = Signal()
        self.comb += e_ok.eq(e_valid & ~e_drop)
        st_cur = pick([Cat(cur[s].act, cur[s].err, cur[s].mode, cur[s].acc) for s in slots], e_ident)
        st_nxt = pick([Cat(nxt[s].act, nxt[s].err, nxt[s].mode, nxt[s].acc) for s in slots], e_ident)
        t_act, t_err, t_mode, t_acc = Signal(), Signal(), Signal(MODE_BITS), Signal(vw)
        self.comb += Cat(t_act, t_err, t_mode, t_acc).eq(Mux(e_cur, st_cur, st_nxt))
        comb_val, comb_stmts = combine(t_mode, t_acc, e_val, vw)
        self.comb += comb_stmts
        mism = Signal()
        m_mode, m_err, m_acc = Signal(MODE_BITS), Signal(), Signal(vw)
        self.comb += [
            mism.eq(t_act & (t_mode != e_mode)),
            m_mode.eq(Mux(t_act, t_mode, e_mode)),
            m_err.eq(e_err | (t_act & (t_err | mism))),
            m_acc.eq(Mux(t_act, comb_val, e_val)),
            self.ev_mismatch.eq(e_ok & mism),
            self.ev_trigger_drop.eq(e_valid & (e_src == local) & e_drop),
            self.ev_rx_drop.eq(reduce(add, rx_overflow, 0) + (e_valid & (e_src != local) & e_drop)),
        ]

        from_src = [e_src == i for i in range(nl)]
        for s in slots:
            hit, from_local = Signal(), Signal()
            self.comb += [hit.eq(e_ok & (e_ident == s)), from_local.eq(e_src == local)]
            # A retiring slot can only be hit for its next round (its current round is complete): the next
            # round, with this merge, becomes current.
            self.sync += If(retire[s],
                cur[s].self_.eq(nxt[s].self_ | (hit & from_local)), cur[s].act.eq(nxt[s].act | hit),
                cur[s].done.eq(0),
                cur[s].mode.eq(Mux(hit, m_mode, nxt[s].mode)), cur[s].err.eq(Mux(hit, m_err, nxt[s].err)),
                cur[s].acc.eq(Mux(hit, m_acc, nxt[s].acc)),
                nxt[s].self_.eq(0), nxt[s].act.eq(0),
                *[cur[s].arr[d].eq(nxt[s].arr[d] | (hit & from_src[i])) for i, d in enumerate(neighbours)],
                *[cur[s].sent[d].eq(0) for d in neighbours],
                *[nxt[s].arr[d].eq(0) for d in neighbours],
            ).Elif(hit,
                If(e_cur,
                    cur[s].act.eq(1), cur[s].mode.eq(m_mode), cur[s].err.eq(m_err), cur[s].acc.eq(m_acc),
                    If(from_local, cur[s].self_.eq(1)),
                    *[If(from_src[i], cur[s].arr[d].eq(1)) for i, d in enumerate(neighbours)],
                ).Else(
                    nxt[s].act.eq(1), nxt[s].mode.eq(m_mode), nxt[s].err.eq(m_err), nxt[s].acc.eq(m_acc),
                    If(from_local, nxt[s].self_.eq(1)),
                    *[If(from_src[i], nxt[s].arr[d].eq(1)) for i, d in enumerate(neighbours)],
                ),
            )

        # Completion: lowest complete slot, held while the sink stalls; when none is waiting, the round that
        # the merge of this cycle completes is presented at once (from the merged value).
        cand = Signal(n_idents)
        pe, sel, sel_q, locked = Signal(IDENT_BITS), Signal(IDENT_BITS), Signal(IDENT_BITS), Signal()
        fresh, use_fresh = Signal(), Signal()
        src = self.source
        self.comb += [cand[s].eq(complete[s] & ~cur[s].done) for s in slots]
        first(self, cand, pe)
        have = pick([Cat(cur[s].self_, *[cur[s].arr[d] for d in neighbours]) for s in slots], e_ident)
        self.comb += [
            fresh.eq(e_ok & e_cur & ((have | Cat(e_src == local, *from_src)) == (1 << (nl + 1)) - 1)),
            use_fresh.eq(fresh & (cand == 0)),
            sel.eq(Mux(locked, sel_q, Mux(cand != 0, pe, e_ident))),
        ]
        held = pick([Cat(cur[s].err, cur[s].mode, cur[s].acc) for s in slots], sel)
        self.comb += [
            src.valid.eq((cand != 0) | fresh), src.ident.eq(sel),
            Cat(src.error, src.mode, src.value).eq(Mux(use_fresh, Cat(m_err, m_mode, m_acc), held)),
        ]
        self.sync += [
            locked.eq(src.valid & ~src.ready), sel_q.eq(sel),
            *[If(src.valid & src.ready & (sel == s), cur[s].done.eq(1)) for s in slots],
        ]

        # Transmitters: one packet builder shared by the links. Each cycle it snapshots the lowest slot that
        # an idle link has a message pending for; every idle link with a message pending for that slot starts
        # it: the first flit straight from the slot state, the others from the link's snapshot register.
        pend = {d: Signal(n_idents) for d in neighbours}
        idle = {d: Signal() for d in neighbours}
        wants = Signal(n_idents)
        bsel = Signal(IDENT_BITS)
        for d in neighbours:
            for s in slots:
                need = reduce(and_, [arrived(s, o) for o in deps(d)], 1)
                self.comb += pend[d][s].eq(self_eff[s] & need & ~cur[s].sent[d])
        self.comb += wants.eq(reduce(or_, [Mux(idle[d], pend[d], 0) for d in neighbours], 0))
        first(self, wants, bsel)
        pad = [C(0, nf * LINK_WIDTH - pb)] if nf * LINK_WIDTH > pb else []
        pkt = pick([Cat(C(s, IDENT_BITS), cur[s].mode, cur[s].err, cur[s].acc, *pad) for s in slots], bsel)
        for d in neighbours:
            tx = self.tx[d]
            sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
            rem = Signal(max=max(nf, 2))
            start = Signal()
            self.comb += [
                idle[d].eq(rem == 0),
                start.eq(idle[d] & Array(pend[d])[bsel] if n_idents > 1 else idle[d] & pend[d][0]),
                tx.valid.eq(~idle[d] | start),
                tx.data.eq(Mux(idle[d], pkt[:LINK_WIDTH], sh[:LINK_WIDTH])),
            ]
            if nf > 1:
                shift = [sh.eq(sh[LINK_WIDTH:])] if nf > 2 else []     # (no zero-width slice, as above)
                self.sync += If(~idle[d], *shift, rem.eq(rem - 1)).Elif(start,
                    sh.eq(pkt[LINK_WIDTH:]), rem.eq(nf - 1))
            self.sync += [If(start & (bsel == s), cur[s].sent[d].eq(1)) for s in slots]

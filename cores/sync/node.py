"""Synchronizer node: 8 neighbour links, a local trigger/completion interface, up to 8 idents in flight.

A node is five named stages around one slot table:

    rx[d] -> SyncLinkReceiver (one per link) -> SyncSelect -> SyncMerge <- sink (local trigger)
                                                                 |
                     SyncSlots (the state of every ident: current and next round of each slot)
                          |                          |
                   SyncCompletion -> source     SyncTransmitter -> tx[d]
"""
from migen import *
from migen.genlib.fifo import SyncFIFO

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import first_set, index_bits, reduce_and, reduce_or, round_robin
from cores.sync.common import (DIRS, DIR_NAMES, MAX_IDENTS, IDENT_BITS, MODE_BITS, MODES, MODE_MAX, MODE_UMAX,
                               MODE_MIN, MODE_OR, MODE_AND, LINK_WIDTH, DEFAULT_VALUE_WIDTH, PKT_HEADER_BITS, deps,
                               n_flits, packet_bits, packet_header, trigger_layout, completion_layout, link_layout)


def combine(module, mode, act, a, b):
    """A signal: a (op mode) b for the six modes, or b alone when not `act`. Both outcomes of the compare are
    built from the mode first, so the compare (the carry chain, the slow part) only drives the last 2-to-1
    multiplexer."""
    width = len(a)
    flip, gt = Signal(width), Signal()
    if_gt, if_le, out = Signal(width), Signal(width), Signal(width)
    module.comb += [
        flip.eq(Mux((mode == MODE_MAX) | (mode == MODE_MIN), 1 << (width - 1), 0)),
        gt.eq((a ^ flip) > (b ^ flip)),
        If(~act,
            if_gt.eq(b), if_le.eq(b),
        ).Else(Case(mode, {
            MODE_MAX: [if_gt.eq(a), if_le.eq(b)], MODE_UMAX: [if_gt.eq(a), if_le.eq(b)],
            "default": [if_gt.eq(b), if_le.eq(a)],          # min, umin
            MODE_OR: [if_gt.eq(a | b), if_le.eq(a | b)], MODE_AND: [if_gt.eq(a & b), if_le.eq(a & b)],
        })),
        out.eq(Mux(gt, if_gt, if_le)),
    ]
    return out


def pick(module, values, index):
    """A signal = values[index]: one multiplexer, the index decoded once."""
    values = list(values)
    out = Signal(max(len(v) for v in values))
    module.comb += out.eq(Array(values)[index]) if len(values) > 1 else out.eq(values[0])
    return out


def bad(ident, mode, n_idents):
    """A trigger or packet that names no slot or no mode."""
    return (ident >= n_idents) | (mode > max(MODES))


class SyncSlots(LiteXModule):
    """The state of every ident: flags kept as vectors with one bit per slot (so each flag of all slots
    updates in one operation) for the round in progress (`self_`, `act`, `done`, `arr[d]`, `sent[d]`) and the
    next round, which can start arriving while the current one still sends (`nself`, `nact`, `narr[d]`); the
    values (error, mode, accumulator) of both rounds in a LUT RAM `mem` of two banks, `bank` bit s telling
    which bank holds slot s's current round (retiring a round flips the bit). `read(index, nxt)` adds an
    asynchronous read port (a RAM copy) for one consumer. Every flag and the RAM are written here:

    * merge port (from SyncMerge): `ok` (a contribution is merged this cycle), `ident`, `to_cur`, `src`
      (link index, or the number of links for the local trigger), `mode`, `err`, `acc` (merged values);
    * `cpl_taken` / `cpl_ident` (SyncCompletion): the completion of that slot was taken;
    * `tx_start[d]` / `tx_slot` (SyncTransmitter, one-hot): the message towards d of that slot left.

    Per-slot conditions (vectors): `self_eff` (own trigger, with the folded lamlet, in), `complete`,
    `retire` (a register: the slot was done with every message sent in the previous cycle, so the next round
    becomes current now; `retire_next`: it will next cycle). `bit(vector, index)` reads one slot's flag.
    """
    def __init__(self, neighbours, fold, n_idents, value_width):
        nl, n = len(neighbours), n_idents
        idents = range(n)
        vec = lambda name: Signal(n, name=name)
        self.self_, self.act, self.done = vec("cur_self"), vec("cur_act"), vec("cur_done")
        self.nself, self.nact = vec("nxt_self"), vec("nxt_act")
        self.arr = {d: vec(f"cur_arr_{DIR_NAMES[d]}") for d in neighbours}
        self.narr = {d: vec(f"nxt_arr_{DIR_NAMES[d]}") for d in neighbours}
        self.sent = {d: vec(f"sent_{DIR_NAMES[d]}") for d in neighbours}
        self.bank = vec("bank")
        self.ib = ib = index_bits(n)
        self.mem = Memory(1 + MODE_BITS + value_width, 2 << ib)      # address: slot | bank << ib
        self.ok, self.ident, self.to_cur = Signal(), Signal(IDENT_BITS), Signal()
        self.src = Signal(max=nl + 2)
        self.m_mode, self.m_err, self.m_acc = Signal(MODE_BITS), Signal(), Signal(value_width)
        self.cpl_taken, self.cpl_ident = Signal(), Signal(IDENT_BITS)
        self.tx_start, self.tx_slot = {d: Signal() for d in neighbours}, Signal(n)
        self.self_eff, self.complete, self.retire = vec("self_eff"), vec("complete"), vec("retire")
        self.retire_next = vec("retire_next")

        # # #

        self.comb += [
            self.self_eff.eq(self.self_ & (self.arr[fold] if fold is not None else Replicate(1, n))),
            self.complete.eq(reduce_and([self.self_] + [self.arr[d] for d in neighbours])),
            self.retire_next.eq(reduce_and([self.done, ~self.retire] + [self.sent[d] for d in neighbours])),
        ]
        self.sync += self.retire.eq(self.retire_next)
        # The merge as one-hot slot vectors: hit (any round), into the current / the next round.
        hit, hit_cur, hit_nxt = vec("hit"), vec("hit_cur"), vec("hit_nxt")
        local = Replicate(self.src == nl, n)
        links = {d: Replicate(self.src == i, n) for i, d in enumerate(neighbours)}
        self.comb += [
            hit.eq(Mux(self.ok, C(1, n) << self.ident, 0)),
            hit_cur.eq(Mux(self.to_cur, hit, 0)),
            hit_nxt.eq(Mux(self.to_cur, 0, hit)),
        ]
        # A retiring slot can only be hit for its next round (its current round is complete): the next round,
        # with this merge, becomes current; otherwise the merge sets its round's flags. A completion taken or a
        # message sent in the cycle a slot retires belongs to the round that becomes current.
        r, keep = self.retire, vec("keep")
        self.comb += keep.eq(~r)
        self.sync += [
            self.self_.eq((r & (self.nself | (hit & local))) | (keep & (self.self_ | (hit_cur & local)))),
            self.act.eq((r & (self.nact | hit)) | (keep & (self.act | hit_cur))),
            self.done.eq((self.done & keep) | Mux(self.cpl_taken, C(1, n) << self.cpl_ident, 0)),
            self.nself.eq(keep & (self.nself | (hit_nxt & local))),
            self.nact.eq(keep & (self.nact | hit_nxt)),
            *[self.arr[d].eq((r & (self.narr[d] | (hit & links[d]))) | (keep & (self.arr[d] | (hit_cur & links[d]))))
              for d in neighbours],
            *[self.narr[d].eq(keep & (self.narr[d] | (hit_nxt & links[d]))) for d in neighbours],
            *[self.sent[d].eq((self.sent[d] & keep) | Mux(self.tx_start[d], self.tx_slot, 0))
              for d in neighbours],
        ]
        # The merged values go to the addressed round's bank (a retiring slot's: its next round's, the bank that
        # becomes current as the bit flips).
        self.specials += self.mem
        wr = self.mem.get_port(write_capable=True, async_read=True)
        self.specials += wr
        self.comb += [
            wr.adr.eq(Cat(self.ident[:ib],
                          self.bit(self.bank, self.ident) ^ ~(self.to_cur & ~self.bit(r, self.ident)))),
            wr.dat_w.eq(Cat(self.m_err, self.m_mode, self.m_acc)),
            wr.we.eq(self.ok),
        ]
        self.sync += self.bank.eq(self.bank ^ r)

    @staticmethod
    def bit(vector, index):
        """Flag `index` of a slot vector (0 for an index past the slots)."""
        return (vector >> index)[0]

    def read(self, index, nxt=0, onehot=None):
        """Cat(err, mode, acc) of slot `index`'s current round (next round when `nxt`), through a read port of
        its own (the RAM is copied per port). `onehot`: the slot also as a one-hot vector (the bank bit is then
        an AND-OR beside the index, not a look-up after it)."""
        port = self.mem.get_port(async_read=True)
        self.specials += port
        b = self.bit(self.bank, index) if onehot is None else (self.bank & onehot) != 0
        self.comb += port.adr.eq(Cat(index[:self.ib], b ^ nxt))
        return port.dat_r


class SyncLinkReceiver(LiteXModule):
    """One incoming link: deserializes the flits of a packet (they come on consecutive cycles) into a FIFO
    of 2 n_idents packets (`overflow` pulses when one is lost) and offers its head (the FIFO's, else the
    packet completing this cycle; with one-flit packets the FIFO's only) with its slot decisions: `valid`
    when it can be merged now (not two rounds ahead of a slot that still sends, not into a retiring slot),
    `entry` = head | to_cur | drop. `take`: the selector took the head.

    The decisions are registered: they are made a cycle ahead for the packet that will be the head, from
    its header (the FIFO's head, else the first flit of the packet being received) and `flags(ident)`: this
    link's (arrived in cur, arrived in nxt, done, retiring now or next cycle) of a slot, from SyncSlots.
    `busy`: the selector took this link's previous packet in one of the last two cycles (its merge is not
    yet in the flags the decisions were made from)."""
    def __init__(self, rx, flags, busy, n_idents, value_width):
        nf, pb = n_flits(value_width), packet_bits(value_width)
        pkt_h = packet_header(value_width)
        self.take = Signal()
        self.valid = Signal()
        self.entry = Signal(pb + 2)
        self.overflow = Signal()

        # # #

        bypass = nf > 1        # a one-flit packet's header is not known the cycle before it completes
        cnt = Signal(max=max(nf, 2))
        sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
        hdr = Signal(PKT_HEADER_BITS)         # the first flit's header bits (packets of several flits)
        new, pkt, head = Signal(), Signal(pb), Signal(pb)
        self.fifo = fifo = SyncFIFO(pb, 2 * n_idents, fwft=True)
        self.comb += [
            # the flits of a packet come on consecutive cycles: the last one is due when cnt says so
            new.eq((cnt == nf - 1) if nf > 1 else rx.valid),
            pkt.eq(Cat(sh, rx.data) if nf > 1 else rx.data),
            head.eq(Mux(fifo.readable, fifo.dout, pkt) if bypass else fifo.dout),
            fifo.din.eq(pkt),
            fifo.we.eq(new & ~(self.take & ~fifo.readable) if bypass else new),
            self.overflow.eq(fifo.we & ~fifo.writable),
            fifo.re.eq(self.take),
        ]
        if nf > 1:
            # (no sh[LINK_WIDTH:] with 2 flits: Migen prints that zero-width slice as the backward 2-bit
            # select sh[9:10] in the Verilog)
            self.sync += If(rx.valid | (cnt != 0),
                If(cnt == 0, hdr.eq(rx.data)),
                If(cnt == nf - 1, cnt.eq(0)).Else(cnt.eq(cnt + 1),
                    sh.eq(Cat(sh[LINK_WIDTH:], rx.data) if nf > 2 else rx.data)))
        # The header of next cycle's head: the FIFO's head, else the packet completing now (its first flit
        # in hdr) or next cycle (its first flit in hdr, or on the wire now with two flits).
        nxt_hdr = Signal(PKT_HEADER_BITS)
        self.comb += nxt_hdr.eq(Mux(fifo.readable, fifo.dout, Mux(cnt == 0, rx.data, hdr) if nf > 1 else rx.data))
        ident, mode = pkt_h.field(nxt_hdr, "ident"), pkt_h.field(nxt_hdr, "mode")
        a_cur, a_nxt, done, ret = flags(ident)
        is_bad = Signal()
        ok, to_cur, drop = Signal(name="dec_ok"), Signal(name="dec_to_cur"), Signal(name="dec_drop")
        self.comb += is_bad.eq(bad(ident, mode, n_idents))
        self.sync += [
            # two rounds ahead (the current one is still sending) or the slot retires: wait
            ok.eq(is_bad | ~((a_cur & a_nxt & done) | ret)),
            to_cur.eq(~a_cur),
            drop.eq(is_bad | (a_cur & a_nxt & ~done)),
        ]
        self.comb += [
            self.valid.eq((fifo.readable | (new if bypass else 0)) & ~busy & ok),
            self.entry.eq(Cat(head, to_cur, drop)),
        ]


class SyncSelect(LiteXModule):
    """Stage 1: a round-robin choice among the links' offers (none the cycle after `suppress`), registered
    with its slot decisions: `valid`, `src` (link index), the packet fields, `to_cur` and `drop`."""
    def __init__(self, receivers, value_width):
        nl = len(receivers)
        pb = packet_bits(value_width)
        pkt_h = packet_header(value_width)
        self.suppress = Signal()
        self.valid, self.src = Signal(name="sel_valid"), Signal(max=max(nl, 2), name="sel_src")
        self.ident, self.mode = Signal(IDENT_BITS, name="sel_ident"), Signal(MODE_BITS, name="sel_mode")
        self.err, self.value = Signal(name="sel_err"), Signal(value_width, name="sel_value")
        self.to_cur, self.drop = Signal(name="sel_to_cur"), Signal(name="sel_drop")

        # # #

        if not nl:
            return
        req, suppress_q = Signal(nl), Signal()
        self.sync += suppress_q.eq(self.suppress)
        self.comb += req.eq(Mux(suppress_q, 0, Cat(*[r.valid for r in receivers])))
        granted, grant, _ = round_robin(self, req, nl)
        self.comb += [r.take.eq(granted & (grant == i)) for i, r in enumerate(receivers)]
        chosen = pick(self, [r.entry for r in receivers], grant)
        self.sync += [
            self.valid.eq(granted), self.src.eq(grant),
            self.ident.eq(pkt_h.field(chosen, "ident")), self.mode.eq(pkt_h.field(chosen, "mode")),
            self.err.eq(pkt_h.field(chosen, "error")), self.value.eq(pkt_h.field(chosen, "value")),
            self.to_cur.eq(chosen[pb]), self.drop.eq(chosen[pb + 1]),
        ]


class SyncMerge(LiteXModule):
    """Stage 2: merges the selected packet, else the local trigger (`sink`), into its slot: drives the merge
    port of SyncSlots with the combined mode/error/value. A trigger waits while a packet is merged or its
    slot retires (`suppress` then keeps the selector idle the cycle after next). Events: `ev_mismatch` (modes
    differed), `ev_trigger_drop`, `ev_packet_drop` (a dropped packet; the node adds the links' overflows)."""
    def __init__(self, sink, sel, slots, n_links, n_idents, value_width):
        bit = slots.bit
        local = n_links
        self.ev_mismatch, self.ev_trigger_drop, self.ev_packet_drop = Signal(), Signal(), Signal()
        # the merged contribution (SyncCompletion presents a round it completes at once)
        self.e_ok, self.e_ident, self.e_cur, self.e_src = slots.ok, slots.ident, slots.to_cur, slots.src
        self.m_mode, self.m_err, self.m_acc = slots.m_mode, slots.m_err, slots.m_acc

        # # #

        t_self, t_done, t_nself, t_ret = (bit(v, sink.ident) for v in (slots.self_, slots.done, slots.nself,
                                                                       slots.retire))
        t_bad = Signal()
        e_valid, e_mode, e_err, e_val, e_drop = Signal(), Signal(MODE_BITS), Signal(), Signal(value_width), Signal()
        e_src, e_ident, e_cur, e_ok = self.e_src, self.e_ident, self.e_cur, self.e_ok
        self.comb += [
            t_bad.eq(bad(sink.ident, sink.mode, n_idents)),
            sink.ready.eq(~sel.valid & (t_bad | ~t_ret)),
            sel.suppress.eq(sink.valid & ~sink.ready),
            If(sel.valid,
                e_valid.eq(1), e_src.eq(sel.src), e_ident.eq(sel.ident), e_mode.eq(sel.mode), e_err.eq(sel.err),
                e_val.eq(sel.value), e_cur.eq(sel.to_cur), e_drop.eq(sel.drop),
            ).Else(
                e_valid.eq(sink.valid & sink.ready), e_src.eq(local), e_ident.eq(sink.ident),
                e_mode.eq(sink.mode), e_err.eq(0), e_val.eq(sink.value), e_cur.eq(~t_self),
                e_drop.eq(t_bad | ~(~t_self | (t_done & ~t_nself))),
            ),
            e_ok.eq(e_valid & ~e_drop),
        ]
        t_act, t_err, t_mode, t_acc = Signal(), Signal(), Signal(MODE_BITS), Signal(value_width)
        self.comb += [
            t_act.eq(Mux(e_cur, bit(slots.act, e_ident), bit(slots.nact, e_ident))),
            Cat(t_err, t_mode, t_acc).eq(slots.read(e_ident, ~e_cur)),
        ]
        mism = Signal()
        self.comb += [
            mism.eq(t_act & (t_mode != e_mode)),
            self.m_mode.eq(Mux(t_act, t_mode, e_mode)),
            self.m_err.eq(e_err | (t_act & (t_err | mism))),
            self.m_acc.eq(combine(self, t_mode, t_act, t_acc, e_val)),
            self.ev_mismatch.eq(e_ok & mism),
            self.ev_trigger_drop.eq(e_valid & (e_src == local) & e_drop),
            self.ev_packet_drop.eq(e_valid & (e_src != local) & e_drop),
        ]


class SyncCompletion(LiteXModule):
    """Presents completions on `source`: the lowest complete slot, held while the sink stalls; when none is
    waiting, the round that this cycle's merge completes is presented at once (from the merged value)."""
    def __init__(self, source, slots, merge, neighbours, n_idents):
        nl = len(neighbours)
        bit = slots.bit

        # # #

        cand = Signal(n_idents)
        sel, sel_q, locked = Signal(IDENT_BITS, name="sel"), Signal(IDENT_BITS, name="sel_q"), Signal(name="locked")
        fresh, use_fresh = Signal(), Signal()
        self.comb += cand.eq(slots.complete & ~slots.done)
        _, pe, _ = first_set(self, cand, n_idents)
        have = Cat(bit(slots.self_, merge.e_ident), *[bit(slots.arr[d], merge.e_ident) for d in neighbours])
        from_src = Cat(merge.e_src == nl, *[merge.e_src == i for i in range(nl)])
        self.comb += [
            fresh.eq(merge.e_ok & merge.e_cur & ((have | from_src) == (1 << (nl + 1)) - 1)),
            use_fresh.eq(fresh & (cand == 0)),
            sel.eq(Mux(locked, sel_q, Mux(cand != 0, pe, merge.e_ident))),
        ]
        held = slots.read(sel)
        self.comb += [
            source.valid.eq((cand != 0) | fresh), source.ident.eq(sel),
            Cat(source.error, source.mode, source.value).eq(
                Mux(use_fresh, Cat(merge.m_err, merge.m_mode, merge.m_acc), held)),
            slots.cpl_taken.eq(source.valid & source.ready), slots.cpl_ident.eq(sel),
        ]
        self.sync += [locked.eq(source.valid & ~source.ready), sel_q.eq(sel)]


class SyncTransmitter(LiteXModule):
    """The links' transmitters with one shared packet builder. Each cycle it snapshots the lowest slot that an
    idle link has a message pending for (own trigger in, the message's dependencies `common.deps` arrived,
    not sent yet); every idle link with a message pending for that slot starts it: the first flit straight
    from the slot state, the others from the link's snapshot register."""
    def __init__(self, tx, slots, neighbours, n_idents, value_width):
        idents = range(n_idents)
        nf, pb = n_flits(value_width), packet_bits(value_width)

        # # #

        pend = {d: Signal(n_idents) for d in neighbours}
        idle = {d: Signal() for d in neighbours}
        wants = Signal(n_idents)
        for d in neighbours:
            # directions without a neighbour count as arrived
            need = [slots.arr[o] for o in deps(d) if o in neighbours]
            self.comb += pend[d].eq(reduce_and([slots.self_eff, *need, ~slots.sent[d]]))
        self.comb += wants.eq(reduce_or([Mux(idle[d], pend[d], 0) for d in neighbours]))
        # the builder's slot as a one-hot vector: the packet is an AND-OR of the slots, no index in between
        _, bidx, bsel = first_set(self, wants, n_idents)
        pkt_h = packet_header(value_width)
        pad = [C(0, nf * LINK_WIDTH - pb)] if nf * LINK_WIDTH > pb else []
        b_err, b_mode, b_acc = Signal(), Signal(MODE_BITS), Signal(value_width)
        pkt = Signal(nf * LINK_WIDTH)
        self.comb += [
            Cat(b_err, b_mode, b_acc).eq(slots.read(bidx, onehot=bsel)),
            pkt.eq(Cat(pkt_h.value(ident=bidx, mode=b_mode, error=b_err, value=b_acc)[:pb], *pad)),
            slots.tx_slot.eq(bsel),
        ]
        for d in neighbours:
            link = tx[d]
            sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
            rem = Signal(max=max(nf, 2))
            start = slots.tx_start[d]
            self.comb += [
                idle[d].eq(rem == 0),
                start.eq(idle[d] & (pend[d] & bsel != 0)),
                link.valid.eq(~idle[d] | start),
                link.data.eq(Mux(idle[d], pkt[:LINK_WIDTH], sh[:LINK_WIDTH])),
            ]
            if nf > 1:
                shift = [sh.eq(sh[LINK_WIDTH:])] if nf > 2 else []     # (no zero-width slice, as above)
                self.sync += If(~idle[d], *shift, rem.eq(rem - 1)).Elif(start,
                    sh.eq(pkt[LINK_WIDTH:]), rem.eq(nf - 1))


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

        self.sink = stream.Endpoint(trigger_layout(value_width))
        self.source = stream.Endpoint(completion_layout(value_width))
        self.tx = {d: Record(link_layout(), name=f"tx_{DIR_NAMES[d]}") for d in neighbours}
        self.rx = {d: Record(link_layout(), name=f"rx_{DIR_NAMES[d]}") for d in neighbours}
        self.ev_trigger_drop = Signal()
        self.ev_rx_drop = Signal(max=len(neighbours) + 2)
        self.ev_mismatch = Signal()

        # # #

        self.slots = slots = SyncSlots(neighbours, fold, n_idents, value_width)
        busy = []          # per link: the selector took this link's packet one or two cycles ago (set below)
        receivers = []
        for i, d in enumerate(neighbours):
            def flags(ident, d=d):
                return tuple(slots.bit(v, ident) for v in (slots.arr[d], slots.narr[d], slots.done,
                                                           slots.retire | slots.retire_next))
            busy.append(Signal())
            rcv = SyncLinkReceiver(self.rx[d], flags, busy[i], n_idents, value_width)
            setattr(self, f"rx_{DIR_NAMES[d]}_receiver", rcv)
            receivers.append(rcv)
        self.select = sel = SyncSelect(receivers, value_width)
        for i in range(len(neighbours)):
            held, held_q = Signal(), Signal()
            self.comb += [held.eq(sel.valid & (sel.src == i)), busy[i].eq(held | held_q)]
            self.sync += held_q.eq(held)
        self.merge = merge = SyncMerge(self.sink, sel, slots, len(neighbours), n_idents, value_width)
        self.completion = SyncCompletion(self.source, slots, merge, neighbours, n_idents)
        self.transmitter = SyncTransmitter(self.tx, slots, neighbours, n_idents, value_width)
        self.comb += [
            self.ev_mismatch.eq(merge.ev_mismatch),
            self.ev_trigger_drop.eq(merge.ev_trigger_drop),
            self.ev_rx_drop.eq(sum(r.overflow for r in receivers) + merge.ev_packet_drop),
        ]

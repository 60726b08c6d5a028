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

from cores.lib.logic import first_set, index_bits, onehot_index, reduce_and, reduce_or, round_robin_pick_masked
from cores.sync.common import (DIRS, DIR_NAMES, MAX_IDENTS, IDENT_BITS, MODE_BITS, MODES, MODE_MAX, MODE_UMIN,
                               MODE_MIN, MODE_OR, MODE_AND, LINK_WIDTH, DEFAULT_VALUE_WIDTH, PKT_HEADER_BITS, deps,
                               n_flits, packet_bits, packet_header, trigger_layout, completion_layout, link_layout)


def reduction(mode):
    """The reduction of `mode` decoded, to register a stage ahead of `combine`: [signed compare, keeps the
    lower value, or, and]."""
    return [(mode == MODE_MAX) | (mode == MODE_MIN), (mode == MODE_MIN) | (mode == MODE_UMIN),
            mode == MODE_OR, mode == MODE_AND]


def combine(module, op, act, a, b):
    """A signal: a (op) b for the six modes, or b alone when not `act`. `op`: `reduction`'s flags, as
    registers. Both outcomes of the compare are built first (kept as nets, so synthesis does not fold them
    into the logic after the compare): the compare (the carry chain, the slow part) only drives the last
    2-to-1 multiplexer."""
    signed, lower, is_or, is_and = op
    width = len(a)
    flip, diff = Signal(width), Signal(width + 1)
    if_gt, if_le = Signal(width, attr={"keep"}), Signal(width, attr={"keep"})
    other = Mux(is_or, a | b, a & b)
    module.comb += [
        flip.eq(signed << (width - 1)),
        # a > b as the borrow of b - a alone (yosys builds `>` from the subtraction and an equality tree)
        diff.eq((b ^ flip) - (a ^ flip)),
        if_gt.eq(Mux(act, Mux(is_or | is_and, other, Mux(lower, b, a)), b)),
        if_le.eq(Mux(act, Mux(is_or | is_and, other, Mux(lower, a, b)), b)),
    ]
    return Mux(diff[width], if_gt, if_le)


def bad(ident, mode, n_idents):
    """A trigger or packet that names no slot or no mode."""
    return (ident >= n_idents) | (mode > max(MODES))


class SyncSlots(LiteXModule):
    """The state of every ident: flags kept as vectors with one bit per slot (so each flag of all slots
    updates in one operation) for the round in progress (`self_`, `act`, `done`, `arr[d]`, `sent[d]`) and the
    next round, which can start arriving while the current one still sends (`nself`, `nact`, `narr[d]`); the
    values (error, mode, accumulator) of both rounds in a LUT RAM `mem` of two banks, `bank` bit s telling
    which bank holds slot s's current round (retiring a round flips the bit). `read(entry(index, nxt))` adds
    an asynchronous read port (a RAM copy) for one consumer; the RAM is written a cycle after the merge.
    Every flag and the RAM are written here:

    * merge port (from SyncMerge): `ok` (a contribution is merged this cycle), `ident`, `to_cur`, `src`
      (link index, or the number of links for the local trigger), `adr` (the RAM entry written: `entry()` of
      the merge's read a cycle before), `mode`, `err`, `acc` (merged values);
    * `cpl_taken` / `cpl_ident` (SyncCompletion): the completion of that slot was taken;
    * `tx_start[d]` / `tx_slot[d]` (SyncTransmitter, one-hot): the message towards d of that slot left.

    Per-slot conditions (vectors): `self_eff` (own trigger, with the folded lamlet, in), `complete`,
    `retire` (a register: the slot was done with every message sent in the previous cycle, so the next round
    becomes current now; `retire_next`: it will next cycle), `bank_next` (`bank` next cycle). `bit(vector,
    index)` reads one slot's flag.
    """
    # the slot RAM is internal: LiteX would map a Memory attribute onto the CSR bus, and that second write port
    # turns its LUT RAM into flip-flops (2.3 times the grid's LUT4 in a board build)
    autocsr_exclude = {"mem"}

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
        self.ok, self.ident = Signal(name="m_ok"), Signal(IDENT_BITS, name="m_ident")
        self.to_cur, self.src = Signal(name="m_to_cur"), Signal(max=nl + 2, name="m_src")
        self.adr = Signal(ib + 1)
        self.m_mode, self.m_err, self.m_acc = Signal(MODE_BITS), Signal(), Signal(value_width)
        self.cpl_taken, self.cpl_ident = Signal(), Signal(IDENT_BITS)
        self.tx_start, self.tx_slot = {d: Signal() for d in neighbours}, {d: Signal(n) for d in neighbours}
        self.self_eff, self.complete, self.retire = vec("self_eff"), vec("complete"), vec("retire")
        self.retire_next = vec("retire_next")
        self.bank_next = vec("bank_next")        # `bank` as of the next cycle

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
            *[self.sent[d].eq((self.sent[d] & keep) | Mux(self.tx_start[d], self.tx_slot[d], 0))
              for d in neighbours],
        ]
        # The merged values are written a cycle later, from registers (`read(..., pending=True)` forwards them).
        self.specials += self.mem
        wr = self.mem.get_port(write_capable=True, async_read=True)
        self.specials += wr
        self.w_we, self.w_adr, self.w_dat = Signal(), Signal(ib + 1), Signal(len(wr.dat_w))
        self.w_oh = [Signal(1 << ib, name=f"w_oh{b}") for b in range(2)]     # per bank: w_adr's slot, one-hot
        self.sync += [self.w_we.eq(self.ok), self.w_adr.eq(self.adr),
                      self.w_dat.eq(Cat(self.m_err, self.m_mode, self.m_acc)),
                      *[w_oh.eq(Mux(self.ok & (self.adr[ib] == b), C(1, 1 << ib) << self.adr[:ib], 0))
                        for b, w_oh in enumerate(self.w_oh)]]
        self.comb += [wr.adr.eq(self.w_adr), wr.dat_w.eq(self.w_dat), wr.we.eq(self.w_we)]
        # a copy per bank for `read_banks` (one RAM would let yosys merge its two read ports into one port
        # whose address has the bank bit again)
        self.banks = [Memory(len(wr.dat_w), 1 << ib) for _ in range(2)]
        for b, mem in enumerate(self.banks):
            port = mem.get_port(write_capable=True, async_read=True)
            self.specials += mem, port
            self.comb += [port.adr.eq(self.w_adr[:ib]), port.dat_w.eq(self.w_dat),
                          port.we.eq(self.w_we & (self.w_adr[ib] == b))]
        self.comb += self.bank_next.eq(self.bank ^ r)
        self.sync += self.bank.eq(self.bank_next)

    @staticmethod
    def bit(vector, index):
        """Flag `index` of a slot vector (0 for an index past the slots)."""
        return (vector >> index)[0]

    def entry(self, index, nxt=0):
        """The RAM entry of slot `index`'s current round (next round when `nxt`)."""
        return Cat(index[:self.ib], self.bit(self.bank, index) ^ nxt)

    def read(self, adr, pending=False):
        """Cat(err, mode, acc) at RAM entry `adr`, through a read port of its own (the RAM is copied per port).
        `pending`: with the previous cycle's merge, which the RAM holds from the next cycle on."""
        port = self.mem.get_port(async_read=True)
        self.specials += port
        self.comb += port.adr.eq(adr)
        return Mux(self.w_we & (self.w_adr == adr), self.w_dat, port.dat_r) if pending else port.dat_r

    def read_banks(self, index):
        """[bank 0, bank 1]: Cat(err, mode, acc) of slot `index` in both banks (RAM copies of one bank each, so
        the bank bit can select after the RAM), without the pending write."""
        banks = []
        for mem in self.banks:
            port = mem.get_port(async_read=True)
            self.specials += port
            self.comb += port.adr.eq(index[:self.ib])
            banks.append(port.dat_r)
        return banks


class SyncLinkReceiver(LiteXModule):
    """One incoming link: deserializes the flits of a packet (they come on consecutive cycles) into a FIFO
    of 2 n_idents packets (`overflow` pulses when one is lost) and offers its head (the FIFO's, else the
    packet completing this cycle; with packets of one or two flits the FIFO's only): `valid` when it can be
    merged now (not for a round after the current one while that is done). The selector chooses in that
    cycle and takes the offer the cycle after (`take`), when it is the FIFO's head: `entry` = head | to_cur |
    drop, with the decisions the offer was made with; to_cur also when the head's slot retires in the cycle it
    is taken (from `retire_next`, the slots' vector, the cycle before: its next round becomes current).

    The decisions are registered: they are made a cycle ahead for the packet that will be the head, from
    its header decoded the cycle before that (the FIFO's head, else the first flit of the packet being
    received) and `flags`: this link's (arrived in cur, arrived in nxt, done) slot vectors, from SyncSlots
    (each decision is built for every slot, then the header's one-hot ident picks one). A slot retires only
    once done, so a next-round packet waiting while the current round is done never meets a retiring slot
    before it is chosen. `busy`: the selector chose this link's previous packet in one of the last four cycles
    (its merge is not yet in the flags the decisions were made from)."""
    def __init__(self, rx, flags, retire_next, busy, n_idents, value_width):
        nf, pb = n_flits(value_width), packet_bits(value_width)
        pkt_h = packet_header(value_width)
        self.take = Signal()
        self.valid = Signal()
        self.entry = Signal(pb + 2)
        self.overflow = Signal()

        # # #

        bypass = nf > 2        # the header of a packet of fewer flits is not known two cycles before it completes
        cnt = Signal(max=max(nf, 2))
        sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
        hdr = Signal(PKT_HEADER_BITS)         # the first flit's header bits (packets of several flits)
        new, pkt, head = Signal(), Signal(pb), Signal(pb)
        # a FIFO entry is the packet and its header decoded (one-hot ident, bad), so the decisions below are
        # AND-ORs of the FIFO's output
        decode = lambda h: Cat((C(1, n_idents) << pkt_h.field(h, "ident"))[:n_idents],
                               bad(pkt_h.field(h, "ident"), pkt_h.field(h, "mode"), n_idents))
        self.fifo = fifo = SyncFIFO(pb + n_idents + 1, 2 * n_idents, fwft=True)
        # fifo.readable as a register of its own: the next level is not 0 (no adder: a write, two entries or
        # more, or one entry not read now)
        nonempty = Signal()
        self.sync += nonempty.eq(fifo.we | (fifo.level >= 2) | ((fifo.level == 1) & ~fifo.re))
        self.comb += [
            # the flits of a packet come on consecutive cycles: the last one is due when cnt says so
            *([] if nf > 1 else [new.eq(rx.valid)]),
            pkt.eq(Cat(sh, rx.data) if nf > 1 else rx.data),
            head.eq(fifo.dout[:pb]),
            fifo.din.eq(Cat(pkt, decode(pkt))),
            fifo.we.eq(new),
            self.overflow.eq(fifo.we & ~fifo.writable),
            fifo.re.eq(self.take),
        ]
        if nf > 1:
            # (no sh[LINK_WIDTH:] with 2 flits: Migen prints that zero-width slice as the backward 2-bit
            # select sh[9:10] in the Verilog)
            # registered: the last flit is due next cycle
            self.sync += new.eq((cnt == nf - 2) & (rx.valid | (cnt != 0)))
            self.sync += If(rx.valid | (cnt != 0),
                If(cnt == 0, hdr.eq(rx.data)),
                If(cnt == nf - 1, cnt.eq(0)).Else(cnt.eq(cnt + 1),
                    sh.eq(Cat(sh[LINK_WIDTH:], rx.data) if nf > 2 else rx.data)))
        # The decoded header of the head two cycles ahead (registered in `nxt`, so that the decisions are made
        # from registers): the FIFO's head (a link chosen is not offered again before the merge of its packet is
        # in the flags, so the FIFO's head then stays), else the packet being received: its first flit in hdr, or
        # on the wire now when it can complete within two cycles (three flits or fewer). A one-flit packet is
        # not known two cycles ahead: `known` says the header is a real one.
        incoming = rx.data if nf == 1 else hdr if nf > 3 else Mux(cnt == 0, rx.data, hdr)
        # (`known` stays a register loaded with 1 with longer packets: as a constant, the same logic placed 11 MHz
        # slower at one seed of the grid; docs/sync.md)
        nxt, known = Signal(n_idents + 1, name="nxt_hdr"), Signal(name="known")
        self.sync += [
            nxt.eq(Mux(nonempty, fifo.dout[pb:], decode(incoming))),
            known.eq(nonempty | rx.valid if nf == 1 else 1),
        ]
        oh, is_bad = nxt[:n_idents], nxt[n_idents]
        a_cur, a_nxt, done = flags
        ok, to_cur, drop = Signal(name="dec_ok"), Signal(name="dec_to_cur"), Signal(name="dec_drop")
        to_cur_q, drop_q = Signal(), Signal()
        # per slot: wait while this link's packet is for a round after the current one and the current round
        # is done (it retires once its messages are sent: within two cycles or later; the next round's
        # packets then go to the round that becomes current)
        wait_v, drop_v = Signal(n_idents), Signal(n_idents)
        self.comb += [
            wait_v.eq(a_cur & done),
            drop_v.eq(a_cur & a_nxt & ~done),
        ]
        self.sync += [
            ok.eq(known & (is_bad | ((wait_v & oh) == 0))),
            to_cur.eq((a_cur & oh) == 0),
            drop.eq(is_bad | ((drop_v & oh) != 0)),
            # a next-round packet for a slot that retires in the cycle it is taken becomes a current-round one
            # (`retire_next` now: the slots retiring next cycle; a chosen link is not taken from now, so the
            # head next cycle is the one `nxt` decodes)
            to_cur_q.eq(to_cur | ((retire_next & oh) != 0)), drop_q.eq(drop),
        ]
        self.comb += [
            self.valid.eq((nonempty | (new if bypass else 0)) & ~busy & ok),
            self.entry.eq(Cat(head, to_cur_q, drop_q)),
        ]


class SyncSelect(LiteXModule):
    """Stage 1: a round-robin choice among the links' offers (`choice`, one-hot), registered (`granted`); the
    cycle after, the chosen link's entry (its FIFO's head, taken then, with the slot decisions it was offered
    with) is registered: `valid`, `src` (link index), the packet fields, `to_cur` and `drop`. `suppress`: a
    trigger waits (the node keeps every link from offering the cycle after)."""
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

        self.granted = Signal(max(nl, 1))
        if not nl:
            return
        req, above = Signal(nl), Signal(nl)
        g_valid = Signal()
        self.comb += req.eq(Cat(*[r.valid for r in receivers]))
        # round-robin: the links after the previous choice first (the mask follows a choice a cycle later; the
        # chosen link is busy then)
        valid, self.choice = round_robin_pick_masked(self, req, above, nl)
        onehot = self.choice
        self.sync += [
            g_valid.eq(valid), self.granted.eq(onehot),
            If(g_valid, above.eq(~(self.granted | (self.granted - 1)))),
        ]
        self.comb += [r.take.eq(self.granted[i]) for i, r in enumerate(receivers)]
        chosen = Signal(pb + 2)
        self.comb += chosen.eq(reduce_or([Mux(self.granted[i], r.entry, 0) for i, r in enumerate(receivers)]))
        self.sync += [
            self.valid.eq(g_valid), self.src.eq(onehot_index(self.granted, nl)),
            self.ident.eq(pkt_h.field(chosen, "ident")), self.mode.eq(pkt_h.field(chosen, "mode")),
            self.err.eq(pkt_h.field(chosen, "error")), self.value.eq(pkt_h.field(chosen, "value")),
            self.to_cur.eq(chosen[pb]), self.drop.eq(chosen[pb + 1]),
        ]


class SyncMerge(LiteXModule):
    """Stages 2 and 3. Read (R): the selected packet, else the local trigger (`sink`), reads its slot's
    entries in both banks into registers (each with the write pending now in its place: a one-hot register
    per bank, looked up by each source's ident, the source picked after), its mode decoded (`reduction`) and
    whether the merge stage writes the same entry now. Merge (M): picks the round's values
    (the newest write wins; `r_t*`), combines them with the contribution by the contribution's mode and
    drives the merge port of SyncSlots.

    A trigger waits while a packet is selected, its slot retires or a trigger was taken the cycle before (its
    flags are not in yet); `suppress` then keeps every link from being chosen the cycle after, so it waits at
    most three cycles. Events: `ev_trigger_drop` (in the cycle the trigger is taken), `ev_packet_drop` (from R;
    the node adds the links' overflows), `ev_mismatch` (from M: modes differed)."""
    def __init__(self, sink, sel, slots, n_links, n_idents, value_width):
        bit = slots.bit
        local = n_links
        self.ev_mismatch, self.ev_trigger_drop, self.ev_packet_drop = Signal(), Signal(), Signal()
        # the merged contribution (stage M: SyncCompletion presents a round it completes the cycle after)
        self.m_ok, self.m_ident, self.m_cur, self.m_src = slots.ok, slots.ident, slots.to_cur, slots.src
        self.m_mode, self.m_err, self.m_acc = slots.m_mode, slots.m_err, slots.m_acc

        # # #

        # Stage R.
        t_self, t_done, t_nself, t_ret = (bit(v, sink.ident) for v in (slots.self_, slots.done, slots.nself,
                                                                       slots.retire))
        t_bad, trig_q = Signal(), Signal()
        e_valid, e_mode, e_err, e_val, e_drop = Signal(), Signal(MODE_BITS), Signal(), Signal(value_width), Signal()
        e_src, e_ident, e_cur = Signal(max=n_links + 2), Signal(IDENT_BITS), Signal()
        self.comb += [
            t_bad.eq(bad(sink.ident, sink.mode, n_idents)),
            sink.ready.eq(~sel.valid & ~trig_q & (t_bad | ~t_ret)),
            sel.suppress.eq(sink.valid & ~sink.ready),
            If(sel.valid,
                e_valid.eq(1), e_src.eq(sel.src), e_ident.eq(sel.ident), e_mode.eq(sel.mode), e_err.eq(sel.err),
                e_val.eq(sel.value), e_cur.eq(sel.to_cur), e_drop.eq(sel.drop),
            ).Else(
                e_valid.eq(sink.valid & sink.ready), e_src.eq(local), e_ident.eq(sink.ident),
                e_mode.eq(sink.mode), e_err.eq(0), e_val.eq(sink.value), e_cur.eq(~t_self),
                e_drop.eq(t_bad | ~(~t_self | (t_done & ~t_nself))),
            ),
        ]
        self.sync += trig_q.eq(sink.valid & sink.ready)
        self.comb += [
            self.ev_trigger_drop.eq(e_valid & (e_src == local) & e_drop),
            self.ev_packet_drop.eq(e_valid & (e_src != local) & e_drop),
        ]
        # The entry read is the one stage M writes: a next-round contribution to a slot that retires in stage R
        # reads the bank that becomes current, and counts as a current-round one in stage M (a retirement in
        # the pick cycle: SyncSelect). A slot retiring in stage M gets only next-round contributions (its
        # current round is complete).
        adr, fwd = Signal(slots.ib + 1), Signal()
        r_mode, r_err, r_val = Signal(MODE_BITS), Signal(), Signal(value_width)
        r_op = [Signal() for _ in reduction(e_mode)]
        r_act, r_bank, r_fwd = Signal(), Signal(), Signal()
        width = len(slots.w_dat)
        r_banks = [Signal(width), Signal(width)]
        self.comb += [
            adr.eq(slots.entry(e_ident, ~e_cur)),
            fwd.eq(self.m_ok & (slots.adr == adr)),
        ]
        self.sync += [
            self.m_ok.eq(e_valid & ~e_drop), self.m_src.eq(e_src),
            self.m_ident.eq(e_ident), self.m_cur.eq(e_cur | bit(slots.retire, e_ident)), slots.adr.eq(adr),
            r_mode.eq(e_mode), r_err.eq(e_err), r_val.eq(e_val), *[r.eq(v) for r, v in zip(r_op, reduction(e_mode))],
            r_act.eq(fwd | Mux(e_cur, bit(slots.act, e_ident), bit(slots.nact, e_ident))),
            # the entry in both banks, each with the write pending now in its place (`w_oh`, looked up by each
            # source's ident: no compare on this path); stage M picks, or takes the write that M makes now
            # (then in slots.w_dat)
            *[r.eq(Mux(Mux(sel.valid, bit(w_oh, sel.ident), bit(w_oh, sink.ident)), slots.w_dat, data))
              for r, w_oh, data in zip(r_banks, slots.w_oh, slots.read_banks(e_ident))],
            r_bank.eq(adr[slots.ib]), r_fwd.eq(fwd),
        ]
        # Stage M.
        mism = Signal()
        r_terr, r_tmode, r_tacc = Signal(), Signal(MODE_BITS), Signal(value_width)
        self.comb += [
            Cat(r_terr, r_tmode, r_tacc).eq(Mux(r_fwd, slots.w_dat, Mux(r_bank, *r_banks[::-1]))),
            mism.eq(r_act & (r_tmode != r_mode)),
            self.m_mode.eq(Mux(r_act, r_tmode, r_mode)),
            self.m_err.eq(r_err | (r_act & (r_terr | mism))),
            # the contribution's reduction (with another mode stored the round is in error, its value undefined)
            self.m_acc.eq(combine(self, r_op, r_act, r_tacc, r_val)),
            self.ev_mismatch.eq(self.m_ok & mism),
        ]


class SyncCompletion(LiteXModule):
    """Presents completions on `source` from registers: the lowest complete slot, held while the sink stalls;
    when none is waiting, the round that this cycle's merge completes is presented the cycle after."""
    def __init__(self, source, slots, merge, neighbours, n_idents):
        nl = len(neighbours)
        bit = slots.bit

        # # #

        cand, rest = Signal(n_idents, name="cand"), Signal(n_idents, name="rest")
        c_valid, c_ident, fresh, taken = Signal(name="c_valid"), Signal(IDENT_BITS, name="c_ident"), Signal(), Signal()
        have = Cat(bit(slots.self_, merge.m_ident), *[bit(slots.arr[d], merge.m_ident) for d in neighbours])
        from_src = Cat(merge.m_src == nl, *[merge.m_src == i for i in range(nl)])
        self.comb += [
            cand.eq(slots.complete & ~slots.done),
            taken.eq(c_valid & source.ready),
            rest.eq(cand & ~Mux(taken, C(1, n_idents) << c_ident, 0)),
            fresh.eq(merge.m_ok & merge.m_cur & ((have | from_src) == (1 << (nl + 1)) - 1)),
        ]
        any_, pe, _ = first_set(self, rest, n_idents)
        self.sync += If(~c_valid | source.ready,
            c_valid.eq(any_ | fresh), c_ident.eq(Mux(any_, pe, merge.m_ident)))
        self.comb += [
            source.valid.eq(c_valid), source.ident.eq(c_ident),
            Cat(source.error, source.mode, source.value).eq(slots.read(slots.entry(c_ident), pending=True)),
            slots.cpl_taken.eq(taken), slots.cpl_ident.eq(c_ident),
        ]


class SyncTransmitter(LiteXModule):
    """The links' transmitters. Each cycle every link registers the slots it has a message pending for (own
    trigger in, the message's dependencies `common.deps` arrived, not sent yet, not starting now), and the
    cycle after its choice: the lowest of them, with its RAM entry (the slot's bank bit as of the next cycle).
    A link that is idle with a choice starts it: the first flit from the slot state (through a RAM read port
    of its own, addressed by those registers), the others from its snapshot register, each
    through the link's output register (on the wire the cycle after). A message stays pending until its link
    sends it, so a choice two cycles old still holds."""
    def __init__(self, tx, slots, neighbours, n_idents, value_width):
        nf, pb = n_flits(value_width), packet_bits(value_width)
        pkt_h = packet_header(value_width)
        pad = [C(0, nf * LINK_WIDTH - pb)] if nf * LINK_WIDTH > pb else []

        # # #

        for d in neighbours:
            link = tx[d]
            # directions without a neighbour count as arrived
            need = [slots.arr[o] for o in deps(d) if o in neighbours]
            pend, pend_q = Signal(n_idents), Signal(n_idents)
            ch_v, ch_idx, ch_oh, ch_bank = Signal(), Signal(IDENT_BITS), Signal(n_idents), Signal()
            idle, start = Signal(), slots.tx_start[d]
            sh = Signal(max((nf - 1) * LINK_WIDTH, 1))
            rem = Signal(max=max(nf, 2))
            b_err, b_mode, b_acc = Signal(), Signal(MODE_BITS), Signal(value_width)
            pkt = Signal(nf * LINK_WIDTH)
            # the message starting now is sent from next cycle on; with one-flit packets a link starting now is
            # idle next cycle, and its choice then comes from the pending slots of the cycle before
            sending = ~Mux(start, ch_oh, 0)
            self.comb += [
                pend.eq(reduce_and([slots.self_eff, *need, ~slots.sent[d]])),
                idle.eq(rem == 0),
                start.eq(idle & ch_v),
                slots.tx_slot[d].eq(ch_oh),
                Cat(b_err, b_mode, b_acc).eq(slots.read(Cat(ch_idx[:slots.ib], ch_bank))),
                pkt.eq(Cat(pkt_h.value(ident=ch_idx, mode=b_mode, error=b_err, value=b_acc)[:pb], *pad)),
            ]
            # every flit leaves from a register: the link's wire starts at a flip-flop, in the grid too
            self.sync += [
                link.valid.eq(~idle | start),
                link.data.eq(Mux(idle, pkt[:LINK_WIDTH], sh[:LINK_WIDTH])),
            ]
            v, idx, oh = first_set(self, pend_q & sending if nf == 1 else pend_q, n_idents)
            # the choice's RAM entry registered with it: its slot's bank bit as of next cycle
            self.sync += [pend_q.eq(pend & sending), ch_v.eq(v), ch_idx.eq(idx), ch_oh.eq(oh),
                          ch_bank.eq((slots.bank_next & oh) != 0)]
            if nf > 1:
                shift = [sh.eq(sh[LINK_WIDTH:])] if nf > 2 else []     # (no zero-width slice, as above)
                self.sync += If(~idle, *shift, rem.eq(rem - 1)).Elif(start,
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

    Pipeline: a received packet is chosen (round-robin over the links) in the cycle its last flit arrives,
    taken into the select register with its slot decisions the cycle after, its slot round is read into
    registers the cycle after that (a local trigger: in the cycle it is taken), and it is merged into the slot
    state the cycle after that. One merge a cycle. Each link registers its pending messages in the cycle a
    message's condition holds, and the slot it sends next the cycle after; the first flit is read the cycle
    after that into the link's output register and is on the wire the cycle after that (the other flits from a
    snapshot register). Hop latency max(n_flits, 3) + 6 cycles without contention (`common.min_hop_latency`);
    a completion is presented the cycle after its last contribution is merged.
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
        busy = []          # per link: the selector chose this link's packet one to four cycles ago (set below)
        receivers = []
        for i, d in enumerate(neighbours):
            flags = (slots.arr[d], slots.narr[d], slots.done)
            busy.append(Signal())
            rcv = SyncLinkReceiver(self.rx[d], flags, slots.retire_next, busy[i], n_idents, value_width)
            setattr(self, f"rx_{DIR_NAMES[d]}_receiver", rcv)
            receivers.append(rcv)
        self.select = sel = SyncSelect(receivers, value_width)
        for i in range(len(neighbours)):
            # a register: chosen in one of the last four cycles, or a waiting trigger pauses the selector
            chosen = [sel.choice[i], sel.granted[i], Signal(), Signal()]
            self.sync += [chosen[2].eq(chosen[1]), chosen[3].eq(chosen[2]),
                          busy[i].eq(reduce_or(chosen) | sel.suppress)]
        self.merge = merge = SyncMerge(self.sink, sel, slots, len(neighbours), n_idents, value_width)
        self.completion = SyncCompletion(self.source, slots, merge, neighbours, n_idents)
        self.transmitter = SyncTransmitter(self.tx, slots, neighbours, n_idents, value_width)
        self.comb += [
            self.ev_mismatch.eq(merge.ev_mismatch),
            self.ev_trigger_drop.eq(merge.ev_trigger_drop),
            self.ev_rx_drop.eq(sum(r.overflow for r in receivers) + merge.ev_packet_drop),
        ]

"""RIFL Layer 2 reassembly contexts: the context table keyed by reply route, its skip entries, timeouts and
the decision taken for each unit."""
from migen import *

from litex.gen import LiteXModule

from cores.rifl.common import (
    L2_DST_PORTS, L2_HEADER, L2_HEADER_BITS, L2_LENGTH_BYTES, L2_MAX_PACKET_BYTES, L2_RX_TIMEOUT_BITS,
    L2_RX_TIMEOUT_STEPS, MAX_HOPS, SEGMENT_BYTES)


FREE, OPEN, DONE = 1, 2, 4         # reassembly context states (one-hot: a state's test is one bit)
AGE_MAX = L2_RX_TIMEOUT_STEPS + 1  # the age (in timeout ticks) at which an entry expires


def _first_index(module, vec, idx, n, sync=None):
    """idx = the lowest i with vec[i] set (unchanged if none), comb or, with `sync` (a condition), registered."""
    statements = [If(vec[i], idx.eq(i)) for i in reversed(range(n))]
    if sync is None:
        module.comb += statements
    else:
        module.sync += If(sync, statements)


def key_form(header):
    """The reply route of `header` (cores.rifl.common.reply_route) up to a bijection, for comparisons: Total
    Hops (0 above MAX_HOPS, whose reply route is 0) and the Dst Ports the reply route is made of (the last t
    for Total Hops t, which it negates in reverse order), the others zero. Two headers have the same reply
    route iff they have the same form, a LUT level where the reply route has carry chains."""
    t = L2_HEADER.field(header, "total_hops")
    ports = [L2_HEADER.field(header, name) for name in L2_DST_PORTS]
    return Cat(Mux(t <= MAX_HOPS, t, 0),
               *[Mux((t >= MAX_HOPS - i) & (t <= MAX_HOPS), p, 0) for i, p in enumerate(ports)])


class _Entries:
    """The context table's registers per entry, an Array of one signal an entry each: n contexts (state,
    key, header, length, next segment, segments to come, last-segment flag, key_form, age, aged) and n skip
    entries (valid, key_form, segments to drop, one left, age, aged); `form`: key_form of the unit's header,
    registered with it. The selections over them: the FREE and the DONE contexts and the free skip entries
    (bit vectors), the first free of each, and the first context and skip entry matching the unit's key
    (index and one-hot, registered)."""
    def __init__(self, n, cb, slots, form_bits):
        self.st = Array(Signal(3, reset=FREE, name=f"ctx{i}_state") for i in range(n))
        self.c_key = Array(Signal(L2_HEADER_BITS, name=f"ctx{i}_key") for i in range(n))
        self.c_hdr = Array(Signal(L2_HEADER_BITS, name=f"ctx{i}_header") for i in range(n))
        self.c_len = Array(Signal(8 * L2_LENGTH_BYTES, name=f"ctx{i}_length") for i in range(n))
        self.c_seg = Array(Signal(max=slots + 1, name=f"ctx{i}_segment") for i in range(n))
        self.c_left = Array(Signal(8, name=f"ctx{i}_left") for i in range(n))    # segments to come
        self.c_fin = Array(Signal(name=f"ctx{i}_final") for i in range(n))      # c_left == 1 (while OPEN)
        self.s_on = Array(Signal(name=f"skip{i}_valid") for i in range(n))
        self.s_key = Array(Signal(form_bits, name=f"skip{i}_key") for i in range(n))     # key_form
        self.c_form = Array(Signal(form_bits, name=f"ctx{i}_form") for i in range(n))    # key_form(c_hdr)
        self.form = Signal(form_bits)               # key_form(hdr), registered with it (at `start`)
        self.s_left = Array(Signal(8, name=f"skip{i}_left") for i in range(n))
        self.s_one = Array(Signal(name=f"skip{i}_one") for i in range(n))       # s_left == 1
        self.c_age = Array(Signal(max=AGE_MAX + 1, name=f"ctx{i}_age") for i in range(n))
        self.s_age = Array(Signal(max=AGE_MAX + 1, name=f"skip{i}_age") for i in range(n))
        self.c_aged = Array(Signal(name=f"ctx{i}_aged") for i in range(n))      # c_age == AGE_MAX
        self.s_aged = Array(Signal(name=f"skip{i}_aged") for i in range(n))     # s_age == AGE_MAX
        self.free = Signal(n)
        self.closed = Signal(n)
        self.s_free = Signal(n)
        self.hit_i = Signal(cb)
        self.free_i = Signal(cb)
        self.s_free_i = Signal(cb)
        self.hit_oh = Signal(n)
        self.s_hit_oh = Signal(n)


class L2ContextTable(LiteXModule):
    """The reassembler's contexts and skip entries, and the decision taken for each unit.

    n_sources contexts (FREE -> OPEN while segments arrive -> DONE until delivered) of `slots` segments
    (packets up to max_packet bytes), keyed by the reply route, and n_sources skip entries (key, segments
    left to drop). The key matches (compared in key_form, the skip entries holding that form) of hdr_now
    are registered at beat 0 or, late_match, at the beat before the decision (`pre_decision`) from partial
    matches (MATCH_CHUNK bits each) of its form registered at beat 0 (`beat0`), each register loaded every
    cycle its beat is offered, the last when it is taken; at
    `decide` the unit (key, hdr, length) continues an OPEN context, is skipped, or is a first
    segment that takes a FREE context or is dropped (bad length, too long, none free: its continuation
    segments enter a skip entry). `wait`: a first segment finds no FREE context while one is DONE (which
    frees itself once delivered; that state is registered, so the wait ends one cycle after the context
    is freed). The decision: ctx, seg (segment index), keep (store the body), complete
    (the packet's last segment).
    Timeout: a tick every timeout_cycles / L2_RX_TIMEOUT_STEPS cycles (paused while `stalled`) ages OPEN
    contexts and skip entries; a decision resets its entry's age; an entry L2_RX_TIMEOUT_STEPS + 1 ticks
    old expires, one a cycle, outside `hold` (an OPEN context's key then enters a skip entry).
    `out_beat` / `out_last` / `out_ctx`: a beat of context out_ctx's packet left the reassembler; its last
    one frees the context. `lookup` -> lookup_length, lookup_header, lookup_key: a context's packet
    parameters (for the output). `length_now` / `length_zero` / `length_load`: the length being registered
    (0 if length_zero, else length_now; its checks are registered with it). plan: a function (module,
    length) -> [(name, signal)] of figures of a packet's length (`read_plan`), computed from the registered
    length and registered the cycle after, written to the context a decision allocates the cycle after
    the decision (read only once the packet is complete) and kept per context: lookup_plan[name] (the
    looked up context's).
    """
    MATCH_CHUNK = 4     # bits of a registered partial key match (late_match)

    def __init__(self, n_sources, slots, max_packet, plan=None, late_match=False):
        n = n_sources
        cb = bits_for(n - 1)
        self.hdr_now = Signal(L2_HEADER_BITS)
        self.key = Signal(L2_HEADER_BITS)
        self.hdr = Signal(L2_HEADER_BITS)
        self.length = Signal(8 * L2_LENGTH_BYTES)
        self.length_now = Signal(8 * L2_LENGTH_BYTES)
        self.length_zero = Signal()
        self.length_load = Signal()
        self.start = Signal()
        self.decide = Signal()
        self.beat0 = Signal()
        self.pre_decision = Signal()
        self.at_decision = Signal()
        self.hold = Signal()
        self.stalled = Signal()
        self.timeout_cycles = Signal(L2_RX_TIMEOUT_BITS)
        self.wait = Signal()
        self.ctx = Signal(cb)
        self.seg = Signal(max(log2_int(slots), 1))
        self.keep = Signal()
        self.complete = Signal()
        self.out_beat = Signal()
        self.out_last = Signal()
        self.out_ctx = Signal(cb)
        self.lookup = Signal(cb)
        self.lookup_length = Signal(8 * L2_LENGTH_BYTES)
        self.lookup_header = Signal(L2_HEADER_BITS)
        self.lookup_key = Signal(L2_HEADER_BITS)
        self.events = {name: Signal() for name in ("packets", "bad_length", "no_context", "too_long", "orphans",
                                                        "untracked", "timeouts")}

        # # #

        e = _Entries(n, cb, slots, len(key_form(self.hdr)))
        cont, skip, first = self._key_matches(e, n, late_match)
        plan_we, plan_ctx = self._plans(plan, n, cb)
        len_bad, len_long, len_multi, len_fin, len_skip = self._length_checks(max_packet)
        alloc, to_skip = self._decision(e, cont, first, len_bad, len_long, len_multi)
        expire, old_i = self._timeout(e, n, cb)
        self._prepare_free_entries(e, old_i, len_skip, len_fin)
        self._decision_updates(e, n, cont, skip, alloc, to_skip, plan_we, plan_ctx)
        self.comb += [
            self.lookup_length.eq(e.c_len[self.lookup]),
            self.lookup_header.eq(e.c_hdr[self.lookup]),
            self.lookup_key.eq(e.c_key[self.lookup]),
            self.events["orphans"].eq(self.decide & skip),
            self.events["untracked"].eq(((self.decide & to_skip) | expire) & (e.s_free == 0)),
            self.events["timeouts"].eq(expire),
        ]

    def _key_matches(self, e, n, late_match):
        """The selections of `e` and the unit's case, registered at the beat before the decision: (cont: it
        continues an OPEN context, skip: a skip entry drops it, first: a first segment)."""
        st, s_on, s_key, c_form, hdr_now = e.st, e.s_on, e.s_key, e.c_form, self.hdr_now
        free, closed, s_free, hit_oh, s_hit_oh = e.free, e.closed, e.s_free, e.hit_oh, e.s_hit_oh
        # Key matches are registered at the beat before the decision (`pre_decision`: in every cycle that beat
        # is offered, the last time when it is taken, so the handshake is not their enable), from the form
        # registered at beat 0 (`beat0`, likewise) when that is a later beat, else from the header's form at
        # beat 0: open contexts and skip entries change only at decisions and timeouts, which never fall
        # between a unit's beat 0 being taken and its decision; free/DONE states are taken live.
        hit_now, s_hit_now = Signal(n), Signal(n)
        form_now = Signal(len(key_form(hdr_now)))
        self.comb += [
            form_now.eq(key_form(hdr_now)),
            free.eq(Cat(*[st[i][0] for i in range(n)])),
            closed.eq(Cat(*[st[i][2] for i in range(n)])),
            s_free.eq(~Cat(*s_on)),
        ]
        if late_match:
            # The key compares split in MATCH_CHUNK-bit partial matches of the header's form, registered at
            # beat 0 (`beat0`, each cycle the beat is offered, the last when it is taken): the entries' keys
            # do not change from then to the decision, as the states above; at the beat before the decision
            # the registered partial matches and the live states make the matches.
            fw = len(form_now)
            chunks = [(a, min(a + self.MATCH_CHUNK, fw)) for a in range(0, fw, self.MATCH_CHUNK)]
            c_part = [Signal(len(chunks), name=f"ctx{i}_match") for i in range(n)]
            s_part = [Signal(len(chunks), name=f"skip{i}_match") for i in range(n)]
            self.sync += If(self.beat0,
                [c_part[i].eq(Cat(*[c_form[i][a:b] == form_now[a:b] for a, b in chunks])) for i in range(n)],
                [s_part[i].eq(Cat(*[s_key[i][a:b] == form_now[a:b] for a, b in chunks])) for i in range(n)],
            )
            self.comb += [
                hit_now.eq(Cat(*[st[i][1] & (c_part[i] == 2**len(chunks) - 1) for i in range(n)])),
                s_hit_now.eq(Cat(*[s_on[i] & (s_part[i] == 2**len(chunks) - 1) for i in range(n)])),
            ]
        else:
            self.comb += [
                hit_now.eq(Cat(*[st[i][1] & (c_form[i] == form_now) for i in range(n)])),
                s_hit_now.eq(Cat(*[s_on[i] & (s_key[i] == form_now) for i in range(n)])),
            ]
        _first_index(self, hit_now, e.hit_i, n, sync=self.pre_decision)
        # the first matches one-hot too: each entry's update at the decision is enabled by its bit (no read
        # multiplexer before the update's logic)
        self.sync += If(self.pre_decision, [oh[i].eq(vec[i] & (vec[:i] == 0) if i else vec[i])
                                            for oh, vec in ((hit_oh, hit_now), (s_hit_oh, s_hit_now)) for i in range(n)])
        for vec, idx in ((free, e.free_i), (s_free, e.s_free_i)):
            _first_index(self, vec, idx, n)
        # The unit's case, registered with the matches: it continues an open context, is skipped, or is a first
        # segment.
        cont, skip, first = Signal(), Signal(), Signal()
        self.sync += If(self.beat0, e.form.eq(form_now))
        self.sync += If(self.pre_decision,
            cont.eq(hit_now != 0),
            skip.eq((hit_now == 0) & (s_hit_now != 0)),
            first.eq((hit_now == 0) & (s_hit_now == 0)),
        )
        return cont, skip, first

    def _plans(self, plan, n, cb):
        """The read plans kept per context (lookup_plan: the looked up context's); returns the write enable and
        context of the plan registered from `length`."""
        # The plan, from the registered length, registered in the cycle after (`len_plan`), is written to the
        # context allocated at a decision in the cycle after it (read only once the packet is complete).
        plan_now = plan(self, self.length) if plan else []
        len_plan = [Signal(len(sig), name=f"len_{name}") for name, sig in plan_now]
        c_plan = [Array(Signal(len(sig), name=f"ctx{i}_{name}") for i in range(n)) for name, sig in plan_now]
        plan_we, plan_ctx = Signal(), Signal(cb)
        self.lookup_plan = {}
        for (name, sig), reg, arr in zip(plan_now, len_plan, c_plan):
            self.lookup_plan[name] = Signal(len(sig), name=f"lookup_{name}")
            self.comb += self.lookup_plan[name].eq(arr[self.lookup])
            self.sync += [reg.eq(sig), If(plan_we, arr[plan_ctx].eq(reg))]
        return plan_we, plan_ctx

    def _length_checks(self, max_packet):
        """`length`'s checks, registered with it: (bad, longer than max_packet, more than one segment, at most
        two, segments after the first)."""
        length_now = self.length_now
        len_bad, len_long = Signal(), Signal()      # `length`'s checks, registered with it
        len_multi, len_fin = Signal(), Signal()         # more than one segment, at most two
        len_skip = Signal(8)                            # segments after the first
        # The checks of a zero length (a zero beat completing a short Layer 1 packet) are constants: the
        # zero case does not lie between the beat's bytes and the carry chains.
        self.sync += If(self.length_load,
            If(self.length_zero,
                len_bad.eq(1), len_long.eq(0), len_multi.eq(0), len_fin.eq(1), len_skip.eq(0),
            ).Else(
                len_bad.eq((length_now == 0) | (length_now > L2_MAX_PACKET_BYTES)),
                len_long.eq(length_now > max_packet),
                # from the length itself, the stream (length + prefix) not summed first: one carry chain each
                len_multi.eq(length_now > SEGMENT_BYTES - L2_LENGTH_BYTES),       # stream > SEGMENT_BYTES
                len_fin.eq(length_now <= 2 * SEGMENT_BYTES - L2_LENGTH_BYTES),    # stream <= 2 SEGMENT_BYTES
                len_skip.eq((length_now + L2_LENGTH_BYTES - 1) >> 8),             # ceil(stream / SEGMENT_BYTES) - 1
            ),
        )
        return len_bad, len_long, len_multi, len_fin, len_skip

    def _decision(self, e, cont, first, len_bad, len_long, len_multi):
        """The decision (wait, ctx, seg, keep, complete) and its events; returns (alloc: a first segment takes
        a FREE context, to_skip: its continuations enter a skip entry)."""
        free, closed, hit_i = e.free, e.closed, e.hit_i
        dec, ev = self.decide, self.events
        bad_len, too_long, no_ctx, alloc, to_skip = (Signal() for _ in range(5))
        # `busy` (no FREE context, one DONE), registered: a cycle late, but between decisions states only
        # leave OPEN and DONE (expiry, delivery), so a stale `busy` can only hold a unit one cycle longer, never
        # let it pass while every context is busy (and the cycle before a decision beat has no decision).
        busy = Signal()
        self.sync += busy.eq((free == 0) & (closed != 0))
        self.comb += [
            bad_len.eq(first & len_bad),
            too_long.eq(first & ~bad_len & len_long),
            self.wait.eq(first & ~len_bad & ~len_long & busy),
            no_ctx.eq(first & ~bad_len & ~too_long & (free == 0) & (closed == 0)),
            alloc.eq(first & ~bad_len & ~too_long & (free != 0)),
            to_skip.eq((too_long | no_ctx) & len_multi),
            self.complete.eq(Mux(cont, e.c_fin[hit_i], ~len_multi)),
            self.ctx.eq(Mux(cont, hit_i, e.free_i)),
            self.seg.eq(Mux(cont, e.c_seg[hit_i], 0)),
            self.keep.eq(cont | alloc),
            ev["packets"].eq(dec & alloc),
            ev["bad_length"].eq(dec & bad_len),
            ev["no_context"].eq(dec & no_ctx),
            ev["too_long"].eq(dec & too_long),
        ]
        return alloc, to_skip

    def _timeout(self, e, n, cb):
        """The idle timeout; returns (expire: an OPEN context expires, old_i: the context)."""
        st, s_on, c_age, s_age, c_aged, s_aged = e.st, e.s_on, e.c_age, e.s_age, e.c_aged, e.s_aged
        hold, s_free = self.hold, e.s_free
        # Idle timeout: a shared tick every timeout / L2_RX_TIMEOUT_STEPS cycles (paused while the sink is
        # stalled by the reassembler) ages OPEN contexts and skip entries; a segment's decision resets its
        # entry's age. An entry aged AGE_MAX ticks expires, one context a cycle, outside the
        # window between a unit's beat 0 (key matches registered) and its decision.
        tb = log2_int(L2_RX_TIMEOUT_STEPS)
        prescale = Signal(L2_RX_TIMEOUT_BITS - tb)
        tick, expire = Signal(), Signal()
        old, s_old = Signal(n), Signal(n)
        old_i = Signal(cb)
        self.comb += [
            old.eq(Cat(*[st[i][1] & c_aged[i] for i in range(n)])),
            s_old.eq(Cat(*[s_on[i] & s_aged[i] for i in range(n)])),
            expire.eq(~hold & (old != 0)),
        ]
        _first_index(self, old, old_i, n)
        self.sync += [
            If(~self.stalled,
                If(prescale + 1 >= self.timeout_cycles[tb:], prescale.eq(0), tick.eq(1)).Else(
                    prescale.eq(prescale + 1), tick.eq(0)),
            ).Else(tick.eq(0)),
            [If(tick & ~c_aged[i], c_age[i].eq(c_age[i] + 1), c_aged[i].eq(c_age[i] == AGE_MAX - 1))
             for i in range(n)],
            [If(tick & ~s_aged[i], s_age[i].eq(s_age[i] + 1), s_aged[i].eq(s_age[i] == AGE_MAX - 1))
             for i in range(n)],
            [If(~hold & s_old[i], s_on[i].eq(0)) for i in range(n)],
            If(expire,
                st[old_i].eq(FREE),
                If(s_free != 0, s_on[e.s_free_i].eq(1)),
            ),
        ]
        return expire, old_i

    def _prepare_free_entries(self, e, old_i, len_skip, len_fin):
        # The fields of the first free context and of the first free skip entry are written every cycle with
        # what an allocation (or a skip entry's creation) at this cycle would put there: a free entry's fields
        # are never read, so only the state (and the skip entry's valid flag) waits for the decision, and
        # the decision's fan-out is that of the state bits. A skip entry is created at a decision (the unit's
        # key) or by an expiry (the expired context's), never both in a cycle (no expiry during `hold`).
        free_i, s_free_i, form = e.free_i, e.s_free_i, e.form
        self.sync += [
            If(e.free != 0,
                e.c_age[free_i].eq(0), e.c_aged[free_i].eq(0),
                e.c_key[free_i].eq(self.key),
                e.c_hdr[free_i].eq(self.hdr),
                e.c_form[free_i].eq(form),
                e.c_len[free_i].eq(self.length),
                e.c_seg[free_i].eq(1),
                e.c_left[free_i].eq(len_skip),
                e.c_fin[free_i].eq(len_fin),
            ),
            If(e.s_free != 0,
                If(self.at_decision,
                    e.s_key[s_free_i].eq(form),
                    e.s_left[s_free_i].eq(len_skip),
                    e.s_one[s_free_i].eq(len_fin),
                ).Else(
                    e.s_key[s_free_i].eq(e.c_form[old_i]),
                    e.s_left[s_free_i].eq(e.c_left[old_i]),
                    e.s_one[s_free_i].eq(e.c_fin[old_i]),
                ),
                e.s_age[s_free_i].eq(0), e.s_aged[s_free_i].eq(0),
            ),
        ]

    def _decision_updates(self, e, n, cont, skip, alloc, to_skip, plan_we, plan_ctx):
        """The entries' updates at a decision, and the freeing of a delivered packet's context."""
        st, s_on, hit_oh, s_hit_oh = e.st, e.s_on, e.hit_oh, e.s_hit_oh
        c_age, c_aged, c_seg, c_left, c_fin = e.c_age, e.c_aged, e.c_seg, e.c_left, e.c_fin
        s_age, s_aged, s_left, s_one = e.s_age, e.s_aged, e.s_left, e.s_one
        self.sync += [
            plan_we.eq(self.decide & alloc),
            plan_ctx.eq(e.free_i),
            If(self.decide,
                [If(cont & hit_oh[i],
                    c_age[i].eq(0), c_aged[i].eq(0),
                    c_seg[i].eq(c_seg[i] + 1),
                    c_left[i].eq(c_left[i] - 1),
                    c_fin[i].eq(c_left[i] <= 2),
                    If(c_fin[i], st[i].eq(DONE)),         # complete
                ) for i in range(n)],
                If(alloc, st[e.free_i].eq(Mux(self.complete, DONE, OPEN))),
                [If(skip & s_hit_oh[i],
                    s_age[i].eq(0), s_aged[i].eq(0),
                    s_left[i].eq(s_left[i] - 1),
                    s_one[i].eq(s_left[i] == 2),
                    If(s_one[i], s_on[i].eq(0)),
                ) for i in range(n)],
                If(to_skip & (e.s_free != 0), s_on[e.s_free_i].eq(1)),
            ),
            If(self.out_beat, If(self.out_last, st[self.out_ctx].eq(FREE))),
        ]

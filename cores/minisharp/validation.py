"""MiniSharp validation: setup checks (MSSetupCheck), round robin over the ports' descriptors (MSPortSelect) and
the frame-by-frame validation against the context and slot tables (MSValidation)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import first_set, index_bits, reduce_or, shift_add
from cores.minisharp.common import (
    KIND_DATA, DROP, descriptor_layout, result_meta_layout, MS_HEADER_BYTES, ETH_MIN_FRAME, MS_COL_REDUCE,
    MS_RED_SUM, MS_FMT_FP32, MS_ACC_EXACT_FP32_MAG277, FP32_BYTES, KIND_TEARDOWN, DONE_WINDOW, TIMEOUT_BITS,
    TIMEOUT_TICK_LOG2, KIND_RESULT, MS_COL_ALLREDUCE, MS_FMT_EXACT, MS_ROLE_ROOT, MS_ROLE_CHILD, SETUP_RECORD_V02,
    SETUP_RECORD_V02_BYTES, v02_chunk_elements, MS_OP_COL_RES, MS_OP_COL_DATA, MS_OP_COL_PDATA,
    PARTIAL_ELEMENT_BYTES,
)
from cores.minisharp.tables import MSContextTable, MSSlotTable, tree_fields

MAX_CHUNK_INDEX = 1 << 16


def engine_meta_layout(num_ports):
    """Result meta record and its output ports (bit i: port i is in [egress_first, egress_last])."""
    return result_meta_layout + [("targets", num_ports)]


def job_layout(num_ports, n_slots):
    """A frame's job for the payload stage. lastw: payload words - 1; awords: words added (the rest, and
    every word of a dropped frame, is drained); emit: the frame completes its slot; init: it opens it;
    exact: its words are MS_FMT_EXACT elements (ADDP ops); xout: its results are exact elements; pas: a
    downward COL_RES (PASS ops)."""
    return [("port", index_bits(num_ports)), ("drop", 1), ("emit", 1), ("init", 1),
            ("slot", index_bits(n_slots)), ("lastw", 16), ("awords", 16), ("exact", 1), ("xout", 1), ("pas", 1)]


def payload_words(nbytes, lanes):
    """Words of `lanes` FP32 that hold `nbytes` payload bytes (the last one partly)."""
    return (nbytes + 4 * lanes - 1) >> log2_int(4 * lanes)


class MSSetupCheck(LiteXModule):
    """The rules of a setup record (combinational).

    record: the 32-byte record (byte 0 in bits 0..7; v0.1 records use bytes 0..15, the rest is ignored),
    minor2: the frame's minor version is 2 or more (the v0.2 record). reserved_bad: a reserved field is
    non-zero; checks: one flag per bad_setup rule (unsupported values, or v0.2 values in a v0.1 record, the
    EXACT format without `partials`, an EXACT output at a ROOT, egress range, uplink port, expected_local 0
    or > max_ranks, element_count 0 or more than 65536 chunks); no compare feeds another. The values a
    context keeps: expected (expected_local), lastchunk (number of chunks - 1), lastlen (elements of the
    last chunk), targets (bit i: port i is in [egress_first, egress_last]), tree[name] (tree_fields).
    A v0.2 context's chunks have `v02_chunk_elements(chunk_elements)` elements.
    """
    def __init__(self, num_ports, max_ranks, chunk_elements, partials=False):
        lce, lc2 = log2_int(chunk_elements), log2_int(v02_chunk_elements(chunk_elements))
        self.record = Signal(8 * SETUP_RECORD_V02_BYTES)
        self.minor2 = Signal()
        self.reserved_bad = Signal()
        self.checks = Signal(15)
        self.expected = Signal(bits_for(max_ranks))
        self.lastchunk = Signal(16)
        self.lastlen = Signal(lce + 1)
        self.targets = Signal(num_ports)
        self.tree = {name: Signal(w, name=f"tree_{name}") for name, w in tree_fields(num_ports)}

        # # #

        rf = {name: SETUP_RECORD_V02.field(self.record, name) for name in SETUP_RECORD_V02.fields}
        v2 = self.minor2
        child = v2 & (rf["role"] == MS_ROLE_CHILD)
        fmt_ok = lambda f: (f == MS_FMT_FP32) | (v2 & (f == MS_FMT_EXACT) if partials else 0)
        ec = rf["element_count"]
        self.comb += [
            self.reserved_bad.eq((rf["reserved0"] != 0) | (rf["reserved1"] != 0) |
                                 (v2 & ((rf["reserved2"] != 0) | (rf["reserved3"] != 0)))),
            self.checks.eq(Cat(
                ~((rf["collective"] == MS_COL_REDUCE) | (v2 & (rf["collective"] == MS_COL_ALLREDUCE))),
                rf["reduce_op"] != MS_RED_SUM,
                ~fmt_ok(rf["input_fmt"]), rf["acc_mode"] != MS_ACC_EXACT_FP32_MAG277,
                ~fmt_ok(rf["output_fmt"]), ~child & (rf["output_fmt"] != MS_FMT_FP32),
                v2 & (rf["role"] != MS_ROLE_ROOT) & (rf["role"] != MS_ROLE_CHILD),
                child & (rf["uplink_port"] >= num_ports),
                rf["egress_first"] > rf["egress_last"], rf["egress_last"] >= num_ports,
                rf["expected_local"] == 0, rf["expected_local"] > max_ranks,
                ec == 0, ~v2 & (ec > MAX_CHUNK_INDEX * chunk_elements),
                v2 & (ec > MAX_CHUNK_INDEX * v02_chunk_elements(chunk_elements)))),
            self.expected.eq(rf["expected_local"]),
            self.lastchunk.eq(Mux(v2, (ec - 1) >> lc2, (ec - 1) >> lce)),
            self.lastlen.eq(Mux(v2, Mux(ec[:lc2] == 0, 1 << lc2, ec[:lc2]),
                                Mux(ec[:lce] == 0, chunk_elements, ec[:lce]))),
            self.targets.eq(Cat(*[(rf["egress_first"] <= i) & (i <= rf["egress_last"]) for i in range(num_ports)])),
            self.tree["v02"].eq(v2), self.tree["child"].eq(child),
            self.tree["in_exact"].eq(v2 & (rf["input_fmt"] == MS_FMT_EXACT)),
            self.tree["out_exact"].eq(v2 & (rf["output_fmt"] == MS_FMT_EXACT)),
            self.tree["allreduce"].eq(v2 & (rf["collective"] == MS_COL_ALLREDUCE)),
            self.tree["uplink"].eq(Mux(child, 1 << rf["uplink_port"], 0)),
            self.tree["parent_rank"].eq(rf["parent_rank"]), self.tree["parent_mac"].eq(rf["parent_mac"]),
        ]



class MSPortSelect(LiteXModule):
    """Round-robin choice among `num_ports` descriptor sinks, one descriptor at a time.

    pick: the first port with a valid descriptor after the last one served (combinational); `start()` gives
    the statements (NextValue, for an FSM state) that register it as `sel` with a one-hot `fetch` that is
    each port's ready, `stop()` those that end the fetch: a port's ready is a flip-flop, so neither the
    FSM's state decode nor the selection reaches the descriptor FIFOs' read logic. desc: port sel's
    descriptor; fetching: high (a flip-flop) in the cycle it is taken; any_valid: some port has one.
    """
    def __init__(self, num_ports):
        pw = index_bits(num_ports)
        self.sinks = [stream.Endpoint(descriptor_layout) for _ in range(num_ports)]
        self.desc = stream.Endpoint(descriptor_layout)
        self.sel, self.pick = Signal(pw), Signal(pw)
        self.fetching, self.any_valid = Signal(name="fetching"), Signal()

        # # #

        self.fetch = fetch = Signal(num_ports)
        valids = [d.valid for d in self.sinks]
        self.comb += [
            Case(self.sel, {last: [If(valids[(last + 1 + k) % num_ports], self.pick.eq((last + 1 + k) % num_ports))
                                   for k in reversed(range(num_ports))]
                            for last in range(num_ports)}),
            [self.sinks[i].ready.eq(fetch[i]) for i in range(num_ports)],
            Case(self.sel, {i: self.sinks[i].connect(self.desc, omit={"ready"}) for i in range(num_ports)}),
            self.any_valid.eq(reduce_or(valids)),
        ]

    def start(self):
        return [NextValue(self.sel, self.pick), NextValue(self.fetch, 1 << self.pick), NextValue(self.fetching, 1)]

    def stop(self):
        return [NextValue(self.fetch, 0), NextValue(self.fetching, 0)]



class MSValidation(LiteXModule):
    """Validates the descriptors of `num_ports` ingress ports (round robin, one frame after the other).

    COL_SETUP validates the record (MSSetupCheck) and installs or replaces a context (MSContextTable).
    COL_DATA looks up the context and the chunk slot (MSSlotTable, keyed by context and Chunk Index) and
    checks rank, chunk index, payload length and duplicates (rank bitmap per slot); an accepted frame
    updates the slot (rank bit, count; the completing one frees it and emits the result `meta` record) and
    queues a `job` for the payload stage; a rejected one is reported on drop/drop_reason/drop_port and
    queues a drain job for its payload. `job` and `meta` leave through registered buffers.
    COL_TEARDOWN removes a context and frees its slots. Between frames, slots idle for `slot_timeout` ticks
    and contexts idle for `ctx_timeout` ticks (ticks of 2^tick_log2 cycles; 0: never) are freed.
    9 cycles a frame (5 for a setup); setup_done/chunk_done/teardown_done/ctx_expired pulse once per
    installed context/completed chunk/teardown/expired context, slots_expired counts the expired slots.
    """
    def __init__(self, num_ports, lanes, chunk_elements, n_contexts, n_slots, max_ranks,
                 window=DONE_WINDOW, tick_log2=TIMEOUT_TICK_LOG2, partials=False):
        self.desc_sinks = [stream.Endpoint(descriptor_layout) for _ in range(num_ports)]
        self.job = stream.Endpoint(job_layout(num_ports, n_slots))
        self.meta = stream.Endpoint(engine_meta_layout(num_ports))
        self.drop = Signal()
        self.drop_reason = Signal(max=len(DROP))
        self.drop_port = Signal(max=max(num_ports, 2))
        self.setup_done = Signal()
        self.chunk_done = Signal()
        self.teardown_done, self.ctx_expired = Signal(), Signal()
        self.slots_expired = Signal(max=n_slots + 1)
        self.slot_timeout, self.ctx_timeout = Signal(TIMEOUT_BITS), Signal(TIMEOUT_BITS)

        # # #

        if tick_log2 < 1:
            raise ValueError(f"tick_log2 must be >= 1, got {tick_log2}")
        lce = log2_int(chunk_elements)
        rw = bits_for(max_ranks)
        # Jobs and meta records leave through registered buffers: DECIDE's handshake does not reach the
        # queues' level logic and RAM.
        self.job_in = job_in = stream.Buffer(self.job.description, pipe_valid=True)
        self.meta_out = meta_out = stream.Buffer(self.meta.description, pipe_valid=True)
        self.comb += job_in.source.connect(self.job), meta_out.source.connect(self.meta)
        self.setup_check = MSSetupCheck(num_ports, max_ranks, chunk_elements, partials)
        self.contexts = contexts = MSContextTable(n_contexts, num_ports, rw, lce + 1, window)
        self.slots = slots = MSSlotTable(n_slots, n_contexts, max_ranks)
        self.select = select = MSPortSelect(num_ports)
        self.comb += [s.connect(d) for s, d in zip(self.desc_sinks, select.sinks)]
        self.comb += self.drop_port.eq(select.sel)

        self._add_frame_registers(chunk_elements, n_contexts, n_slots, max_ranks)
        self._add_ticks(tick_log2)
        self._any_cexp, self._cexp_i, _ = first_set(self, contexts.expired, n_contexts)
        self._connect_tables()
        # Context lookup (from d.coll): the match vector is registered (LOOKUP), then encoded (LOOKUP2).
        self._hit_vec = Signal(n_contexts)
        self._any_hit, self._hit_i, _ = first_set(self, self._hit_vec, n_contexts)
        self._any_free, self._free_i, _ = first_set(self, contexts.free, n_contexts)
        # Slot lookup (from ctx.idx, d.chunk): the match vector is registered (CTX), then encoded (CHECK1).
        self._shit_r = Signal(n_slots)
        self._any_shit, self._shit_i, _ = first_set(self, self._shit_r, n_slots)
        self._any_sfree, self._sfree_i, _ = first_set(self, slots.empty, n_slots)
        self._add_decision(num_ports, n_slots, lce, rw)
        self.fsm = FSM(reset_state="IDLE")
        self._add_frame_states(lanes, n_contexts, n_slots)
        self._add_data_states(lanes, chunk_elements, n_slots, window, rw)

    def _add_frame_registers(self, chunk_elements, n_contexts, n_slots, max_ranks):
        """The registers of the frame being validated: its descriptor (d), its context and slot lookups (ctx,
        slot: hit, index, a free one and its index), its checks and the values its decision writes."""
        rw = bits_for(max_ranks)
        cw, sw = bits_for(max(n_contexts, 2) - 1), bits_for(max(n_slots, 2) - 1)
        self._d = Record([("kind", 2), ("coll", 32), ("rank", 8), ("chunk", 16), ("pbytes", 16),
                          ("record", len(self.select.desc.record)), ("exact", 1), ("minor2", 1)], name="d")
        # The context also as one-hot (oh), for the slot table (its own flip-flops, placed with the table; no
        # decoder).
        self._ctx = Record([("hit", 1), ("idx", cw), ("free", 1), ("free_idx", cw), ("oh", n_contexts)], name="ctx")
        self._slot = Record([("hit", 1), ("idx", sw), ("free", 1), ("free_idx", sw)], name="slot")
        self._rank_bad, self._chunk_bad = Signal(name="rank_bad"), Signal(name="chunk_bad")
        self._dup, self._len_ok = Signal(name="dup"), Signal(name="len_ok")
        self._complete = Signal()
        # the chunk completed already; it is past the context's window
        self._late, self._ahead = Signal(name="late"), Signal(name="ahead")
        self._rbit = Signal(n_slots)
        self._cfull = [Signal(name=f"cfull{j}") for j in range(n_slots)]
        self._exp1 = Signal()
        self._exp_elems = Signal(max=chunk_elements + 1)
        self._is_last = [Signal(name=f"is_last{i}") for i in range(n_contexts)]   # d.chunk is context i's last chunk
        self._cur, self._init = Signal(max=max(n_slots, 2), name="cur"), Signal(name="init")
        self._nwords, self._awords = Signal(16, name="nwords"), Signal(16, name="awords")
        self._new_count = Signal(rw)
        self._rank_oh = Signal(max_ranks)

    def _add_ticks(self, tick_log2):
        """The idle-timeout ticks of both tables: one every 2^tick_log2 cycles."""
        prescaler, tick = Signal(tick_log2, name="prescaler"), Signal(name="tick")
        self.sync += prescaler.eq(prescaler + 1), tick.eq(prescaler == 0)
        self.comb += [
            self.contexts.tick.eq(tick), self.contexts.timeout.eq(self.ctx_timeout),
            self.slots.tick.eq(tick), self.slots.timeout.eq(self.slot_timeout),
        ]

    def _connect_tables(self):
        """The setup check and the tables read the frame's registers."""
        d, ctx, check, contexts, slots = self._d, self._ctx, self.setup_check, self.contexts, self.slots
        self.comb += [
            check.record.eq(d.record), check.minor2.eq(d.minor2),
            contexts.coll.eq(d.coll), contexts.chunk.eq(d.chunk), contexts.idx.eq(ctx.idx),
            slots.ctx_oh.eq(ctx.oh), slots.chunk.eq(d.chunk), slots.rank_oh.eq(self._rank_oh),
            slots.idx.eq(self._slot.idx),
        ]

    def _add_decision(self, num_ports, n_slots, lce, rw):
        """The selected context's registers (k), the data frame's decision (the first failing check) and the
        job and meta record it writes."""
        d, slot = self._d, self._slot
        slots, job_w, meta_w = self.slots, self.job_in.sink, self.meta_out.sink
        # Selected context, registered (state CTX).
        self._k = k = Record([("expected", rw), ("lastchunk", 16), ("targets", num_ports), ("islast", 1),
                              ("lastlen", lce + 1), ("base", 17), ("done", 1)] + tree_fields(num_ports), name="k")
        self.comb += slots.expected.eq(k.expected)
        self._is_res = is_res = Signal()     # the frame is a downward COL_RES
        self.comb += is_res.eq(d.kind == KIND_RESULT)
        self._fmt_bad, self._res_bad = Signal(name="fmt_bad"), Signal(name="res_bad")

        # the chunk's payload bytes, registered with exp_elems (CTX2): exact elements are 40 bytes (at one
        # lane 10 words of 32 bits), a shifted add (a multiplier there was the critical path)
        self._exp_bytes = Signal(17)
        self._exact_in = Signal()
        self.comb += self._exact_in.eq(k.in_exact & ~is_res)

        # Data frame decision (computed in CHECK2, applied in DECIDE): the first failing check in spec order.
        drop_c, reason_c = Signal(name="drop_c"), Signal(max=len(DROP), name="reason_c")
        self._drop_c, self._reason_c = drop_c, reason_c
        self.comb += [
            drop_c.eq(1),
            If(~self._ctx.hit, reason_c.eq(DROP["unknown_coll"])
            ).Elif(is_res & self._res_bad, reason_c.eq(DROP["bad_result"])
            ).Elif(~is_res & self._fmt_bad, reason_c.eq(DROP["bad_format"])
            ).Elif(~is_res & self._rank_bad, reason_c.eq(DROP["bad_rank"])
            ).Elif(self._chunk_bad, reason_c.eq(DROP["bad_chunk"])
            ).Elif(~self._len_ok, reason_c.eq(DROP["bad_length"])
            ).Elif(is_res, drop_c.eq(0)
            ).Elif(self._dup | (~slot.hit & self._late), reason_c.eq(DROP["duplicate"])
            ).Elif(~slot.hit & self._ahead, reason_c.eq(DROP["ahead"])
            ).Elif(~slot.hit & ~slot.free, reason_c.eq(DROP["no_slot"])
            ).Else(drop_c.eq(0)),
        ]
        self._data_drop, self._data_reason = Signal(name="data_drop"), Signal(max=len(DROP), name="data_reason")
        self._need_job = Signal()
        self._upd = Signal(n_slots)     # the slot this frame adds to (not completing)
        self._free = Signal(n_slots)   # the slot this frame completes
        self._go = Signal()
        # Queue room from registered readies: the engine is the only writer of both queues and writes at most
        # once a data frame (>= 8 cycles apart), so room seen one cycle ago is still there.
        jobs_room, meta_room = Signal(name="jobs_room"), Signal(name="meta_room")
        self.sync += jobs_room.eq(job_w.ready), meta_room.eq(meta_w.ready)
        self.comb += self._go.eq((~self._need_job | jobs_room) & (self._data_drop | ~self._complete | meta_room))
        self.comb += [
            job_w.port.eq(self.select.sel), job_w.drop.eq(self._data_drop), job_w.emit.eq(self._complete),
            job_w.init.eq(self._init), job_w.slot.eq(self._cur), job_w.lastw.eq(self._nwords - 1),
            job_w.awords.eq(self._awords), job_w.exact.eq(k.in_exact & ~is_res),
            job_w.xout.eq(k.out_exact & ~is_res), job_w.pas.eq(is_res),
            # a chunk result: COL_RES to the egress range, or the parent's contribution out of the uplink; a
            # downward COL_RES: COL_RES to the egress range
            meta_w.collective_id.eq(d.coll), meta_w.chunk_index.eq(d.chunk),
            meta_w.n_elements.eq(self._exp_elems),
            If(k.child & ~is_res,
                meta_w.targets.eq(k.uplink), meta_w.use_dst.eq(1), meta_w.dst_mac.eq(k.parent_mac),
                meta_w.rank.eq(k.parent_rank), meta_w.exact.eq(k.out_exact),
                meta_w.opcode.eq(Mux(k.out_exact, MS_OP_COL_PDATA, MS_OP_COL_DATA))
            ).Else(
                meta_w.targets.eq(k.targets), meta_w.opcode.eq(MS_OP_COL_RES),
                meta_w.saf.eq(k.in_exact & ~is_res)
            ),
            # Slot table writes one cycle after the decision (or the replacing setup). The next frame reads
            # the table in CTX at the earliest, three cycles later; the frame's registers still hold.
            slots.upd.eq(self._upd), slots.free.eq(self._free), slots.init.eq(self._init),
            slots.count_w.eq(self._new_count),
        ]

    def _drop(self, name):
        """The statements that drop the frame for reason `name` (DROP)."""
        return [self.drop.eq(1), self.drop_reason.eq(DROP[name])]

    def _add_frame_states(self, lanes, n_contexts, n_slots):
        """FSM states IDLE (expiries between frames, the next port's descriptor), FETCH, LOOKUP, LOOKUP2 (the
        context lookup and the setup checks, registered), SETUP and INSTALL (setups and teardowns)."""
        fsm, d, ctx, select = self.fsm, self._d, self._ctx, self.select
        check, contexts, slots = self.setup_check, self.contexts, self.slots
        fsm.act("IDLE",
            If(slots.expired != 0, NextState("EXPIRE_SLOTS")
            ).Elif(self._any_cexp,
                NextValue(ctx.idx, self._cexp_i), NextValue(ctx.oh, 1 << self._cexp_i), NextState("EXPIRE_CTX")
            ).Elif(select.any_valid, *select.start(), NextState("FETCH"))
        )
        fsm.act("EXPIRE_SLOTS",
            slots.expire.eq(1), self.slots_expired.eq(sum(slots.expired[j] for j in range(n_slots))),
            NextState("IDLE")
        )
        fsm.act("EXPIRE_CTX",
            slots.replace.eq(1), *contexts.remove(), contexts.touch.eq(1), self.ctx_expired.eq(1),
            NextState("IDLE")
        )
        fsm.act("FETCH",
            *select.stop(),
            NextState("LOOKUP")
        )
        # The descriptor is captured with `fetching` (a flip-flop, high in FETCH) as its enable, not the state
        # decode: the capture's logic is the port multiplexer only.
        desc = select.desc
        self.sync += If(select.fetching,
            d.kind.eq(desc.kind), d.coll.eq(desc.collective_id), d.rank.eq(desc.rank),
            d.chunk.eq(desc.chunk_index), d.pbytes.eq(desc.payload_bytes), d.record.eq(desc.record),
            d.exact.eq(desc.exact), d.minor2.eq(desc.minor2),
        )
        s_res_bad, s_checks = Signal(name="s_res_bad"), Signal(len(check.checks), name="s_checks")
        s_bad = Signal()
        fsm.act("LOOKUP",
            NextValue(self._hit_vec, contexts.match),
            NextValue(s_res_bad, check.reserved_bad), NextValue(s_checks, check.checks),
            NextValue(self._rank_oh, 1 << d.rank),
            [NextValue(self._is_last[i], contexts.is_last[i]) for i in range(n_contexts)],
            NextState("LOOKUP2")
        )
        fsm.act("LOOKUP2",
            NextValue(s_bad, s_checks != 0),
            NextValue(ctx.hit, self._any_hit), NextValue(ctx.idx, self._hit_i), NextValue(ctx.oh, 1 << self._hit_i),
            NextValue(ctx.free, self._any_free), NextValue(ctx.free_idx, self._free_i),
            NextValue(self._nwords, payload_words(d.pbytes, lanes)),
            If((d.kind == KIND_DATA) | (d.kind == KIND_RESULT), NextState("CTX")).Else(NextState("SETUP"))
        )
        fsm.act("SETUP",
            If(d.kind == KIND_TEARDOWN,
                If(~ctx.hit, *self._drop("unknown_coll")
                ).Else(self.teardown_done.eq(1), slots.replace.eq(1), *contexts.remove(), contexts.touch.eq(1)),
                NextState("IDLE")
            ).Elif(s_res_bad, *self._drop("bad_reserved")
            ).Elif(s_bad, *self._drop("bad_setup")
            ).Elif(~ctx.hit & ~ctx.free, *self._drop("ctx_full")
            ).Else(
                self.setup_done.eq(1),
                If(ctx.hit,   # replace: abandon the partial chunks of the old context
                    slots.replace.eq(1)
                ).Else(NextValue(ctx.idx, ctx.free_idx), NextValue(ctx.oh, 1 << ctx.free_idx)),
                NextState("INSTALL")
            ),
            If(self.drop, NextState("IDLE"))
        )
        fsm.act("INSTALL",
            *contexts.install(d.coll, check.expected, check.lastchunk, check.lastlen, check.targets, check.tree),
            contexts.win_clear.eq(1),
            NextState("IDLE")
        )

    def _add_data_states(self, lanes, chunk_elements, n_slots, window, rw):
        """FSM states CTX, CTX2 (the context's values, registered), CHECK1, CHECK2 (the checks, then the
        decision, registered) and DECIDE (applied once the queues have room) of a data or result frame."""
        fsm, d, ctx, slot, k = self.fsm, self._d, self._ctx, self._slot, self._k
        contexts, slots, is_res = self.contexts, self.slots, self._is_res
        fsm.act("CTX",
            NextValue(k.expected, contexts.expected), NextValue(k.lastchunk, contexts.lastchunk),
            NextValue(k.targets, contexts.targets),
            [NextValue(self._rbit[j], slots.rank_seen[j]) for j in range(n_slots)],
            NextValue(self._shit_r, slots.match),
            NextValue(k.islast, Array(self._is_last)[ctx.idx]), NextValue(k.lastlen, contexts.lastlen),
            NextValue(k.base, contexts.base), NextValue(k.done, contexts.done_bit),
            [NextValue(getattr(k, name), contexts.tree[name]) for name in contexts.tree],
            NextState("CTX2")
        )
        elems_c = Signal(max=chunk_elements + 1)
        self.comb += elems_c.eq(Mux(k.islast, k.lastlen,
                                    Mux(k.v02, v02_chunk_elements(chunk_elements), chunk_elements)))
        fsm.act("CTX2",
            NextValue(self._exp_elems, elems_c),
            NextValue(self._exp_bytes, Mux(self._exact_in, shift_add(elems_c, PARTIAL_ELEMENT_BYTES),
                                           shift_add(elems_c, FP32_BYTES))),
            NextState("CHECK1")
        )
        exp_bytes = self._exp_bytes
        fsm.act("CHECK1",
            NextValue(self._rank_bad, d.rank >= k.expected),
            NextValue(self._chunk_bad, d.chunk > k.lastchunk),
            NextValue(self._len_ok, (d.pbytes == exp_bytes) |
                                    ((d.pbytes > exp_bytes) & (d.pbytes <= ETH_MIN_FRAME - MS_HEADER_BYTES))),
            NextValue(self._fmt_bad, d.exact != k.in_exact),
            NextValue(self._res_bad, ~(k.allreduce & k.child)),
            NextValue(self._awords, payload_words(exp_bytes, lanes)),
            NextValue(slot.hit, self._any_shit), NextValue(slot.idx, self._shit_i),
            NextValue(slot.free, self._any_sfree), NextValue(slot.free_idx, self._sfree_i),
            NextValue(self._dup, reduce_or([self._shit_r[j] & self._rbit[j] for j in range(n_slots)])),
            # per slot: would this contribution complete it (registered, off the CHECK2 decision path)
            [NextValue(self._cfull[j], slots.completes[j]) for j in range(n_slots)],
            NextValue(self._exp1, k.expected == 1),
            # (a CHILD reduces a chunk again when its ranks resend it: see docs/minisharp.md, "Lost partials")
            NextValue(self._late, ~k.child & ((d.chunk < k.base) | (k.done & (d.chunk < k.base + window)))),
            NextValue(self._ahead, ~k.child & (d.chunk >= k.base + window)),
            NextState("CHECK2")
        )
        cur_c, count_c = Signal(max=max(n_slots, 2), name="cur_c"), Signal(rw, name="count_c")
        complete_c = Signal()
        self.comb += [
            cur_c.eq(Mux(slot.hit, slot.idx, slot.free_idx)),
            count_c.eq(Mux(slot.hit, slots.count, 0) + 1),
            complete_c.eq(is_res | Mux(slot.hit, Array(self._cfull)[slot.idx], self._exp1)),
        ]
        drop_c, free = self._drop_c, self._free
        fsm.act("CHECK2",
            NextValue(self._data_drop, drop_c), NextValue(self._data_reason, self._reason_c),
            NextValue(self._need_job, ~drop_c | (self._nwords != 0)),
            NextValue(self._cur, cur_c), NextValue(self._init, ~slot.hit),
            NextValue(self._new_count, count_c), NextValue(self._complete, complete_c),
            NextValue(self._upd, Mux(drop_c | complete_c | is_res, 0, 1 << cur_c)),
            NextValue(free, Mux(~drop_c & complete_c & ~is_res, 1 << cur_c, 0)),
            NextState("DECIDE")
        )
        data_drop = self._data_drop
        fsm.act("DECIDE",
            If(self._go,
                self.meta_out.sink.valid.eq(~data_drop & self._complete), self.job_in.sink.valid.eq(self._need_job),
                If(data_drop, self.drop.eq(1), self.drop_reason.eq(self._data_reason)),
                self.chunk_done.eq(free != 0), slots.commit.eq(1),
                contexts.touch.eq(~data_drop), contexts.win_set.eq((free != 0) & ~k.child),
                NextState("IDLE")
            )
        )

"""MiniSharp collective engine: validation (setup checks, context table, chunk slots), payload stage and the
exact accumulator bank."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.buffers import RegisteredBuffer, SkidBuffer
from cores.lib.logic import first_set, index_bits, reduce_or, shift_add
from cores.minisharp.accumulator import (
    MSAccumulatorBank, ACC_OP_ADD, ACC_OP_ADDP, ACC_OP_PASS, acc_op_layout, acc_result_layout,
)
from cores.minisharp.common import (
    KIND_DATA, DROP, SETUP_RECORD, SETUP_RECORD_BYTES, descriptor_layout, result_meta_layout, MS_HEADER_BYTES,
    ETH_MIN_FRAME, MS_COL_REDUCE, MS_RED_SUM, MS_FMT_FP32, MS_ACC_EXACT_FP32_MAG277, FP32_BYTES, KIND_TEARDOWN,
    DONE_WINDOW, TIMEOUT_BITS, TIMEOUT_TICK_LOG2, KIND_RESULT, MS_COL_ALLREDUCE, MS_FMT_EXACT, MS_ROLE_ROOT,
    MS_ROLE_CHILD, SETUP_RECORD_V02, SETUP_RECORD_V02_BYTES, v02_chunk_elements, MS_OP_COL_RES, MS_OP_COL_DATA,
    MS_OP_COL_PDATA, PARTIAL_ELEMENT_BYTES, PARTIAL_WORDS,
)

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


# The per-context tree fields (v0.2) the context table keeps, as (name, bits) for `num_ports` ports.
def tree_fields(num_ports):
    return [("v02", 1), ("child", 1), ("in_exact", 1), ("out_exact", 1), ("allreduce", 1),
            ("uplink", num_ports), ("parent_rank", 8), ("parent_mac", 48)]


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


class MSContextTable(LiteXModule):
    """`n_contexts` installed collectives (registers): Collective ID, expected contributors, last chunk,
    elements of the last chunk, output ports; per context its completion window (`base`, the oldest
    incomplete chunk, and a bitmap of the `window` chunks from there, chunk c at bit c mod window) and its
    idle age (ticks since its last accepted frame).

    Lookups (combinational): match (bit i: context i is valid and holds `coll`), free (bit i: context i is
    not valid), is_last (bit i: `chunk` is context i's last chunk), and context `idx`'s expected, lastchunk,
    lastlen, targets, tree (the v0.2 fields: tree_fields), base and done_bit (the bitmap's bit of `chunk`). expired (registered): bit i: context
    i is valid and idle for `timeout` ticks (0: never); a pulse for context i clears it for three cycles. `install()` / `remove()` give the statements
    (NextValue, for an FSM state) that install / remove the context at `idx`; pulses, for context `idx`:
    win_clear (a new window, age 0), win_set (`chunk` completed), touch (age 0).
    Each context's window advances by itself, one chunk a cycle, while the bit of `base` is set.
    """
    def __init__(self, n_contexts, num_ports, expected_bits, lastlen_bits, window=DONE_WINDOW):
        tf = tree_fields(num_ports)
        if window < 2 or window & (window - 1):
            raise ValueError(f"window must be a power of two >= 2, got {window}")
        lw = log2_int(window)
        self.coll = Signal(32)
        self.chunk = Signal(16)
        self.idx = Signal(max=max(n_contexts, 2))
        self.match, self.free, self.is_last = Signal(n_contexts), Signal(n_contexts), Signal(n_contexts)
        self.expected, self.lastchunk = Signal(expected_bits), Signal(16)
        self.lastlen, self.targets = Signal(lastlen_bits), Signal(num_ports)
        self.base, self.done_bit = Signal(17), Signal()
        self.tree = {name: Signal(w, name=f"ctx_{name}") for name, w in tf}
        self.win_clear, self.win_set, self.touch = Signal(), Signal(), Signal()
        self.tick, self.timeout = Signal(), Signal(TIMEOUT_BITS)
        self.expired = Signal(n_contexts)

        # # #

        self._valid = Array(Signal(name=f"c_valid{i}") for i in range(n_contexts))
        self._id = Array(Signal(32) for _ in range(n_contexts))
        self._expected = Array(Signal(expected_bits, name=f"c_expected{i}") for i in range(n_contexts))
        self._lastchunk = Array(Signal(16) for _ in range(n_contexts))         # number of chunks - 1
        self._lastlen = Array(Signal(lastlen_bits) for _ in range(n_contexts))  # elements of the last chunk
        self._targets = Array(Signal(num_ports) for _ in range(n_contexts))
        self._tree = {name: Array(Signal(w, name=f"c_{name}{i}") for i in range(n_contexts)) for name, w in tf}
        base = Array(Signal(17, name=f"c_base{i}") for i in range(n_contexts))
        done = Array(Signal(window, name=f"c_done{i}") for i in range(n_contexts))
        age = [Signal(TIMEOUT_BITS) for _ in range(n_contexts)]
        self.comb += [
            self.match.eq(Cat(*[self._valid[i] & (self._id[i] == self.coll) for i in range(n_contexts)])),
            self.free.eq(Cat(*[~self._valid[i] for i in range(n_contexts)])),
            self.is_last.eq(Cat(*[self.chunk == self._lastchunk[i] for i in range(n_contexts)])),
            self.expected.eq(self._expected[self.idx]), self.lastchunk.eq(self._lastchunk[self.idx]),
            self.lastlen.eq(self._lastlen[self.idx]), self.targets.eq(self._targets[self.idx]),
            self.base.eq(base[self.idx]), self.done_bit.eq(Array(done[self.idx])[self.chunk[:lw]]),
            [self.tree[name].eq(self._tree[name][self.idx]) for name, _ in tf],
        ]
        # The pulses reach the windows and ages one cycle later, from per-context registers (the FSM's
        # decision does not fan out to 8 x 64 bitmap flip-flops); the next frame reads them 5 cycles later.
        chunk_bit = Signal(window)
        self.sync += chunk_bit.eq(1 << self.chunk[:lw])
        for i in range(n_contexts):
            me = self.idx == i
            clear_r, set_r, touch_r = Signal(name=f"clear_r{i}"), Signal(name=f"set_r{i}"), Signal(name=f"touch_r{i}")
            busy = me & (self.win_clear | self.touch)
            self.sync += clear_r.eq(me & self.win_clear), set_r.eq(me & self.win_set), touch_r.eq(busy)
            at_base = Signal()
            self.comb += at_base.eq(Array(done[i])[base[i][:lw]])
            self.sync += [
                If(clear_r, base[i].eq(0), done[i].eq(0)
                ).Else(
                    If(at_base, base[i].eq(base[i] + 1)),
                    done[i].eq((done[i] & ~Mux(at_base, 1 << base[i][:lw], 0)) | Mux(set_r, chunk_bit, 0))),
                If(touch_r, age[i].eq(0)).Elif(self.tick & (age[i] != 2**TIMEOUT_BITS - 1), age[i].eq(age[i] + 1)),
                self.expired[i].eq(self._valid[i] & ~busy & ~touch_r & (self.timeout != 0) &
                                   (age[i] >= self.timeout)),
            ]

    def install(self, coll, expected, lastchunk, lastlen, targets, tree):
        i = self.idx
        return [
            NextValue(self._valid[i], 1), NextValue(self._id[i], coll), NextValue(self._expected[i], expected),
            NextValue(self._lastchunk[i], lastchunk), NextValue(self._lastlen[i], lastlen),
            NextValue(self._targets[i], targets),
            [NextValue(self._tree[name][i], v) for name, v in tree.items()],
        ]

    def remove(self):
        return [NextValue(self._valid[self.idx], 0)]


class MSSlotTable(LiteXModule):
    """`n_slots` chunk slots (registers): context (one-hot of `n_contexts`), Chunk Index, rank bitmap
    (`max_ranks` bits) and contribution count.

    Lookups (combinational): match (bit j: slot j is valid and holds context `ctx_oh`, chunk `chunk`), empty
    (bit j: slot j is free), rank_seen (bit j: rank `rank_oh` (one-hot) contributed to slot j), completes
    (bit j: one more contribution brings slot j to `expected`), count (slot `idx`'s count).
    Writes, one cycle after `commit` (with the one-hot `upd` / `free` of the frame), `replace` (frees
    the slots of context `ctx_oh`) or `expire` (frees the `expired` slots), from registered per-slot enables:
    `upd` (re)opens or adds to a slot for ctx_oh/chunk (the rank's bit set in its bitmap, cleared first with
    `init`, count set to `count_w`). expired (registered): bit j: slot j is valid and got no contribution for
    `timeout` ticks (0: never); never set for a slot being written.
    """
    def __init__(self, n_slots, n_contexts, max_ranks):
        rw = bits_for(max_ranks)
        self.ctx_oh, self.chunk, self.rank_oh = Signal(n_contexts), Signal(16), Signal(max_ranks)
        self.expected = Signal(rw)
        self.idx = Signal(max=max(n_slots, 2))
        self.match, self.empty, self.rank_seen, self.completes = (Signal(n_slots) for _ in range(4))
        self.count = Signal(rw)
        self.commit, self.replace, self.init = Signal(name="commit"), Signal(name="replace"), Signal()
        self.upd, self.free = Signal(n_slots, name="upd"), Signal(n_slots, name="free")
        self.count_w = Signal(rw)
        self.tick, self.timeout, self.expire = Signal(), Signal(TIMEOUT_BITS), Signal()
        self.expired = Signal(n_slots)

        # # #

        s_valid = [Signal(name=f"s_valid{j}") for j in range(n_slots)]
        s_ctx = [Signal(n_contexts, name=f"s_ctx{j}") for j in range(n_slots)]      # one-hot context
        s_chunk = [Signal(16, name=f"s_chunk{j}") for j in range(n_slots)]
        s_bitmap = [Signal(max_ranks, name=f"s_bitmap{j}") for j in range(n_slots)]
        s_count = [Signal(rw, name=f"s_count{j}") for j in range(n_slots)]
        of_ctx = Signal(n_slots)
        self.comb += [
            of_ctx.eq(Cat(*[(s_ctx[j] & self.ctx_oh) != 0 for j in range(n_slots)])),
            self.match.eq(Cat(*[s_valid[j] & of_ctx[j] & (s_chunk[j] == self.chunk) for j in range(n_slots)])),
            self.empty.eq(Cat(*[~s_valid[j] for j in range(n_slots)])),
            # the rank's bit: an AND-OR with the one-hot Rank (no select decoding)
            self.rank_seen.eq(Cat(*[(s_bitmap[j] & self.rank_oh) != 0 for j in range(n_slots)])),
            self.completes.eq(Cat(*[(s_count[j] + 1)[:rw] == self.expected for j in range(n_slots)])),
            self.count.eq(Array(s_count)[self.idx]),
        ]
        # `commit`/`replace` do not fan out to the table: registered per-slot enables.
        ap_upd, ap_free = Signal(n_slots, name="ap_upd"), Signal(n_slots, name="ap_free")
        self.sync += [
            ap_upd.eq(Mux(self.commit, self.upd, 0)),
            ap_free.eq(Mux(self.commit, self.free, 0) | Mux(self.replace, of_ctx, 0) |
                       Mux(self.expire, self.expired, 0)),
            [If(ap_free[j], s_valid[j].eq(0)) for j in range(n_slots)],
            [If(ap_upd[j],
                s_valid[j].eq(1), s_ctx[j].eq(self.ctx_oh), s_chunk[j].eq(self.chunk),
                s_bitmap[j].eq(Mux(self.init, 0, s_bitmap[j]) | self.rank_oh), s_count[j].eq(self.count_w)
             ) for j in range(n_slots)],
        ]
        age = [Signal(TIMEOUT_BITS) for _ in range(n_slots)]
        for j in range(n_slots):
            writing = ((self.commit | self.expire) & (self.upd[j] | self.free[j] | self.expired[j])) | \
                      (self.replace & of_ctx[j]) | ap_upd[j] | ap_free[j]
            self.sync += [
                If(ap_upd[j], age[j].eq(0)).Elif(self.tick & (age[j] != 2**TIMEOUT_BITS - 1), age[j].eq(age[j] + 1)),
                self.expired[j].eq(s_valid[j] & ~writing & (self.timeout != 0) & (age[j] >= self.timeout)),
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
        job_w, meta_w = job_in.sink, meta_out.sink
        self.setup_check = check = MSSetupCheck(num_ports, max_ranks, chunk_elements, partials)
        self.contexts = contexts = MSContextTable(n_contexts, num_ports, rw, lce + 1, window)
        self.slots = slots = MSSlotTable(n_slots, n_contexts, max_ranks)
        self.select = select = MSPortSelect(num_ports)
        self.comb += [s.connect(d) for s, d in zip(self.desc_sinks, select.sinks)]
        self.comb += self.drop_port.eq(select.sel)
        sel, desc = select.sel, select.desc

        # Current frame.
        d_kind, d_coll = Signal(2, name="d_kind"), Signal(32)
        d_rank, d_chunk = Signal(8, name="d_rank"), Signal(16, name="d_chunk")
        d_pbytes, d_record = Signal(16), Signal(len(desc.record))
        d_exact, d_minor2 = Signal(), Signal()
        ctx_hit, ctx_idx, ctx_free, ctx_free_idx = Signal(), Signal(max=max(n_contexts, 2), name="ctx_idx"), Signal(), \
            Signal(max=max(n_contexts, 2))
        # The context as one-hot, for the slot table (its own flip-flops, placed with the table; no decoder).
        ctx_oh = Signal(n_contexts)
        slot_hit, slot_idx, slot_free, slot_free_idx = Signal(name="slot_hit"), Signal(max=max(n_slots, 2)), Signal(), \
            Signal(max=max(n_slots, 2))
        rank_bad, chunk_bad, dup, len_ok = Signal(), Signal(), Signal(name="dup"), Signal()
        complete = Signal(name="complete")
        late, ahead = Signal(name="late"), Signal(name="ahead")       # the chunk completed already; it is past the context's window
        rbit = Signal(n_slots)
        cfull, exp1 = [Signal() for _ in range(n_slots)], Signal()
        exp_elems = Signal(max=chunk_elements + 1)
        is_last = [Signal() for _ in range(n_contexts)]     # d_chunk is context i's last chunk
        cur, init = Signal(max=max(n_slots, 2), name="cur"), Signal(name="init")
        nwords, awords, new_count = Signal(16), Signal(16), Signal(rw)
        rank_oh = Signal(max_ranks)
        # Idle-timeout ticks.
        prescaler, tick = Signal(tick_log2), Signal()
        self.sync += prescaler.eq(prescaler + 1), tick.eq(prescaler == 0)
        self.comb += [
            contexts.tick.eq(tick), contexts.timeout.eq(self.ctx_timeout),
            slots.tick.eq(tick), slots.timeout.eq(self.slot_timeout),
        ]
        any_cexp, cexp_i, _ = first_set(self, contexts.expired, n_contexts)
        self.comb += [
            check.record.eq(d_record), check.minor2.eq(d_minor2),
            contexts.coll.eq(d_coll), contexts.chunk.eq(d_chunk), contexts.idx.eq(ctx_idx),
            slots.ctx_oh.eq(ctx_oh), slots.chunk.eq(d_chunk), slots.rank_oh.eq(rank_oh), slots.idx.eq(slot_idx),
        ]

        # Context lookup (from d_coll): the match vector is registered (LOOKUP), then encoded (LOOKUP2).
        hit_vec = Signal(n_contexts)
        any_hit, hit_i, _ = first_set(self, hit_vec, n_contexts)
        any_free, free_i, _ = first_set(self, contexts.free, n_contexts)
        # Slot lookup (from ctx_idx, d_chunk): the match vector is registered (CTX), then encoded (CHECK1).
        shit_r = Signal(n_slots)
        any_shit, shit_i, _ = first_set(self, shit_r, n_slots)
        any_sfree, sfree_i, _ = first_set(self, slots.empty, n_slots)

        # Selected context, registered (state CTX).
        k_expected, k_lastchunk = Signal(rw), Signal(16)
        k_targets = Signal(num_ports)
        k_islast, k_lastlen = Signal(), Signal(lce + 1)
        k_base, k_done = Signal(17), Signal()
        k_tree = {name: Signal(w, name=f"k_{name}") for name, w in tree_fields(num_ports)}
        self.comb += slots.expected.eq(k_expected)
        is_res = Signal()                 # the frame is a downward COL_RES
        self.comb += is_res.eq(d_kind == KIND_RESULT)
        fmt_bad, res_bad = Signal(), Signal()

        # the chunk's payload bytes, registered with exp_elems (CTX2): exact elements are 40 bytes (at one
        # lane 10 words of 32 bits), a shifted add (a multiplier there was the critical path)
        exp_bytes = Signal(17)
        exact_in = Signal()
        self.comb += exact_in.eq(k_tree["in_exact"] & ~is_res)

        def drop(name):
            return [self.drop.eq(1), self.drop_reason.eq(DROP[name])]

        words = lambda nbytes: (nbytes + 4 * lanes - 1) >> log2_int(4 * lanes)

        # Data frame decision (computed in CHECK2, applied in DECIDE): the first failing check in spec order.
        drop_c, reason_c = Signal(), Signal(max=len(DROP))
        self.comb += [
            drop_c.eq(1),
            If(~ctx_hit, reason_c.eq(DROP["unknown_coll"])
            ).Elif(is_res & res_bad, reason_c.eq(DROP["bad_result"])
            ).Elif(~is_res & fmt_bad, reason_c.eq(DROP["bad_format"])
            ).Elif(~is_res & rank_bad, reason_c.eq(DROP["bad_rank"])
            ).Elif(chunk_bad, reason_c.eq(DROP["bad_chunk"])
            ).Elif(~len_ok, reason_c.eq(DROP["bad_length"])
            ).Elif(is_res, drop_c.eq(0)
            ).Elif(dup | (~slot_hit & late), reason_c.eq(DROP["duplicate"])
            ).Elif(~slot_hit & ahead, reason_c.eq(DROP["ahead"])
            ).Elif(~slot_hit & ~slot_free, reason_c.eq(DROP["no_slot"])
            ).Else(drop_c.eq(0)),
        ]
        data_drop, data_reason, need_job = Signal(name="data_drop"), Signal(max=len(DROP)), Signal()
        upd = Signal(n_slots)          # the slot this frame adds to (not completing)
        free = Signal(n_slots)         # the slot this frame completes
        go = Signal()
        # Queue room from registered readies: the engine is the only writer of both queues and writes at most
        # once a data frame (>= 8 cycles apart), so room seen one cycle ago is still there.
        jobs_room, meta_room = Signal(), Signal()
        self.sync += jobs_room.eq(job_w.ready), meta_room.eq(meta_w.ready)
        self.comb += go.eq((~need_job | jobs_room) & (data_drop | ~complete | meta_room))
        self.comb += [
            job_w.port.eq(sel), job_w.drop.eq(data_drop), job_w.emit.eq(complete),
            job_w.init.eq(init), job_w.slot.eq(cur), job_w.lastw.eq(nwords - 1),
            job_w.awords.eq(awords), job_w.exact.eq(k_tree["in_exact"] & ~is_res),
            job_w.xout.eq(k_tree["out_exact"] & ~is_res), job_w.pas.eq(is_res),
            # a chunk result: COL_RES to the egress range, or the parent's contribution out of the uplink; a
            # downward COL_RES: COL_RES to the egress range
            meta_w.collective_id.eq(d_coll), meta_w.chunk_index.eq(d_chunk),
            meta_w.n_elements.eq(exp_elems),
            If(k_tree["child"] & ~is_res,
                meta_w.targets.eq(k_tree["uplink"]), meta_w.use_dst.eq(1), meta_w.dst_mac.eq(k_tree["parent_mac"]),
                meta_w.rank.eq(k_tree["parent_rank"]), meta_w.exact.eq(k_tree["out_exact"]),
                meta_w.opcode.eq(Mux(k_tree["out_exact"], MS_OP_COL_PDATA, MS_OP_COL_DATA))
            ).Else(
                meta_w.targets.eq(k_targets), meta_w.opcode.eq(MS_OP_COL_RES),
                meta_w.saf.eq(k_tree["in_exact"] & ~is_res)
            ),
            # Slot table writes one cycle after the decision (or the replacing setup). The next frame reads
            # the table in CTX at the earliest, three cycles later; the frame's registers still hold.
            slots.upd.eq(upd), slots.free.eq(free), slots.init.eq(init), slots.count_w.eq(new_count),
        ]

        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(slots.expired != 0, NextState("EXPIRE_SLOTS")
            ).Elif(any_cexp, NextValue(ctx_idx, cexp_i), NextValue(ctx_oh, 1 << cexp_i), NextState("EXPIRE_CTX")
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
        self.sync += If(select.fetching,
            d_kind.eq(desc.kind), d_coll.eq(desc.collective_id), d_rank.eq(desc.rank),
            d_chunk.eq(desc.chunk_index), d_pbytes.eq(desc.payload_bytes), d_record.eq(desc.record),
            d_exact.eq(desc.exact), d_minor2.eq(desc.minor2),
        )
        s_res_bad, s_checks, s_bad = Signal(), Signal(len(check.checks)), Signal()
        fsm.act("LOOKUP",
            NextValue(hit_vec, contexts.match),
            NextValue(s_res_bad, check.reserved_bad), NextValue(s_checks, check.checks),
            NextValue(rank_oh, 1 << d_rank),
            [NextValue(is_last[i], contexts.is_last[i]) for i in range(n_contexts)],
            NextState("LOOKUP2")
        )
        fsm.act("LOOKUP2",
            NextValue(s_bad, s_checks != 0),
            NextValue(ctx_hit, any_hit), NextValue(ctx_idx, hit_i), NextValue(ctx_oh, 1 << hit_i),
            NextValue(ctx_free, any_free), NextValue(ctx_free_idx, free_i),
            NextValue(nwords, words(d_pbytes)),
            If((d_kind == KIND_DATA) | (d_kind == KIND_RESULT), NextState("CTX")).Else(NextState("SETUP"))
        )
        fsm.act("SETUP",
            If(d_kind == KIND_TEARDOWN,
                If(~ctx_hit, *drop("unknown_coll")
                ).Else(self.teardown_done.eq(1), slots.replace.eq(1), *contexts.remove(), contexts.touch.eq(1)),
                NextState("IDLE")
            ).Elif(s_res_bad, *drop("bad_reserved")
            ).Elif(s_bad, *drop("bad_setup")
            ).Elif(~ctx_hit & ~ctx_free, *drop("ctx_full")
            ).Else(
                self.setup_done.eq(1),
                If(ctx_hit,   # replace: abandon the partial chunks of the old context
                    slots.replace.eq(1)
                ).Else(NextValue(ctx_idx, ctx_free_idx), NextValue(ctx_oh, 1 << ctx_free_idx)),
                NextState("INSTALL")
            ),
            If(self.drop, NextState("IDLE"))
        )
        fsm.act("INSTALL",
            *contexts.install(d_coll, check.expected, check.lastchunk, check.lastlen, check.targets, check.tree),
            contexts.win_clear.eq(1),
            NextState("IDLE")
        )
        fsm.act("CTX",
            NextValue(k_expected, contexts.expected), NextValue(k_lastchunk, contexts.lastchunk),
            NextValue(k_targets, contexts.targets),
            [NextValue(rbit[j], slots.rank_seen[j]) for j in range(n_slots)],
            NextValue(shit_r, slots.match),
            NextValue(k_islast, Array(is_last)[ctx_idx]), NextValue(k_lastlen, contexts.lastlen),
            NextValue(k_base, contexts.base), NextValue(k_done, contexts.done_bit),
            [NextValue(k_tree[name], contexts.tree[name]) for name in k_tree],
            NextState("CTX2")
        )
        elems_c = Signal(max=chunk_elements + 1)
        self.comb += elems_c.eq(Mux(k_islast, k_lastlen,
                                    Mux(k_tree["v02"], v02_chunk_elements(chunk_elements), chunk_elements)))
        fsm.act("CTX2",
            NextValue(exp_elems, elems_c),
            NextValue(exp_bytes, Mux(exact_in, shift_add(elems_c, PARTIAL_ELEMENT_BYTES), shift_add(elems_c, FP32_BYTES))),
            NextState("CHECK1")
        )
        fsm.act("CHECK1",
            NextValue(rank_bad, d_rank >= k_expected),
            NextValue(chunk_bad, d_chunk > k_lastchunk),
            NextValue(len_ok, (d_pbytes == exp_bytes) |
                              ((d_pbytes > exp_bytes) & (d_pbytes <= ETH_MIN_FRAME - MS_HEADER_BYTES))),
            NextValue(fmt_bad, d_exact != k_tree["in_exact"]),
            NextValue(res_bad, ~(k_tree["allreduce"] & k_tree["child"])),
            NextValue(awords, words(exp_bytes)),
            NextValue(slot_hit, any_shit), NextValue(slot_idx, shit_i),
            NextValue(slot_free, any_sfree), NextValue(slot_free_idx, sfree_i),
            NextValue(dup, reduce_or([shit_r[j] & rbit[j] for j in range(n_slots)])),
            # per slot: would this contribution complete it (registered, off the CHECK2 decision path)
            [NextValue(cfull[j], slots.completes[j]) for j in range(n_slots)],
            NextValue(exp1, k_expected == 1),
            # (a CHILD reduces a chunk again when its ranks resend it: see docs/minisharp.md, "Lost partials")
            NextValue(late, ~k_tree["child"] & ((d_chunk < k_base) | (k_done & (d_chunk < k_base + window)))),
            NextValue(ahead, ~k_tree["child"] & (d_chunk >= k_base + window)),
            NextState("CHECK2")
        )
        cur_c, count_c, complete_c = Signal(max=max(n_slots, 2)), Signal(rw), Signal()
        self.comb += [
            cur_c.eq(Mux(slot_hit, slot_idx, slot_free_idx)),
            count_c.eq(Mux(slot_hit, slots.count, 0) + 1),
            complete_c.eq(is_res | Mux(slot_hit, Array(cfull)[slot_idx], exp1)),
        ]
        fsm.act("CHECK2",
            NextValue(data_drop, drop_c), NextValue(data_reason, reason_c),
            NextValue(need_job, ~drop_c | (nwords != 0)),
            NextValue(cur, cur_c), NextValue(init, ~slot_hit),
            NextValue(new_count, count_c), NextValue(complete, complete_c),
            NextValue(upd, Mux(drop_c | complete_c | is_res, 0, 1 << cur_c)),
            NextValue(free, Mux(~drop_c & complete_c & ~is_res, 1 << cur_c, 0)),
            NextState("DECIDE")
        )
        fsm.act("DECIDE",
            If(go,
                meta_w.valid.eq(~data_drop & complete), job_w.valid.eq(need_job),
                If(data_drop, self.drop.eq(1), self.drop_reason.eq(data_reason)),
                self.chunk_done.eq(free != 0), slots.commit.eq(1),
                contexts.touch.eq(~data_drop), contexts.win_set.eq((free != 0) & ~k_tree["child"]),
                NextState("IDLE")
            )
        )


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

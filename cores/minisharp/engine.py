"""MiniSharp collective engine: setup path, context table, chunk slots and the exact accumulator bank."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.minisharp.accumulator import MSAccumulatorBank, ACC_OP_ADD
from cores.minisharp.common import (
    KIND_SETUP, DROP, descriptor_layout, result_meta_layout, record_field, MS_HEADER_BYTES, ETH_MIN_FRAME,
    MS_COL_REDUCE, MS_RED_SUM, MS_FMT_FP32, MS_ACC_EXACT_FP32_MAG277, FP32_BYTES,
)
from cores.lib.buffers import RegisteredBuffer, SkidBuffer

MAX_CHUNK_INDEX = 1 << 16


def engine_meta_layout(num_ports):
    """Result meta record and its output ports (bit i: port i is in [egress_first, egress_last])."""
    return result_meta_layout + [("targets", num_ports)]


def _first_set(vec, n):
    """(any, index of the lowest set bit, statements) of a list of 1-bit Values: one-hot, then OR-encode."""
    idx = Signal(max=max(n, 2))
    first = [vec[i] & ~reduce_or(vec[:i]) if i else vec[0] for i in range(n)]
    return reduce_or(vec), idx, [idx.eq(reduce_or([Mux(first[i], i, 0) for i in range(n)]))]


def reduce_or(vec):
    v = vec[0]
    for x in vec[1:]:
        v = v | x
    return v


class MSCollectiveEngine(LiteXModule):
    """Serves the descriptors of `num_ports` ingress ports (round robin, one frame at a time).

    Two stages that overlap, so that frames follow each other in the accumulator with no gap:
    * validation (one frame after the other): COL_SETUP validates the record and installs or replaces a
      context (table of `n_contexts`). COL_DATA looks up the context and the chunk slot (`n_slots`, keyed
      by context and Chunk Index) and checks rank, chunk index, payload length and duplicates (rank bitmap
      per slot); an accepted frame updates the slot at once (rank bit, count; the completing one frees it
      and emits the result `meta` record) and queues a job; a rejected one is reported on
      drop/drop_reason and queues a drain job for its payload. 9 cycles a frame (5 for a setup).
    * payload: jobs in order, one payload word (`lanes` FP32) per cycle into the slot's accumulators
      (the first contribution initialises, the completing one adds and emits the rounded sums on
      `result`); the next job starts in the cycle after the last word of the previous one.
    Throughput: one payload word per cycle, back-to-back frames (validation hides behind the previous
    frame's words when a frame has at least 9 words). Latency: descriptor to first result word: validation
    (9 cycles), the job queue and the accumulator bank's `latency`; MiniSharpCore end to end: 54 cycles
    at 1 lane, 50 with more (rounding pipelines of 18 and 14 stages).
    """
    def __init__(self, num_ports=2, lanes=1, chunk_elements=256, n_contexts=8, n_slots=4, max_ranks=64):
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

        # # #

        wpc = chunk_elements // lanes
        lce = log2_int(chunk_elements)
        self.bank = bank = MSAccumulatorBank(lanes=lanes, depth=n_slots * wpc, max_ranks=max_ranks, out_depth=32)
        self.comb += bank.source.connect(self.result)
        # Registered ready and valid between the engine and the bank (timing); order is kept.
        self.bank_buf = RegisteredBuffer(bank.sink.description)
        self.comb += self.bank_buf.source.connect(bank.sink)
        acc_in = self.bank_buf.sink
        rw = bits_for(max_ranks)
        pw = bits_for(max(num_ports - 1, 1))
        sw = bits_for(max(n_slots - 1, 1))

        # Jobs from validation to the payload stage.
        job_layout = [("port", pw), ("drop", 1), ("emit", 1), ("init", 1), ("slot", sw),
                      ("lastw", 16), ("awords", 16)]   # lastw: payload words - 1; awords: words added
        self.jobs = jobs = stream.SyncFIFO(job_layout, 2)
        # Jobs and meta records leave the validation stage through registered buffers: DECIDE's handshake
        # does not reach the queues' level logic and RAM.
        self.job_in = job_in = stream.Buffer(job_layout, pipe_valid=True)
        self.meta_out = meta_out = stream.Buffer(self.meta.description, pipe_valid=True)
        self.comb += job_in.source.connect(jobs.sink), meta_out.source.connect(self.meta)
        job_w, meta_w = job_in.sink, meta_out.sink
        # The payload stage reads the queue through a skid buffer: `load` (late, from the payload handshake)
        # reaches only its flag, not the queue's level logic and LUT RAM.
        self.job_buf = job_buf = SkidBuffer(job_layout)
        self.comb += jobs.source.connect(job_buf.sink)
        job = job_buf.source

        # Context table.
        c_valid = Array(Signal() for _ in range(n_contexts))
        c_id = Array(Signal(32) for _ in range(n_contexts))
        c_expected = Array(Signal(rw) for _ in range(n_contexts))
        c_lastchunk = Array(Signal(16) for _ in range(n_contexts))         # number of chunks - 1
        c_lastlen = Array(Signal(lce + 1) for _ in range(n_contexts))      # elements of the last chunk
        c_targets = Array(Signal(num_ports) for _ in range(n_contexts))
        # Chunk slots.
        s_valid = Array(Signal() for _ in range(n_slots))
        s_ctx = Array(Signal(n_contexts) for _ in range(n_slots))      # one-hot context
        s_chunk = Array(Signal(16) for _ in range(n_slots))
        s_bitmap = Array(Signal(max_ranks) for _ in range(n_slots))
        s_count = Array(Signal(rw) for _ in range(n_slots))

        # Port selection, round robin. The port to serve is picked in IDLE and registered with a one-hot
        # `fetch` that is each port's ready in FETCH: a port's ready is a flip-flop, so neither the state
        # decode nor the selection reaches the descriptor FIFO's read logic.
        sel, fetch, fetching = Signal(pw), Signal(num_ports), Signal()
        pick = Signal(pw)
        valids = [d.valid for d in self.desc_sinks]
        self.comb += Case(sel, {last: [If(valids[(last + 1 + k) % num_ports], pick.eq((last + 1 + k) % num_ports))
                                       for k in reversed(range(num_ports))]
                                for last in range(num_ports)})
        self.comb += [self.desc_sinks[i].ready.eq(fetch[i]) for i in range(num_ports)]
        desc = stream.Endpoint(descriptor_layout)
        self.comb += Case(sel, {i: self.desc_sinks[i].connect(desc, omit={"ready"}) for i in range(num_ports)})
        self.comb += self.drop_port.eq(sel)

        # Current frame.
        d_kind, d_coll, d_rank, d_chunk = Signal(), Signal(32), Signal(8), Signal(16)
        d_pbytes, d_record = Signal(16), Signal(len(desc.record))
        ctx_hit, ctx_idx, ctx_free, ctx_free_idx = Signal(), Signal(max=max(n_contexts, 2)), Signal(), \
            Signal(max=max(n_contexts, 2))
        # The context as one-hot, for the slot table (its own flip-flops, placed with the table; no decoder).
        ctx_oh = Signal(n_contexts)
        slot_hit, slot_idx, slot_free, slot_free_idx = Signal(), Signal(max=max(n_slots, 2)), Signal(), \
            Signal(max=max(n_slots, 2))
        rank_bad, chunk_bad, dup, len_ok, complete = Signal(), Signal(), Signal(), Signal(), Signal()
        rbit = Signal(n_slots)
        cfull, exp1 = [Signal() for _ in range(n_slots)], Signal()
        exp_elems = Signal(max=chunk_elements + 1)
        is_last = [Signal() for _ in range(n_contexts)]     # d_chunk is context i's last chunk
        cur, init = Signal(max=max(n_slots, 2)), Signal()
        nwords, awords, new_count = Signal(16), Signal(16), Signal(rw)

        # Context lookup (from d_coll): the match vector is registered (LOOKUP), then encoded (LOOKUP2).
        hit_vec = Signal(n_contexts)
        free_vec = [~c_valid[i] for i in range(n_contexts)]
        any_hit, hit_i, hit_chain = _first_set([hit_vec[i] for i in range(n_contexts)], n_contexts)
        any_free, free_i, free_chain = _first_set(free_vec, n_contexts)
        self.comb += hit_chain + free_chain
        # Slot lookup (from ctx_idx, d_chunk): the match vector is registered (CTX), then encoded (CHECK1).
        shit_now = Signal(n_slots)
        self.comb += shit_now.eq(Cat(*[s_valid[j] & ((s_ctx[j] & ctx_oh) != 0) & (s_chunk[j] == d_chunk)
                                       for j in range(n_slots)]))
        shit_r = Signal(n_slots)
        shit_vec = [shit_r[j] for j in range(n_slots)]
        sfree_vec = [~s_valid[j] for j in range(n_slots)]
        any_shit, shit_i, shit_chain = _first_set(shit_vec, n_slots)
        any_sfree, sfree_i, sfree_chain = _first_set(sfree_vec, n_slots)
        self.comb += shit_chain + sfree_chain

        # Selected context, registered (state CTX).
        k_expected, k_lastchunk = Signal(rw), Signal(16)
        k_targets = Signal(num_ports)
        k_islast, k_lastlen = Signal(), Signal(lce + 1)

        exp_bytes = Signal(17)
        self.comb += exp_bytes.eq(exp_elems * FP32_BYTES)

        # Setup record checks.
        rf = {name: record_field(d_record, name) for name in
              ("collective", "reduce_op", "input_fmt", "acc_mode", "output_fmt", "egress_first", "egress_last",
               "reserved0", "expected_local", "element_count", "reserved1")}
        # One flag per rule (registered in LOOKUP, ORed in LOOKUP2): no compare feeds another.
        setup_reserved_bad = Signal()
        setup_checks = Signal(11)
        self.comb += [
            setup_reserved_bad.eq((rf["reserved0"] != 0) | (rf["reserved1"] != 0)),
            setup_checks.eq(Cat(
                rf["collective"] != MS_COL_REDUCE, rf["reduce_op"] != MS_RED_SUM,
                rf["input_fmt"] != MS_FMT_FP32, rf["acc_mode"] != MS_ACC_EXACT_FP32_MAG277,
                rf["output_fmt"] != MS_FMT_FP32,
                rf["egress_first"] > rf["egress_last"], rf["egress_last"] >= num_ports,
                rf["expected_local"] == 0, rf["expected_local"] > max_ranks,
                rf["element_count"] == 0, rf["element_count"] > MAX_CHUNK_INDEX * chunk_elements)),
        ]

        def drop(name):
            return [self.drop.eq(1), self.drop_reason.eq(DROP[name])]

        words = lambda nbytes: (nbytes + 4 * lanes - 1) >> log2_int(4 * lanes)

        # Data frame decision (computed in CHECK2, applied in DECIDE): the first failing check in spec order.
        drop_c, reason_c = Signal(), Signal(max=len(DROP))
        self.comb += [
            drop_c.eq(1),
            If(~ctx_hit, reason_c.eq(DROP["unknown_coll"])
            ).Elif(rank_bad, reason_c.eq(DROP["bad_rank"])
            ).Elif(chunk_bad, reason_c.eq(DROP["bad_chunk"])
            ).Elif(~len_ok, reason_c.eq(DROP["bad_length"])
            ).Elif(dup, reason_c.eq(DROP["duplicate"])
            ).Elif(~slot_hit & ~slot_free, reason_c.eq(DROP["no_slot"])
            ).Else(drop_c.eq(0)),
        ]
        data_drop, data_reason, need_job = Signal(), Signal(max=len(DROP)), Signal()
        rank_oh = Signal(max_ranks)
        upd = Signal(n_slots)          # the slot this frame adds to (not completing)
        free = Signal(n_slots)         # the slot this frame completes
        go, commit, replace = Signal(), Signal(), Signal()
        # Queue room from registered readies: the engine is the only writer of both queues and writes at most
        # once a data frame (>= 8 cycles apart), so room seen one cycle ago is still there.
        jobs_room, meta_room = Signal(), Signal()
        self.sync += jobs_room.eq(job_w.ready), meta_room.eq(meta_w.ready)
        self.comb += go.eq((~need_job | jobs_room) & (data_drop | ~complete | meta_room))
        self.comb += [
            job_w.port.eq(sel), job_w.drop.eq(data_drop), job_w.emit.eq(complete),
            job_w.init.eq(init), job_w.slot.eq(cur), job_w.lastw.eq(nwords - 1),
            job_w.awords.eq(awords),
            meta_w.collective_id.eq(d_coll), meta_w.chunk_index.eq(d_chunk),
            meta_w.n_elements.eq(exp_elems),
            meta_w.targets.eq(k_targets),
        ]

        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(reduce_or(valids),
                NextValue(sel, pick), NextValue(fetch, 1 << pick), NextValue(fetching, 1),
                NextState("FETCH"))
        )
        fsm.act("FETCH",
            NextValue(fetch, 0), NextValue(fetching, 0),
            NextState("LOOKUP")
        )
        # The descriptor is captured with `fetching` (a flip-flop, high in FETCH) as its enable, not the state
        # decode: the capture's logic is the port multiplexer only.
        self.sync += If(fetching,
            d_kind.eq(desc.kind), d_coll.eq(desc.collective_id), d_rank.eq(desc.rank),
            d_chunk.eq(desc.chunk_index), d_pbytes.eq(desc.payload_bytes), d_record.eq(desc.record),
        )
        s_res_bad, s_checks, s_bad = Signal(), Signal(len(setup_checks)), Signal()
        fsm.act("LOOKUP",
            NextValue(hit_vec, Cat(*[c_valid[i] & (c_id[i] == d_coll) for i in range(n_contexts)])),
            NextValue(s_res_bad, setup_reserved_bad), NextValue(s_checks, setup_checks),
            NextValue(rank_oh, 1 << d_rank),
            [NextValue(is_last[i], d_chunk == c_lastchunk[i]) for i in range(n_contexts)],
            NextState("LOOKUP2")
        )
        fsm.act("LOOKUP2",
            NextValue(s_bad, s_checks != 0),
            NextValue(ctx_hit, any_hit), NextValue(ctx_idx, hit_i), NextValue(ctx_oh, 1 << hit_i),
            NextValue(ctx_free, any_free), NextValue(ctx_free_idx, free_i),
            NextValue(nwords, words(d_pbytes)),
            If(d_kind == KIND_SETUP, NextState("SETUP")).Else(NextState("CTX"))
        )
        fsm.act("SETUP",
            If(s_res_bad, *drop("bad_reserved")
            ).Elif(s_bad, *drop("bad_setup")
            ).Elif(~ctx_hit & ~ctx_free, *drop("ctx_full")
            ).Else(
                self.setup_done.eq(1),
                If(ctx_hit,   # replace: abandon the partial chunks of the old context
                    replace.eq(1)
                ).Else(NextValue(ctx_idx, ctx_free_idx), NextValue(ctx_oh, 1 << ctx_free_idx)),
                NextState("INSTALL")
            ),
            If(self.drop, NextState("IDLE"))
        )
        fsm.act("INSTALL",
            NextValue(c_valid[ctx_idx], 1), NextValue(c_id[ctx_idx], d_coll),
            NextValue(c_expected[ctx_idx], rf["expected_local"]),
            NextValue(c_lastchunk[ctx_idx], (rf["element_count"] - 1) >> lce),
            NextValue(c_lastlen[ctx_idx], Mux(rf["element_count"][:lce] == 0, chunk_elements,
                                              rf["element_count"][:lce])),
            NextValue(c_targets[ctx_idx], Cat(*[(rf["egress_first"] <= i) & (i <= rf["egress_last"])
                                                for i in range(num_ports)])),
            NextState("IDLE")
        )
        fsm.act("CTX",
            NextValue(k_expected, c_expected[ctx_idx]), NextValue(k_lastchunk, c_lastchunk[ctx_idx]),
            NextValue(k_targets, c_targets[ctx_idx]),
            # the rank's bit: an AND-OR with the registered one-hot Rank (no select decoding)
            [NextValue(rbit[j], (s_bitmap[j] & rank_oh) != 0) for j in range(n_slots)],
            NextValue(shit_r, shit_now),
            NextValue(k_islast, Array(is_last)[ctx_idx]), NextValue(k_lastlen, c_lastlen[ctx_idx]),
            NextState("CTX2")
        )
        fsm.act("CTX2",
            NextValue(exp_elems, Mux(k_islast, k_lastlen, chunk_elements)),
            NextState("CHECK1")
        )
        fsm.act("CHECK1",
            NextValue(rank_bad, d_rank >= k_expected),
            NextValue(chunk_bad, d_chunk > k_lastchunk),
            NextValue(len_ok, (d_pbytes == exp_bytes) |
                              ((d_pbytes > exp_bytes) & (d_pbytes <= ETH_MIN_FRAME - MS_HEADER_BYTES))),
            NextValue(awords, words(exp_bytes)),
            NextValue(slot_hit, any_shit), NextValue(slot_idx, shit_i),
            NextValue(slot_free, any_sfree), NextValue(slot_free_idx, sfree_i),
            NextValue(dup, reduce_or([shit_vec[j] & rbit[j] for j in range(n_slots)])),
            # per slot: would this contribution complete it (registered, off the CHECK2 decision path)
            [NextValue(cfull[j], (s_count[j] + 1)[:rw] == k_expected) for j in range(n_slots)],
            NextValue(exp1, k_expected == 1),
            NextState("CHECK2")
        )
        cur_c, count_c, complete_c = Signal(max=max(n_slots, 2)), Signal(rw), Signal()
        self.comb += [
            cur_c.eq(Mux(slot_hit, slot_idx, slot_free_idx)),
            count_c.eq(Mux(slot_hit, s_count[slot_idx], 0) + 1),
            complete_c.eq(Mux(slot_hit, Array(cfull)[slot_idx], exp1)),
        ]
        fsm.act("CHECK2",
            NextValue(data_drop, drop_c), NextValue(data_reason, reason_c),
            NextValue(need_job, ~drop_c | (nwords != 0)),
            NextValue(cur, cur_c), NextValue(init, ~slot_hit),
            NextValue(new_count, count_c), NextValue(complete, complete_c),
            NextValue(upd, Mux(drop_c | complete_c, 0, 1 << cur_c)),
            NextValue(free, Mux(~drop_c & complete_c, 1 << cur_c, 0)),
            NextState("DECIDE")
        )
        fsm.act("DECIDE",
            If(go,
                meta_w.valid.eq(~data_drop & complete), job_w.valid.eq(need_job),
                If(data_drop, self.drop.eq(1), self.drop_reason.eq(data_reason)),
                self.chunk_done.eq(free != 0), commit.eq(1),
                NextState("IDLE")
            )
        )
        # Slot table writes, one cycle after the decision (or the replacing setup), from registered per-slot
        # enables: `go` and the FSM decode do not fan out to the table. The next frame reads the table in
        # CTX at the earliest, three cycles later; the frame's registers (ctx_idx, d_chunk, ...) still hold.
        ap_upd, ap_free = Signal(n_slots), Signal(n_slots)
        self.sync += [
            ap_upd.eq(Mux(commit, upd, 0)),
            ap_free.eq(Mux(commit, free, 0) |
                       Mux(replace, Cat(*[(s_ctx[j] & ctx_oh) != 0 for j in range(n_slots)]), 0)),
            [If(ap_free[j], s_valid[j].eq(0)) for j in range(n_slots)],
            [If(ap_upd[j],
                s_valid[j].eq(1), s_ctx[j].eq(ctx_oh), s_chunk[j].eq(d_chunk),
                s_bitmap[j].eq(Mux(init, 0, s_bitmap[j]) | rank_oh), s_count[j].eq(new_count)
             ) for j in range(n_slots)],
        ]

        # Payload stage: the current job's words, one per cycle; the next job loads in the last word's cycle.
        # wleft: words after this one; aleft: words still to add (the rest is discarded, as a drained frame's
        # words); `last` and `in_acc` are their registered == 0 / != 0 flags.
        # Only b_active has a reset: the rest is loaded with each job and unused while b_active is low. The
        # word index is not reset by `load` (its loads sit at the bank, far from the handshake): `first` marks
        # a job's first word, whose index is 0, and the index counts from there.
        b_active = Signal()
        b_port, b_emit, b_init = Signal(pw, reset_less=True), Signal(reset_less=True), Signal(reset_less=True)
        b_slot, wleft, aleft = Signal(sw, reset_less=True), Signal(16, reset_less=True), Signal(16, reset_less=True)
        last, in_acc = Signal(reset_less=True), Signal(reset_less=True)
        widx, first = Signal(max=max(wpc, 2), reset_less=True), Signal(reset_less=True)
        # The job's port feeds a skid buffer: a port's ready comes from the skid's flag and the stage's
        # registers, never from the bank's ready.
        self.payload_skid = pskid = SkidBuffer([("data", 32 * lanes)])
        self.comb += [
            Case(b_port, {i: self.payload_sinks[i].connect(pskid.sink, omit={"valid", "ready"})
                          for i in range(num_ports)}),
            pskid.sink.valid.eq(b_active & Array(s.valid for s in self.payload_sinks)[b_port]),
            [s.ready.eq(b_active & (b_port == i) & pskid.sink.ready) for i, s in enumerate(self.payload_sinks)],
        ]
        payload = pskid.source
        take, load = Signal(), Signal()
        addr = Cat(Mux(first, 0, widx), b_slot) if wpc > 1 else b_slot
        self.comb += [
            acc_in.valid.eq(b_active & payload.valid & in_acc),
            acc_in.op.eq(ACC_OP_ADD), acc_in.addr.eq(addr), acc_in.init.eq(b_init), acc_in.emit.eq(b_emit),
            acc_in.data.eq(payload.data),
            payload.ready.eq(b_active & (~in_acc | acc_in.ready)),
            take.eq(payload.valid & payload.ready),
            load.eq(~b_active | (take & last)),
            job.ready.eq(load),
        ]
        self.sync += [
            If(take,
                widx.eq(Mux(first, 1, widx + 1)), first.eq(0), wleft.eq(wleft - 1), last.eq(wleft == 1),
                If(in_acc, aleft.eq(aleft - 1), in_acc.eq(aleft != 1))
            ),
            If(load,
                b_active.eq(job.valid), b_port.eq(job.port),
                b_emit.eq(job.emit), b_init.eq(job.init), b_slot.eq(job.slot),
                wleft.eq(job.lastw), last.eq(job.lastw == 0),
                aleft.eq(job.awords), in_acc.eq(~job.drop),
                first.eq(1)
            ),
        ]

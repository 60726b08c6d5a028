"""Sparsr card-side receiver: validates whole 256-word frames, then stores their rows in WMEM or XMEM.

Structure (one word per cycle in, see docs/sparsr.md):

* Parser: every accepted input word is written into one of two 256-word frame buffers (ping-pong) and
  checked on the fly (header, tags, LIL lane order and padding, raw-piece continuity, LEN/ADDR against the
  slots). At the frame's last word it either hands the buffer to the executor with a slot table, or drops
  the whole frame and counts the reason.
* Executor: commits the buffered frame (or runs a read/DMA/status command) while the parser fills the
  other buffer. A committed slot costs at most its own length in cycles (slot header words pay for the
  set-up), so a full frame commits in at most 255 cycles and input never stalls on writes.
* Memories: rows are stored in physical row slots behind a row map with one spare slot. A raw row's
  pieces go into the spare slot and the map is switched when the last piece arrives, so a row changes
  only when complete, at no copy cost. WMEM keeps a 256-bit lane mask per physical row: a LIL row writes
  only its listed lanes and its mask (lanes not listed read as 0), so clearing a row costs no cycles.
  XMEM keeps rows as sent: the LIL payload words verbatim plus a (kind, count) form word, or the raw words.
* The only LIL decoder sits on the path into WMEM; the XMEM->WMEM DMA feeds LIL rows through it too.
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counters, add_counter_csrs
from cores.sparsr.common import (
    FRAME_WORDS, HEADER_WORDS, PAYLOAD_WORDS, MAX_SLOTS, ROW_WORDS, ROW_LANES, LIL_ENTRY_BYTES,
    TAG, KIND_END, KIND_RAW, KIND_LIL,
    LANE_WIDTH_CODE, LIL_MAX_ENTRIES, CMD_WRITE_WMEM, CMD_WRITE_XMEM, CMD_READ_WMEM, CMD_DMA_XMEM_WMEM,
    CMD_STATUS, CMD_ANSWER_ROWS, CMD_ANSWER_STATUS, CMD_PARAMS, MAX_PIECE_WORDS,
    REASONS, REASON_LENGTH, REASON_CMD, REASON_TAG, REASON_LIL, REASON_PIECE, REASON_HEADER, REASON_BITS,
    COUNTERS, STATUS_COUNTERS,
)

WORD_LAYOUT = [("data", 32)]


def _wide(value, extra):
    """`value` zero-extended by `extra` bits. Verilog evaluates an expression at the width of its widest
    operand or target (Migen's simulator at unbounded width), so a sum or shift that can outgrow both must
    widen an operand; otherwise it wraps in the gateware only."""
    return Cat(value, C(0, extra))


def _entry_bytes(count):
    """count * LIL_ENTRY_BYTES as shifts and adds (no multiplier on the path), exact at any target width."""
    assert LIL_ENTRY_BYTES == 5
    wide = _wide(count, 3)
    return (wide << 2) + wide


def _lil_words(count):
    """Payload words of `count` LIL entries: ceil(5 count / 4)."""
    return (_entry_bytes(count) + 3) >> 2


class LILDecoder(LiteXModule):
    """Turns the payload words of one LIL slot into (lane, value) entries.

    `start` (with `count`) resets it for a new slot; then each cycle with `word_valid` consumes one 32-bit
    word and, combinationally in the same cycle, outputs at most one entry (`entry_valid`, `lane`, `value`).
    5-byte entries over 4-byte words: 4 entries per 5 words; at most 4 bytes are ever held back, so the
    last word of a slot always yields its last entry. Latency 0, one word per cycle.
    """
    def __init__(self):
        self.start = Signal()
        self.count = Signal(9)
        self.word_valid = Signal()
        self.word = Signal(32)
        self.entry_valid = Signal()
        self.lane = Signal(8)
        self.value = Signal(32)

        # # #

        acc = Signal(32)          # held-back bytes (at most 4)
        nacc = Signal(3)          # how many
        left = Signal(9)          # entries still to emit
        combined = Signal(64)     # held-back bytes followed by the new word
        self.comb += [
            Case(nacc, {i: combined.eq(Cat(acc[:8 * i], self.word) if i else self.word) for i in range(5)}),
            self.entry_valid.eq(self.word_valid & (nacc != 0) & (left != 0)),
            self.lane.eq(combined[0:8]),
            self.value.eq(combined[8:40]),
        ]
        self.sync += [
            If(self.start,
                acc.eq(0), nacc.eq(0), left.eq(self.count),
            ).Elif(self.word_valid,
                If(self.entry_valid,
                    acc.eq(combined[40:64]), nacc.eq(nacc - 1), left.eq(left - 1),
                ).Else(
                    acc.eq(combined[0:32]), nacc.eq(nacc + 4),
                )
            )
        ]


# Executor job kinds (internal: the buffered frame's command, decoded once by the parser).
JOB_WRITE_W, JOB_WRITE_X, JOB_READ, JOB_DMA, JOB_STATUS = range(5)


class SparsrReceiver(LiteXModule):
    """Card-side receiver of the Sparsr wire format, with WMEM, XMEM and the XMEM->WMEM DMA.

    Parameters: `wmem_rows`, `xmem_rows` (rows of 1024 bytes each memory holds, 1..4096), `fifo_depth` of
    the answer FIFO, `with_csr` (one CSRStatus per counter of `common.COUNTERS`, cores.lib.counters).

    `sink`: 32-bit words, `last` on the 256th word of each frame (a frame of any other length is refused,
    reason LENGTH). `source`: answer frames (rows read, status), same framing.
    Throughput: one input word per cycle sustained for write frames (a frame commits in at most 255
    cycles while the next one streams in); a read or DMA command holds the input only while it runs.
    `idle`: nothing received or in progress. Latency: a frame's rows are visible at most 256 cycles after its last word.
    """
    def __init__(self, wmem_rows=32, xmem_rows=16, fifo_depth=8, with_csr=False):
        for name, v in (("wmem_rows", wmem_rows), ("xmem_rows", xmem_rows)):
            if not isinstance(v, int) or not 1 <= v <= 4096:
                raise ValueError(f"{name} must be an integer in 1..4096, got {v!r}")
        if not isinstance(fifo_depth, int) or fifo_depth < 4:
            raise ValueError(f"fifo_depth must be an integer >= 4, got {fifo_depth!r}")
        self.wmem_rows, self.xmem_rows = wmem_rows, xmem_rows
        self.sink = stream.Endpoint(WORD_LAYOUT)
        self.source = stream.Endpoint(WORD_LAYOUT)
        self.idle = Signal()      # no frame half received, none waiting or being committed

        # # #

        R, X = wmem_rows, xmem_rows
        pwb, pxb = bits_for(R), bits_for(X)          # physical row index: 0..R (R is the spare at reset)
        rb = max(bits_for(max(R, X) - 1), 1)

        # Memories -------------------------------------------------------------------------------------
        fbuf = Memory(32, 2 * FRAME_WORDS, name="sparsr_fbuf")
        fb_w, fb_r = fbuf.get_port(write_capable=True), fbuf.get_port()
        vals_w = Memory(32, (R + 1) * ROW_WORDS, name="sparsr_wmem")
        vw_w, vw_r = vals_w.get_port(write_capable=True), vals_w.get_port()
        vals_x = Memory(32, (X + 1) * ROW_WORDS, name="sparsr_xmem")
        vx_w, vx_r = vals_x.get_port(write_capable=True), vals_x.get_port()
        mask_w = Memory(ROW_LANES, R + 1, name="sparsr_wmask")
        mk_w, mk_r = mask_w.get_port(write_capable=True), mask_w.get_port()
        # XMEM form of each physical row: Cat(count, is_raw); at reset (all zero) every row is an empty LIL row.
        form_x = Memory(10, X + 1, name="sparsr_xform")
        fx = form_x.get_port(write_capable=True)
        fx_r = form_x.get_port(async_read=True)
        # Row maps hold physical row XOR row number, so the all-zero reset state is the identity map
        # (no memory initialisation needed).
        map_w = Memory(pwb, max(R, 2), name="sparsr_wmap")     # (a 1-entry memory has no address)
        mw = map_w.get_port(write_capable=True, async_read=True)
        map_x = Memory(pxb, max(X, 2), name="sparsr_xmap")
        mx = map_x.get_port(write_capable=True, async_read=True)
        self.specials += [fbuf, fb_w, fb_r, vals_w, vw_w, vw_r, vals_x, vx_w, vx_r, mask_w, mk_w, mk_r,
                          form_x, fx, fx_r, map_w, mw, map_x, mx]
        free_w = Signal(pwb, reset=R)
        free_x = Signal(pxb, reset=X)

        # Shared between parser and executor: bank ownership, slot tables and jobs ------------------------
        busy = Array(Signal(name=f"busy{i}") for i in range(2))
        t_raw = Array(Signal() for _ in range(8))
        t_row = Array(Signal(rb) for _ in range(8))
        t_off = Array(Signal(8) for _ in range(8))
        t_cnt = Array(Signal(9) for _ in range(8))
        t_start = Array(Signal(8) for _ in range(8))
        t_fin = Array(Signal() for _ in range(8))
        t_inr = Array(Signal() for _ in range(8))
        j_kind = Array(Signal(3) for _ in range(2))
        j_ns = Array(Signal(3) for _ in range(2))
        j_p = [Array(Signal(32) for _ in range(2)) for _ in range(3)]

        # Parser -----------------------------------------------------------------------------------------
        sink = self.sink
        word = sink.data
        idx = Signal(8)
        wbank = Signal()
        discard = Signal()
        cmd = Signal(32)
        hlen = Signal(32)
        hlen_end = Signal(33)    # HEADER_WORDS + LEN: the index of a kind-00 tag that agrees with LEN
        haddr = Signal(32)
        reason = Signal(REASON_BITS)
        PS_TAG, PS_ROW, PS_PAY, PS_END = range(4)
        ps = Signal(2)
        nslots = Signal(3)
        n_oor = Signal(3)
        s_raw, s_cnt, s_off, s_end, s_cont = Signal(), Signal(9), Signal(8), Signal(9), Signal()
        phase, ent, prev, has_prev, pw, pad_start = Signal(3), Signal(9), Signal(8), Signal(), Signal(8), Signal(10)
        params = [Signal(32) for _ in range(3)]
        # Raw row in progress: committed (p_*) and as this frame would leave it (q_*).
        p_valid, p_row, p_off, p_x = Signal(), Signal(32), Signal(9), Signal()
        q_valid, q_row, q_off, q_x = Signal(), Signal(32), Signal(9), Signal()

        fire = Signal()
        self.comb += [
            sink.ready.eq(discard | ~busy[wbank]),
            fire.eq(sink.valid & sink.ready),
            fb_w.adr.eq(Cat(idx, wbank)),
            fb_w.dat_w.eq(word),
            fb_w.we.eq(fire & ~discard),
        ]
        is_w, is_x = Signal(), Signal()
        is_write, is_read, is_dma, is_status = Signal(), Signal(), Signal(), Signal()
        self.comb += [
            is_w.eq(cmd == CMD_WRITE_WMEM), is_x.eq(cmd == CMD_WRITE_XMEM), is_write.eq(is_w | is_x),
            is_read.eq(cmd == CMD_READ_WMEM), is_dma.eq(cmd == CMD_DMA_XMEM_WMEM), is_status.eq(cmd == CMD_STATUS),
        ]
        # Tag word fields, as if the current word were a tag.
        k_kind, k_width, k_cnt, k_off = (TAG.field(word, f) for f in ("kind", "width", "count", "offset"))
        k_res = Signal()
        k_w = Signal(10)
        k_nw = Signal(10)
        k_end = Signal(11)
        self.comb += [
            k_res.eq((word & TAG.reserved_mask()) != 0),
            k_w.eq(_lil_words(k_cnt)),
            k_nw.eq(Mux(k_kind == KIND_LIL, k_w, k_cnt)),
            k_end.eq(idx + 1 + k_nw),
        ]
        body = Signal()          # a payload word of a write frame
        at_tag, at_row, at_pay = Signal(), Signal(), Signal()
        self.comb += [
            body.eq(fire & ~discard & (idx >= HEADER_WORDS) & is_write),
            at_tag.eq(body & (ps == PS_TAG)),
            at_row.eq(body & (ps == PS_ROW)),
            at_pay.eq(body & (ps == PS_PAY)),
        ]
        n_rows_target = Signal(32)
        row_inr, row_oor = Signal(), Signal()
        self.comb += [
            n_rows_target.eq(Mux(is_x, X, R)),
            row_inr.eq(word < n_rows_target),
            row_oor.eq(~row_inr),
        ]
        # LIL checks on a payload word.
        lane_here = Signal()
        lane = Signal(8)
        wbytes = [word[8 * i:8 * i + 8] for i in range(4)]
        pad_bad = Signal()
        self.comb += [
            lane_here.eq((phase < 4) & (ent < s_cnt)),
            lane.eq(Array(wbytes)[phase[:2]]),
            pad_bad.eq(reduce(or_, [(((pw << 2) + i >= pad_start) & (wbytes[i] != 0)) for i in range(4)])),
        ]
        # End of the slot list in this word (a kind-00 tag, or a slot ending on the frame's last word).
        end_tag = Signal()
        slot_ends = Signal()
        list_end = Signal()
        end_nslots = Signal(3)
        self.comb += [
            end_tag.eq(at_tag & (k_kind == KIND_END)),
            slot_ends.eq((at_row | at_pay) & (s_end == idx)),
            list_end.eq(end_tag | (slot_ends & (idx == FRAME_WORDS - 1))),
            end_nslots.eq(nslots + at_row),
        ]
        # Errors found on this word, in priority order (the first one names the refusal).
        known_cmd, cont_ok = Signal(), Signal()
        self.comb += [
            known_cmd.eq((word >= CMD_WRITE_WMEM) & (word <= CMD_STATUS)),
            cont_ok.eq(Mux(p_x, word == CMD_WRITE_XMEM, word == CMD_WRITE_WMEM) | (word == CMD_STATUS)),
        ]
        exp_len = Signal(32)
        self.comb += Case(cmd, {**{c: exp_len.eq(n) for c, n in CMD_PARAMS.items()}, "default": exp_len.eq(0)})
        tag_bad, piece_bad = Signal(), Signal()
        self.comb += [
            tag_bad.eq((k_kind == 0b11) | (k_width != LANE_WIDTH_CODE) | k_res |
                       ((k_kind == KIND_RAW) & ((k_cnt == 0) | (_wide(k_off, 2) + k_cnt > ROW_WORDS))) |
                       ((k_kind == KIND_LIL) & ((k_cnt > LIL_MAX_ENTRIES) | (k_off != 0))) |
                       (k_end > FRAME_WORDS - 1)),
            piece_bad.eq(Mux(q_valid, (nslots != 0) | (k_kind != KIND_RAW) | (k_off != q_off),
                             (k_kind == KIND_RAW) & (k_off != 0))),
        ]
        hdr_word = Signal()
        self.comb += hdr_word.eq(fire & ~discard & (idx < HEADER_WORDS))
        errors = [
            (hdr_word & (idx == 0) & ~known_cmd, REASON_CMD),
            (hdr_word & (idx == 0) & p_valid & ~cont_ok, REASON_PIECE),
            (hdr_word & (idx == 2) & ~is_write & ((hlen != exp_len) | (word != 0)), REASON_CMD),
            (at_tag & (k_kind != KIND_END) & tag_bad, REASON_TAG),
            (at_tag & (k_kind != KIND_END) & (nslots == MAX_SLOTS), REASON_HEADER),
            (at_tag & (k_kind != KIND_END) & piece_bad, REASON_PIECE),
            (at_row & s_cont & (word != q_row), REASON_PIECE),
            (at_pay & ~s_raw & ((lane_here & has_prev & (lane <= prev)) | pad_bad), REASON_LIL),
            (list_end & ((end_nslots != haddr) | (end_nslots == 0) |
                         Mux(end_tag, idx != hlen_end, hlen != PAYLOAD_WORDS)), REASON_HEADER),
        ]
        err_sigs = []
        for cond, _ in errors:
            e = Signal()
            self.comb += e.eq(cond)
            err_sigs.append(e)
        err_now = Signal()
        err_code = Signal(REASON_BITS)
        self.comb += err_now.eq(reduce(or_, err_sigs))
        sel = err_code.eq(0)
        for e, (_, r) in reversed(list(zip(err_sigs, errors))):
            sel = If(e, err_code.eq(r)).Else(sel)
        self.comb += sel
        # Command parameters (registered by the last word, so only registers are used here).
        p0, p1, p2 = params
        cmd_ok = Signal()
        self.comb += cmd_ok.eq(
            is_write |
            (is_read & (p0 < R) & (p1 != 0) & (_wide(p0, 1) + p1 <= R)) |
            (is_dma & (p0 < X) & (p1 < R) & (p2 != 0) & (_wide(p0, 1) + p2 <= X) &
             (_wide(p1, 1) + p2 <= R)) |
            is_status)
        frame_end = Signal()
        final_reason = Signal(REASON_BITS)
        accept = Signal()
        len_bad_early = Signal()
        len_bad_late = Signal()
        refuse = Signal()
        frame_done = Signal()
        self.comb += [
            frame_end.eq(fire & ~discard & (idx == FRAME_WORDS - 1) & sink.last),
            len_bad_early.eq(fire & ~discard & sink.last & (idx != FRAME_WORDS - 1)),
            len_bad_late.eq(fire & ~discard & ~sink.last & (idx == FRAME_WORDS - 1)),
            final_reason.eq(Mux(reason != 0, reason, Mux(err_now, err_code, Mux(cmd_ok, 0, REASON_CMD)))),
            accept.eq(frame_end & (final_reason == 0)),
            refuse.eq((frame_end & (final_reason != 0)) | len_bad_early | len_bad_late),
            frame_done.eq(frame_end | len_bad_early | len_bad_late),     # accept | refuse, without the verdict
        ]
        refuse_code = Signal(REASON_BITS)
        self.comb += refuse_code.eq(Mux(len_bad_early | len_bad_late, REASON_LENGTH, final_reason))
        job_kind = Signal(3)
        self.comb += job_kind.eq(Mux(is_w, JOB_WRITE_W, Mux(is_x, JOB_WRITE_X, Mux(is_read, JOB_READ,
                                     Mux(is_dma, JOB_DMA, JOB_STATUS)))))
        tix = Cat(nslots[:2], wbank)
        new_off = Signal(9)
        self.comb += new_off.eq(s_off + s_cnt)
        self.sync += [
            If(fire & discard & sink.last, discard.eq(0)),
            If(fire & ~discard,
                idx.eq(idx + 1),
                If(err_now & (reason == 0), reason.eq(err_code)),
                If(idx == 0, cmd.eq(word)),
                If(idx == 1, hlen.eq(word), hlen_end.eq(_wide(word, 1) + HEADER_WORDS)),
                If(idx == 2, haddr.eq(word)),
                [If(idx == HEADER_WORDS + i, params[i].eq(word)) for i in range(3)],
            ),
            If(at_tag,
                If(k_kind == KIND_END,
                    ps.eq(PS_END),
                ).Else(
                    ps.eq(PS_ROW),
                    s_raw.eq(k_kind == KIND_RAW), s_cnt.eq(k_cnt), s_off.eq(k_off), s_end.eq(k_end),
                    s_cont.eq(q_valid),
                    phase.eq(0), ent.eq(0), has_prev.eq(0), pw.eq(0), pad_start.eq(_entry_bytes(k_cnt)),
                )
            ),
            If(at_row,
                ps.eq(Mux(s_end == idx, PS_TAG, PS_PAY)),
                nslots.eq(nslots + 1),
                n_oor.eq(n_oor + row_oor),
                t_raw[tix].eq(s_raw), t_row[tix].eq(word), t_off[tix].eq(s_off), t_cnt[tix].eq(s_cnt),
                t_start[tix].eq(idx - 1), t_fin[tix].eq(new_off == ROW_WORDS), t_inr[tix].eq(row_inr),
                If(s_raw,
                    q_valid.eq(new_off != ROW_WORDS), q_row.eq(word), q_off.eq(new_off), q_x.eq(is_x),
                ),
            ),
            If(at_pay,
                If(s_end == idx, ps.eq(PS_TAG)),
                phase.eq(Mux(phase == 4, 0, phase + 1)),
                pw.eq(pw + 1),
                If(lane_here, ent.eq(ent + 1), prev.eq(lane), has_prev.eq(1)),
            ),
            If(accept,
                busy[wbank].eq(1),
                j_kind[wbank].eq(job_kind), j_ns[wbank].eq(end_nslots),
                [j_p[i][wbank].eq(params[i]) for i in range(3)],
                wbank.eq(~wbank),
                p_valid.eq(q_valid), p_row.eq(q_row), p_off.eq(q_off), p_x.eq(q_x),
            ),
            If(refuse,
                q_valid.eq(p_valid), q_row.eq(p_row), q_off.eq(p_off), q_x.eq(p_x),
            ),
            If(frame_done,
                idx.eq(0), reason.eq(0), ps.eq(PS_TAG), nslots.eq(0), n_oor.eq(0),
                If(len_bad_late, discard.eq(1)),
            ),
        ]

        # Counters: one event (or count) per cycle each.
        slot_stored = Signal()                       # the executor stored a slot
        cnt = add_counters(self, COUNTERS, {
            "frames_ok": accept,
            **{"refused_" + name: refuse & (refuse_code == code) for code, name in REASONS.items()},
            "slots_stored": slot_stored,
            "slots_refused_row": Mux(accept, n_oor + (at_row & row_oor), 0),
        })

        # Executor ---------------------------------------------------------------------------------------
        self.decoder = dec = LILDecoder()
        ebank = Signal()
        release = Signal()
        si = Signal(3)
        tix_e = Signal(3)
        self.comb += tix_e.eq(Cat(si[:2], ebank))
        x_raw, x_tox, x_fin, x_cnt, x_off, x_inr = Signal(), Signal(), Signal(), Signal(9), Signal(8), Signal()
        x_nw = Signal(9)
        trow_w, trow_x = Signal(rb), Signal(rb)
        phys = Signal(max(pwb, pxb))
        physx = Signal(pxb)
        rd_ptr = Signal(9)
        issue_left, proc_left, o = Signal(9), Signal(9), Signal(9)
        src_x = Signal()
        in_dma = Signal()
        dleft = Signal(32)
        mask_acc = Signal(ROW_LANES)
        mw_phys, mx_phys = Signal(pwb), Signal(pxb)
        self.comb += [
            mw.adr.eq(trow_w), mx.adr.eq(trow_x),
            mw_phys.eq(mw.dat_r ^ trow_w), mx_phys.eq(mx.dat_r ^ trow_x),
            mk_r.adr.eq(mw_phys),
            fx_r.adr.eq(physx),
        ]
        move_word = Signal(32)
        raw_lane = Signal(8)
        self.comb += [
            move_word.eq(Mux(src_x, vx_r.dat_r, fb_r.dat_r)),
            raw_lane.eq(x_off + o[:8]),
        ]
        self.sync += If(release, busy[ebank].eq(0), ebank.eq(~ebank))
        self.comb += self.idle.eq((idx == 0) & ~discard & ~busy[0] & ~busy[1])

        # Answer path: one item per cycle into a FIFO; items from WMEM are read one cycle before.
        self.fifo = fifo = stream.SyncFIFO(WORD_LAYOUT, fifo_depth, buffered=False)
        self.comb += fifo.source.connect(self.source)
        emit, emit_mem, emit_last = Signal(), Signal(), Signal()
        emit_word = Signal(32)
        it_valid, it_mem, it_last, it_bit = Signal(), Signal(), Signal(), Signal()
        it_word = Signal(32)
        can_push = Signal()
        fw = Signal(9)
        self.comb += [
            can_push.eq(_wide(fifo.level, 1) + it_valid < fifo_depth),
            fifo.sink.valid.eq(it_valid),
            fifo.sink.data.eq(Mux(it_mem, Mux(it_bit, vw_r.dat_r, 0), it_word)),
            fifo.sink.last.eq(it_last),
            emit_last.eq(fw == FRAME_WORDS - 1),
        ]
        self.sync += [
            it_valid.eq(emit), it_mem.eq(emit_mem), it_word.eq(emit_word), it_last.eq(emit_last),
            it_bit.eq((mk_r.dat_r >> vw_r.adr[:8])[0]),
            If(emit, fw.eq(fw + 1)),
        ]

        # Read plan of one answer frame: a first piece and, if that ends a row, a second one.
        rleft = Signal(32)
        ro = Signal(8)
        self.comb += vw_r.adr.eq(Cat(ro, mw_phys))     # only R_DATA uses what it reads
        pc1, pc2, pc, used = Signal(9), Signal(9), Signal(9), Signal(9)
        two, second = Signal(), Signal()
        a_pc1, a_space = Signal(9), Signal(9)
        self.comb += [
            a_pc1.eq(Mux(ROW_WORDS - ro > MAX_PIECE_WORDS, MAX_PIECE_WORDS, ROW_WORDS - ro)),
            a_space.eq(PAYLOAD_WORDS - 2 - a_pc1),
        ]

        # Decoded LIL entries are registered and written to WMEM one cycle later (timing); the lane mask of
        # a LIL slot is written in the cycle after its last word, always a W_SLOT or D_NEXT cycle, which
        # uses neither WMEM port, so the pipeline stage costs no cycle.
        e_valid, e_lane, e_value, e_fin, e_fin_set = Signal(), Signal(8), Signal(32), Signal(), Signal()
        e_bit = Signal(ROW_LANES)
        self.sync += [
            e_valid.eq(dec.entry_valid), e_lane.eq(dec.lane), e_value.eq(dec.value), e_fin.eq(e_fin_set),
            If(e_valid, mask_acc.eq(mask_acc | e_bit)),
        ]
        self.comb += [
            e_bit.eq(Mux(e_valid, C(1, ROW_LANES) << e_lane, 0)),
            If(e_valid, vw_w.adr.eq(Cat(e_lane, phys[:pwb])), vw_w.dat_w.eq(e_value), vw_w.we.eq(1)),
            If(e_fin, mk_w.adr.eq(phys[:pwb]), mk_w.dat_w.eq(mask_acc | e_bit), mk_w.we.eq(1)),
        ]

        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(busy[ebank],
                NextValue(si, 0),
                Case(j_kind[ebank], {
                    JOB_WRITE_W: NextState("W_SLOT"),
                    JOB_WRITE_X: NextState("W_SLOT"),
                    JOB_READ: [NextValue(trow_w, j_p[0][ebank]), NextValue(rleft, j_p[1][ebank]),
                               NextValue(ro, 0), NextState("R_PLAN")],
                    JOB_DMA: [NextValue(trow_x, j_p[0][ebank]), NextValue(trow_w, j_p[1][ebank]),
                              NextValue(dleft, j_p[2][ebank]), NextState("D_ROW")],
                    JOB_STATUS: [NextValue(fw, 0), NextState("S_EMIT")],
                })
            )
        )
        # Write frames: one slot after another.
        fsm.act("W_SLOT",
            If(si == j_ns[ebank],
                release.eq(1), NextState("IDLE"),
            ).Else(
                NextValue(x_raw, t_raw[tix_e]), NextValue(x_cnt, t_cnt[tix_e]), NextValue(x_off, t_off[tix_e]),
                NextValue(x_fin, t_fin[tix_e]), NextValue(x_inr, t_inr[tix_e]),
                NextValue(x_tox, j_kind[ebank] == JOB_WRITE_X),
                NextValue(trow_w, t_row[tix_e]), NextValue(trow_x, t_row[tix_e]),
                NextValue(rd_ptr, t_start[tix_e] + 2),
                NextValue(x_nw, Mux(t_raw[tix_e], t_cnt[tix_e], _lil_words(t_cnt[tix_e]))),
                NextValue(in_dma, 0),
                NextState("W_PREP"),
            )
        )
        start_move = [
            NextValue(rd_ptr, rd_ptr + 1), NextValue(issue_left, x_nw - 1), NextValue(proc_left, x_nw),
            NextValue(o, 0), NextValue(mask_acc, 0), dec.start.eq(1), dec.count.eq(x_cnt),
            NextState("MOVE"),
        ]
        fsm.act("W_PREP",
            fb_r.adr.eq(Cat(rd_ptr[:8], ebank)),
            If(~x_inr,
                NextValue(si, si + 1), NextState("W_SLOT"),
            ).Elif(x_nw == 0,
                If(x_tox,
                    fx.adr.eq(mx_phys), fx.dat_w.eq(0), fx.we.eq(1),
                ).Else(
                    mk_w.adr.eq(mw_phys), mk_w.dat_w.eq(0), mk_w.we.eq(1),
                ),
                slot_stored.eq(1),
                NextValue(si, si + 1), NextState("W_SLOT"),
            ).Else(
                NextValue(src_x, 0),
                NextValue(phys, Mux(x_raw, Mux(x_tox, free_x, free_w), Mux(x_tox, mx_phys, mw_phys))),
                *start_move,
            )
        )
        # Move the words of one slot (or one XMEM row): raw -> row words, LIL -> decoder or copy.
        fsm.act("MOVE",
            If(src_x, vx_r.adr.eq(Cat(rd_ptr[:8], physx))).Else(fb_r.adr.eq(Cat(rd_ptr[:8], ebank))),
            If(issue_left != 0, NextValue(rd_ptr, rd_ptr + 1), NextValue(issue_left, issue_left - 1)),
            NextValue(proc_left, proc_left - 1),
            NextValue(o, o + 1),
            If(x_raw,
                If(x_tox,
                    vx_w.adr.eq(Cat(raw_lane, phys[:pxb])), vx_w.dat_w.eq(move_word), vx_w.we.eq(1),
                ).Else(
                    vw_w.adr.eq(Cat(raw_lane, phys[:pwb])), vw_w.dat_w.eq(move_word), vw_w.we.eq(1),
                )
            ).Elif(x_tox,
                vx_w.adr.eq(Cat(o[:8], phys[:pxb])), vx_w.dat_w.eq(move_word), vx_w.we.eq(1),
            ).Else(
                dec.word_valid.eq(1), dec.word.eq(move_word),
            ),
            If(proc_left == 1,
                e_fin_set.eq(~x_raw & ~x_tox),
                If(x_raw,
                    If(x_fin,
                        If(x_tox,
                            mx.dat_w.eq(free_x ^ trow_x), mx.we.eq(1), NextValue(free_x, mx_phys),
                            fx.adr.eq(free_x), fx.dat_w.eq(1 << 9), fx.we.eq(1),
                        ).Else(
                            mw.dat_w.eq(free_w ^ trow_w), mw.we.eq(1), NextValue(free_w, mw_phys),
                            mk_w.adr.eq(free_w), mk_w.dat_w.eq((1 << ROW_LANES) - 1), mk_w.we.eq(1),
                        )
                    )
                ).Elif(x_tox,
                    fx.adr.eq(phys[:pxb]), fx.dat_w.eq(x_cnt), fx.we.eq(1),
                ),
                If(in_dma,
                    NextState("D_NEXT"),
                ).Else(
                    slot_stored.eq(1),
                    NextValue(si, si + 1), NextState("W_SLOT"),
                )
            )
        )
        # DMA XMEM -> WMEM, one row after another; LIL rows go through the decoder.
        fsm.act("D_ROW",
            If(dleft == 0,
                release.eq(1), NextState("IDLE"),
            ).Else(
                NextValue(physx, mx_phys), NextValue(in_dma, 1), NextValue(src_x, 1), NextValue(x_tox, 0),
                NextState("D_FORM"),
            )
        )
        fsm.act("D_FORM",
            vx_r.adr.eq(Cat(C(0, 8), physx)),
            NextValue(rd_ptr, 0),
            NextValue(x_raw, fx_r.dat_r[9]), NextValue(x_fin, 1), NextValue(x_off, 0),
            NextValue(x_cnt, fx_r.dat_r[:9]),
            NextValue(x_nw, Mux(fx_r.dat_r[9], ROW_WORDS, _lil_words(fx_r.dat_r[:9]))),
            NextValue(phys, Mux(fx_r.dat_r[9], free_w, mw_phys)),
            NextState("D_PREP"),
        )
        fsm.act("D_PREP",
            vx_r.adr.eq(Cat(rd_ptr[:8], physx)),
            If(x_nw == 0,
                mk_w.adr.eq(phys[:pwb]), mk_w.dat_w.eq(0), mk_w.we.eq(1),
                NextState("D_NEXT"),
            ).Else(*start_move)
        )
        fsm.act("D_NEXT",
            NextValue(trow_x, trow_x + 1), NextValue(trow_w, trow_w + 1), NextValue(dleft, dleft - 1),
            NextState("D_ROW"),
        )
        # Read WMEM: answer frames of raw pieces.
        fsm.act("R_PLAN",
            NextValue(pc1, a_pc1),
            NextValue(two, (ro + a_pc1 == ROW_WORDS) & (rleft > 1) & (a_space >= 3)),
            NextValue(pc2, a_space - 2),
            NextValue(used, Mux((ro + a_pc1 == ROW_WORDS) & (rleft > 1) & (a_space >= 3),
                                PAYLOAD_WORDS, a_pc1 + 2)),
            NextValue(fw, 0), NextValue(second, 0),
            NextState("R_HDR"),
        )
        fsm.act("R_HDR",
            If(can_push,
                emit.eq(1),
                emit_word.eq(Mux(fw == 0, CMD_ANSWER_ROWS, Mux(fw == 1, used, 1 + two))),
                NextValue(pc, pc1),
                If(fw == 2, NextState("R_TAG")),
            )
        )
        fsm.act("R_TAG",
            If(can_push,
                emit.eq(1),
                emit_word.eq(TAG.value(kind=KIND_RAW, width=LANE_WIDTH_CODE, count=pc, offset=ro)),
                NextState("R_ROW"),
            )
        )
        fsm.act("R_ROW",
            If(can_push,
                emit.eq(1), emit_word.eq(trow_w), NextValue(dleft, pc), NextState("R_DATA"),
            )
        )
        fsm.act("R_DATA",
            If(can_push,
                emit.eq(1), emit_mem.eq(1),
                NextValue(ro, ro + 1), NextValue(dleft, dleft - 1),
                If(dleft == 1,
                    If(ro == ROW_WORDS - 1, NextValue(trow_w, trow_w + 1), NextValue(rleft, rleft - 1)),
                    If(two & ~second,
                        NextValue(second, 1), NextValue(pc, pc2), NextState("R_TAG"),
                    ).Else(
                        NextState("R_PAD"),
                    )
                )
            )
        )
        fsm.act("R_PAD",
            If(fw == FRAME_WORDS,
                If(rleft == 0, release.eq(1), NextState("IDLE")).Else(NextState("R_PLAN")),
            ).Elif(can_push,
                emit.eq(1), emit_word.eq(0),
            )
        )
        # Status: the counters in STATUS_COUNTERS order.
        n_cnt = len(STATUS_COUNTERS)
        status_words = Array([C(CMD_ANSWER_STATUS, 32), C(n_cnt, 32), C(0, 32)] +
                             [cnt[n] for n in STATUS_COUNTERS])
        fsm.act("S_EMIT",
            If(fw == FRAME_WORDS,
                release.eq(1), NextState("IDLE"),
            ).Elif(can_push,
                emit.eq(1),
                emit_word.eq(Mux(fw < HEADER_WORDS + n_cnt, status_words[fw[:4]], 0)),
            )
        )

        if with_csr:
            add_counter_csrs(self, COUNTERS)

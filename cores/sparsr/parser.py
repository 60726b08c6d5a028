"""Sparsr frame parser: checks each frame word by word as it streams in and writes it into a frame bank.

`SparsrParser` tracks the frame's words and hands the frame to the executor or refuses it; its submodules
decode the header (`HeaderDecoder`), check the command parameters (`ParamCheck`), follow the slot list
(`SlotWalker`), check a slot's tag (`TagCheck`), LIL payload words (`LILCheck`) and raw-piece continuity
(`PieceTracker`), and give the verdict (`Verdict`).
"""
from migen import *
from migen.genlib.record import Record

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import index_bits
from cores.sparsr.common import (
    WORD_LAYOUT, FRAME_WORDS, HEADER_WORDS, PAYLOAD_WORDS, MAX_SLOTS, ROW_WORDS, LIL_ENTRY_BYTES, TAG, KIND_END,
    KIND_RAW, KIND_LIL, LANE_WIDTH_CODE, LIL_MAX_ENTRIES, CMD_WRITE_WMEM, CMD_WRITE_XMEM, CMD_READ_WMEM,
    CMD_DMA_XMEM_WMEM, CMD_STATUS, CMD_PARAMS, REASON_LENGTH, REASON_CMD, REASON_TAG, REASON_LIL, REASON_PIECE,
    REASON_HEADER, REASON_BITS,
)
from cores.sparsr.memories import JOB_WRITE_W, JOB_WRITE_X, JOB_READ, JOB_DMA, JOB_STATUS
from cores.sparsr.words import wide, lil_entry_bytes, lil_payload_words


class HeaderDecoder(LiteXModule):
    """The header words of a frame (CMD, LEN, ADDR), decoded into registers as they are taken.

    `word`, `take` (the word goes into the frame), `at` (one-hot: it is the CMD, LEN or ADDR word). From the
    cycle after its word: the command (`is_w`, `is_x`, `is_read`, `is_dma`, `is_status`; `is_write`: either
    write), LEN (`len_cmd`: the command's parameter count, `len_full`: PAYLOAD_WORDS, `len_fits`: less,
    `len_at`: HEADER_WORDS + LEN, the index of a kind-00 tag that agrees, when it fits) and ADDR (`addr_n`:
    its low 3 bits, `addr_big`: the others not all zero). `known_cmd` (combinational): `word` is a command.
    """
    def __init__(self):
        self.word = Signal(32)
        self.take = Signal()
        self.at = Signal(3)
        self.is_w = Signal()
        self.is_x = Signal()
        self.is_write = Signal()
        self.is_read = Signal()
        self.is_dma = Signal()
        self.is_status = Signal()
        self.len_cmd = Signal()
        self.len_full = Signal()
        self.len_fits = Signal()
        self.len_at = Signal(8)
        self.addr_n = Signal(3)
        self.addr_big = Signal()
        self.known_cmd = Signal()

        # # #

        word, at = self.word, self.at
        exp_len = Signal(2)
        self.comb += [
            self.is_write.eq(self.is_w | self.is_x),
            self.known_cmd.eq((word >= CMD_WRITE_WMEM) & (word <= CMD_STATUS)),
            exp_len.eq(Mux(self.is_read, CMD_PARAMS[CMD_READ_WMEM],
                           Mux(self.is_dma, CMD_PARAMS[CMD_DMA_XMEM_WMEM], CMD_PARAMS[CMD_STATUS]))),
        ]
        self.sync += If(self.take,
            If(at[0],
                self.is_w.eq(word == CMD_WRITE_WMEM), self.is_x.eq(word == CMD_WRITE_XMEM),
                self.is_read.eq(word == CMD_READ_WMEM), self.is_dma.eq(word == CMD_DMA_XMEM_WMEM),
                self.is_status.eq(word == CMD_STATUS),
            ),
            If(at[1],
                self.len_cmd.eq(word == exp_len), self.len_full.eq(word == PAYLOAD_WORDS),
                self.len_fits.eq(word < FRAME_WORDS - HEADER_WORDS), self.len_at.eq(word[:8] + HEADER_WORDS),
            ),
            If(at[2], self.addr_n.eq(word[:3]), self.addr_big.eq(word[3:] != 0)),
        )


class ParamCheck(LiteXModule):
    """The parameters of a command frame (row numbers and row counts), registered as their words are taken.

    `word`, `take`, `at` (one-hot: it is parameter 0, 1 or 2). `params`: the parameters, of `nb` bits (a row
    number or row count within memories of `wmem_rows` (R) and `xmem_rows` (X) rows). Each is range-checked as
    its word arrives, against constants and the parameters before it (which an accepted command keeps within
    nb bits): `read_ok` (READ_WMEM: p0 < R, p1 != 0, p0 + p1 <= R) and `dma_ok` (DMA_XMEM_WMEM: p0 < X,
    p1 < R, p2 != 0, p0 + p2 <= X, p1 + p2 <= R), from registers, the cycle after the parameters' words.
    """
    def __init__(self, wmem_rows, xmem_rows):
        R, X = wmem_rows, xmem_rows
        self.nb = nb = index_bits(max(R, X)) + 1
        self.word = Signal(32)
        self.take = Signal()
        self.at = Signal(3)
        self.params = [Signal(nb) for _ in range(3)]
        self.read_ok = Signal()
        self.dma_ok = Signal()

        # # #

        word, at = self.word, self.at
        # p0 < R, p0 < X, p1 != 0, p1 < R, p0 + p1 <= R, p2 != 0, p0 + p2 <= X, p1 + p2 <= R
        c_p0r, c_p0x, c_p1nz, c_p1r, c_s01r, c_p2nz, c_s02x, c_s12r = (Signal(name=n) for n in (
            "c_p0r", "c_p0x", "c_p1nz", "c_p1r", "c_s01r", "c_p2nz", "c_s02x", "c_s12r"))
        # (the sums as one compare of the word: R - p0, X - p0 and R - p1, registered with p0 and p1; each is
        # only used with its parameter's own range check, p0 < R, p0 < X or p1 < R, so it never wraps then)
        r0_left, x0_left, r1_left = (Signal(nb, name=n) for n in ("r0_left", "x0_left", "r1_left"))
        w_small, w_n = Signal(name="w_small"), Signal(nb, name="w_n")    # the word fits nb bits; its nb low bits
        self.comb += [
            w_small.eq(word[nb:] == 0), w_n.eq(word[:nb]),
            self.read_ok.eq(c_p0r & c_p1nz & c_s01r),
            self.dma_ok.eq(c_p0x & c_p1r & c_p2nz & c_s02x & c_s12r),
        ]
        self.sync += If(self.take,
            [If(at[i], self.params[i].eq(word)) for i in range(3)],
            If(at[0],
                c_p0r.eq(word < R), c_p0x.eq(word < X), r0_left.eq(R - w_n), x0_left.eq(X - w_n),
            ),
            If(at[1],
                c_p1nz.eq(word != 0), c_p1r.eq(word < R), c_s01r.eq(w_small & (w_n <= r0_left)),
                r1_left.eq(R - w_n),
            ),
            If(at[2],
                c_p2nz.eq(word != 0), c_s02x.eq(w_small & (w_n <= x0_left)),
                c_s12r.eq(w_small & (w_n <= r1_left)),
            ),
        )


class TagCheck(LiteXModule):
    """A word read as a slot tag (combinational): `bad` when it breaks a REASON_TAG rule (kind 11, lane width,
    reserved bits, raw count 0 or past the row's end, LIL count or offset, the slot runs past the frame),
    given `room`, the words after the slot's header up to the frame's end, and `lil_room`, the LIL entries that
    fit in them (ceil(5 n / 4) <= room exactly when n <= floor(4 room / 5)), so the overrun compares the count
    and waits for no adder, and `past_end`, the word's offset + count > ROW_WORDS (the parser registers it with
    the word: no adder here either). A tag on the frame's last word is refused by the parser."""
    def __init__(self):
        self.word, self.room, self.lil_room = Signal(32), Signal(8), Signal(8)
        self.past_end = Signal()
        self.bad = Signal()

        # # #

        word = self.word
        k_kind, k_width, k_cnt, k_off = (TAG.field(word, f) for f in ("kind", "width", "count", "offset"))
        self.comb += self.bad.eq(
            (k_kind == 0b11) | (k_width != LANE_WIDTH_CODE) | ((word & TAG.reserved_mask()) != 0) |
            ((k_kind == KIND_RAW) & ((k_cnt == 0) | self.past_end)) |
            ((k_kind == KIND_LIL) & ((k_cnt > LIL_MAX_ENTRIES) | (k_off != 0))) |
            Mux(k_kind == KIND_LIL, k_cnt > self.lil_room, k_cnt > self.room))



class LILCheck(LiteXModule):
    """Checks the payload words of a LIL slot as they come: lanes strictly increasing, padding zero.

    `start` (with `count`, the slot's entries) begins a slot; each `step` takes one of its payload words.
    `bad` (combinational): the current `word` breaks a REASON_LIL rule. One word per cycle.
    """
    def __init__(self):
        self.word = Signal(32)
        self.start = Signal()
        self.count = Signal(9)
        self.step = Signal()
        self.bad = Signal()

        # # #

        word, count = self.word, self.count
        # Byte phase of the word, entries left, previous lane, entry bytes left before this word (down to 0),
        # which of this word's bytes are padding
        phase = Signal(3)
        eleft = Signal(9)
        prev = Signal(8)
        has_prev = Signal()
        bleft = Signal(10)
        pad = Signal(4)
        lane_here = Signal()
        lane = Signal(8)
        wbytes = [word[8 * i:8 * i + 8] for i in range(4)]
        pad_bad = Signal()
        self.comb += [
            lane_here.eq(~phase[2] & (eleft != 0)),
            lane.eq(Array(wbytes)[phase[:2]]),
            pad_bad.eq(reduce(or_, [pad[i] & (wbytes[i] != 0) for i in range(4)])),
            self.bad.eq((lane_here & has_prev & (lane <= prev)) | pad_bad),
        ]
        self.sync += [
            If(self.start,
                phase.eq(0), eleft.eq(count), has_prev.eq(0),
                bleft.eq(lil_entry_bytes(count)), pad.eq(Mux(count == 0, 0b1111, 0)),
            ),
            If(self.step,
                phase.eq(Mux(phase == 4, 0, phase + 1)),
                bleft.eq(Mux(bleft > 4, bleft - 4, 0)), pad.eq(Cat(*[bleft <= 4 + i for i in range(4)])),
                If(lane_here, eleft.eq(eleft - 1), prev.eq(lane), has_prev.eq(1)),
            ),
        ]


# The raw row in progress: a row is in progress, its number, its next word, it goes into XMEM.
PIECE_LAYOUT = [("valid", 1), ("row", 32), ("off", 9), ("x", 1)]


class PieceTracker(LiteXModule):
    """The raw row in progress, as the accepted frames left it (`p`) and as the frame being parsed would
    leave it (`q`), both `PIECE_LAYOUT` registers.

    `store` (with `row`, `end`: the row's word after the piece, `to_x`): a raw piece's row word is taken;
    `accept` / `refuse`: the frame's verdict keeps / drops what it changed. Checks (combinational):
    `cmd_bad`: the command (`is_w`, `is_x`, `is_status`) may not follow the row in progress (a write into its
    memory or a status may); `tag_bad`: a tag (`kind`, `offset`) as slot `index` of the frame does not continue
    the row (the first slot must be a raw piece at the row's next word) or, with no row in progress, is a raw
    piece not at word 0; `row_bad`: `row` is not the row in progress.
    """
    def __init__(self):
        self.store = Signal()
        self.row = Signal(32)
        self.end = Signal(9)
        self.to_x = Signal()
        self.accept = Signal()
        self.refuse = Signal()
        self.is_w = Signal()
        self.is_x = Signal()
        self.is_status = Signal()
        self.kind = Signal(2)
        self.offset = Signal(8)
        self.index = Signal(3)
        self.cmd_bad = Signal()
        self.tag_bad = Signal()
        self.row_bad = Signal()
        self.p = p = Record(PIECE_LAYOUT, name="p")
        self.q = q = Record(PIECE_LAYOUT, name="q")

        # # #

        kind, offset = self.kind, self.offset
        cont_ok = Signal()
        self.comb += [
            cont_ok.eq(Mux(p.x, self.is_x, self.is_w) | self.is_status),
            self.cmd_bad.eq(p.valid & ~cont_ok),
            self.tag_bad.eq(Mux(q.valid, (self.index != 0) | (kind != KIND_RAW) | (offset != q.off),
                                (kind == KIND_RAW) & (offset != 0))),
            self.row_bad.eq(self.row != q.row),
        ]
        self.sync += [
            If(self.store,
                q.valid.eq(self.end != ROW_WORDS), q.row.eq(self.row), q.off.eq(self.end), q.x.eq(self.to_x),
            ),
            If(self.accept, p.eq(q)),
            If(self.refuse, q.eq(p)),
        ]


# Where a write frame's slot list is (SlotWalker.ps): at a slot's tag, its row word, its payload, past its end.
PS_TAG, PS_ROW, PS_PAY, PS_END = range(4)
# The slot being read: raw (else LIL), count (raw words / LIL entries), first row word, payload words, it
# continues the raw row in progress, payload words left, the next one is its last.
SLOT_STATE_LAYOUT = [("raw", 1), ("cnt", 9), ("off", 8), ("nw", 9), ("cont", 1), ("left", 9), ("last", 1)]


class SlotWalker(LiteXModule):
    """Follows the slot list of a write frame word by word: where it is (`ps`: a slot's tag, its row word, its
    payload, or past a kind-00 tag), the slot being read (`s`, `SLOT_STATE_LAYOUT`), the slots so far (`nslots`)
    and those whose row is past the end of the memory (`n_oor`).

    `body`: the current `word`, as if it were taken, is a payload word of a write frame (`at_last`: the
    frame's last); `fire`: it is taken (with `row_oor`: as a row word, its row is past the end; `cont`: a raw
    row is in progress); `done`: the frame ends. Combinational: the word's place as if it were taken
    (`tag_w`, `row_w`, `pay_w`), then taken (`at_tag`, `at_row`, `at_pay`); the end of the slot list in it
    (`list_end_w`: a kind-00 tag, `end_tag_w`, or a slot ending on the frame's last word), with `end_nslots`
    slots; `new_off`: the row word after the slot's piece.
    """
    def __init__(self):
        self.word = Signal(32)
        self.body = Signal()
        self.at_last = Signal()
        self.fire = Signal()
        self.row_oor = Signal()
        self.cont = Signal()
        self.done = Signal()
        self.ps = Signal(2)
        self.s = s = Record(SLOT_STATE_LAYOUT, name="s")
        self.nslots = Signal(3)
        self.n_oor = Signal(3)
        self.tag_w, self.row_w, self.pay_w = Signal(name="tag_w"), Signal(name="row_w"), Signal(name="pay_w")
        self.at_tag, self.at_row, self.at_pay = Signal(name="at_tag"), Signal(name="at_row"), Signal(name="at_pay")
        self.end_tag_w, self.list_end_w = Signal(name="end_tag_w"), Signal(name="list_end_w")
        self.end_nslots = Signal(3)
        self.new_off = Signal(9)

        # # #

        ps, nslots, n_oor = self.ps, self.nslots, self.n_oor
        k_kind, k_cnt, k_off = (TAG.field(self.word, f) for f in ("kind", "count", "offset"))
        self.comb += [
            self.tag_w.eq(self.body & (ps == PS_TAG)),
            self.row_w.eq(self.body & (ps == PS_ROW)),
            self.pay_w.eq(self.body & (ps == PS_PAY)),
            self.at_tag.eq(self.fire & self.tag_w),
            self.at_row.eq(self.fire & self.row_w),
            self.at_pay.eq(self.fire & self.pay_w),
            self.end_tag_w.eq(self.tag_w & (k_kind == KIND_END)),
            self.list_end_w.eq(self.end_tag_w |
                               (((self.row_w & (s.nw == 0)) | (self.pay_w & s.last)) & self.at_last)),
            self.end_nslots.eq(nslots + self.row_w),
            self.new_off.eq(s.off + s.cnt),
        ]
        self.sync += [
            If(self.at_tag,
                If(k_kind == KIND_END,
                    ps.eq(PS_END),
                ).Else(
                    ps.eq(PS_ROW),
                    s.raw.eq(k_kind == KIND_RAW), s.cnt.eq(k_cnt), s.off.eq(k_off),
                    s.nw.eq(Mux(k_kind == KIND_LIL, lil_payload_words(k_cnt), k_cnt)),
                    s.cont.eq(self.cont),
                )
            ),
            If(self.at_row,
                ps.eq(Mux(s.nw == 0, PS_TAG, PS_PAY)), s.left.eq(s.nw), s.last.eq(s.nw == 1),
                nslots.eq(nslots + 1),
                n_oor.eq(n_oor + self.row_oor),
            ),
            If(self.at_pay,
                If(s.last, ps.eq(PS_TAG)),
                s.left.eq(s.left - 1), s.last.eq(s.left == 2),
            ),
            If(self.done, ps.eq(PS_TAG), nslots.eq(0), n_oor.eq(0)),
        ]


class Verdict(LiteXModule):
    """The rules a frame's words break, and the verdict on the frame one cycle after its last word.

    `rules`: (condition, reason, on_word) for the current word, in priority order (the first one broken names
    the refusal). Each is registered in its cycle, a condition `on_word` as if the word were taken and masked
    the cycle after by whether it was (`fire` of its cycle: no `fire` or `ready` on its path); the first one
    broken goes into a register the cycle after. `done`: the frame's last word (or the one that ends it too
    soon: `len_bad`) is taken; `cmd_ok`: its command's parameters are in range (registered here). In the
    verdict cycle, the one after `done` (`valid`), from registers: `accept`, or `refuse` with `reason`.
    """
    def __init__(self, rules, fire):
        self.done = Signal()
        self.len_bad = Signal()
        self.cmd_ok = Signal()
        self.valid = Signal(name="v_done")
        self.accept = Signal()
        self.refuse = Signal()
        self.reason = Signal(REASON_BITS)

        # # #

        errs_w = Signal(len(rules))     # the rules the previous word broke, if it was taken
        fired = Signal(name="fired")    # it was
        errs = Signal(len(rules))       # the rules the previous word broke
        err_prev = Signal(name="err_prev")
        err_code = Signal(REASON_BITS)
        self.sync += errs_w.eq(Cat(*[cond for cond, _, _ in rules])), fired.eq(fire)
        self.comb += [
            errs.eq(Cat(*[errs_w[i] & fired if on_word else errs_w[i] for i, (_, _, on_word) in enumerate(rules)])),
            err_prev.eq(errs != 0),
        ]
        sel = err_code.eq(0)
        for i, (_, r, _) in reversed(list(enumerate(rules))):
            sel = If(errs[i], err_code.eq(r)).Else(sel)
        self.comb += sel
        # `reason` holds the first rule broken up to the word before the last, `errs` the last word's
        reason = Signal(REASON_BITS)
        cmd_ok_r = Signal(name="cmd_ok_r")
        v_len = Signal(name="v_len")
        final_reason = Signal(REASON_BITS)
        self.comb += [
            final_reason.eq(Mux(reason != 0, reason, Mux(err_prev, err_code, Mux(cmd_ok_r, 0, REASON_CMD)))),
            # final_reason == 0, from the registers without the rule priority (every reason code is non-zero)
            self.accept.eq(self.valid & ~v_len & (reason == 0) & ~err_prev & cmd_ok_r),
            self.refuse.eq(self.valid & ~self.accept),
            self.reason.eq(Mux(v_len, REASON_LENGTH, final_reason)),
        ]
        self.sync += [
            cmd_ok_r.eq(self.cmd_ok),
            self.valid.eq(self.done), v_len.eq(self.len_bad),
            If(err_prev & (reason == 0), reason.eq(err_code)),
            If(self.valid, reason.eq(0)),
        ]


class SparsrParser(LiteXModule):
    """Checks each frame word by word as it streams in and writes it into the free bank of `banks`.

    Parameters: `banks` (FrameBanks), `wmem_rows`, `xmem_rows` (for the row and range checks).
    `sink`: words, `last` on each frame's last word; ready while the bank being filled is free (the rest
    of a frame found too long is taken and dropped at any time) and no status answer is pending (from the
    accepted status frame's verdict until `status_sent`, input). `ready` is a one-LUT function of registers
    that hold its terms for the next cycle (`hold`, the bank's freedom, `discard`). One cycle after the
    frame's last word (the verdict; the next frame's first word may be taken in that cycle, into the bank
    the verdict leaves free):
    `accept` (the bank goes to the executor with its job and slot table; `rows_refused` counts its slots
    whose row is past the end of the memory) or `refuse` with `reason` (the first rule the frame broke).
    `idle`: no frame partly received, being dropped or waiting for its verdict. One word per cycle.

    Pipeline: the rules each word breaks are registered in its cycle (as if it were taken, masked the cycle
    after by whether it was: no `ready` on their paths; `errs`) and the first of them goes into `reason` the
    cycle after, so the verdict reads registers only. The command word's raw-piece
    continuity is checked with the LEN word (the registered command against the row in progress the
    previous verdict left; the LEN word breaks no rule of its own, so the first rule broken is the same).
    """
    def __init__(self, banks, wmem_rows, xmem_rows):
        self.sink = stream.Endpoint(WORD_LAYOUT)
        self.accept = Signal()
        self.refuse = Signal()
        self.reason = Signal(REASON_BITS)
        self.rows_refused = Signal(4)
        self.idle = Signal()
        self.hold = Signal()            # a status answer is pending (from the verdict to `status_sent`)
        self.status_sent = Signal()     # in: the status answer is out
        self.accept_status = Signal()   # out: the frame accepted now is a status command

        # # #

        sink = self.sink
        word = sink.data
        idx = Signal(8)
        # Where idx is, as registers that move with it (no compare of idx on the word's paths): one-hot
        # idx = 0..5 (the header and the command parameters), idx >= HEADER_WORDS, idx = FRAME_WORDS - 1.
        at_i = Signal(HEADER_WORDS + 3, reset=1)
        in_body, at_last = Signal(name="in_body"), Signal(name="at_last")
        at_len = Signal()        # idx = len_at (from idx = HEADER_WORDS on)
        discard = Signal()       # the rest of a frame found too long is dropped
        fire = Signal()
        take = Signal()          # fire, into the frame (the word is not dropped)
        frame_done = Signal()    # take on the frame's last word, or on a word that ends it too soon
        len_bad = Signal()
        self.comb += [
            fire.eq(sink.valid & sink.ready),
            take.eq(fire & ~discard),
            banks.wr.adr.eq(Cat(idx, banks.fill_bank)),
            banks.wr.dat_w.eq(word),
            banks.wr.we.eq(take),
            len_bad.eq(take & (sink.last != at_last)),
            frame_done.eq((take & at_last & sink.last) | len_bad),
        ]
        self.header = hdr = HeaderDecoder()
        self.param_check = prm = ParamCheck(wmem_rows, xmem_rows)
        self.comb += [
            hdr.word.eq(word), hdr.take.eq(take), hdr.at.eq(at_i[:3]),
            prm.word.eq(word), prm.take.eq(take), prm.at.eq(at_i[HEADER_WORDS:]),
        ]
        self.sync += [
            If(fire & discard & sink.last, discard.eq(0)),
            If(take,
                idx.eq(idx + 1),
                at_i.eq(at_i << 1), If(at_i[HEADER_WORDS - 1], in_body.eq(1)), at_last.eq(idx == FRAME_WORDS - 2),
                at_len.eq(idx + 1 == hdr.len_at),
            ),
            If(frame_done, idx.eq(0), at_i.eq(1), in_body.eq(0), at_last.eq(0), If(~sink.last, discard.eq(1))),
        ]

        # The word as if it were a tag; its place as if it were taken (the rules are registered without `fire`:
        # a word not taken is masked out the cycle after, by `Verdict`).
        k_kind, k_cnt, k_off = (TAG.field(word, f) for f in ("kind", "count", "offset"))
        hdr_w = Signal(name="hdr_w")
        row_inr, row_oor = Signal(name="row_inr"), Signal(name="row_oor")
        slot_tag = Signal(name="slot_tag")     # a slot's tag (not a kind-00 one) is taken
        self.walker = walker = SlotWalker()
        self.lil = lil = LILCheck()
        self.piece = piece = PieceTracker()
        s, nslots, at_row = walker.s, walker.nslots, walker.at_row
        self.comb += [
            hdr_w.eq(~discard & ~in_body),
            row_inr.eq(Mux(hdr.is_x, word < xmem_rows, word < wmem_rows)),      # (two compares with constants)
            row_oor.eq(~row_inr),
            slot_tag.eq(walker.at_tag & (k_kind != KIND_END)),
            walker.word.eq(word), walker.body.eq(~discard & in_body & hdr.is_write), walker.at_last.eq(at_last),
            walker.fire.eq(fire), walker.row_oor.eq(row_oor), walker.cont.eq(piece.q.valid),
            walker.done.eq(frame_done),
            lil.word.eq(word), lil.start.eq(slot_tag), lil.count.eq(k_cnt), lil.step.eq(walker.at_pay),
            piece.store.eq(at_row & s.raw), piece.row.eq(word), piece.end.eq(walker.new_off),
            piece.to_x.eq(hdr.is_x), piece.is_w.eq(hdr.is_w), piece.is_x.eq(hdr.is_x),
            piece.is_status.eq(hdr.is_status), piece.kind.eq(k_kind), piece.offset.eq(k_off), piece.index.eq(nslots),
        ]
        t_chk, t_full, t_piece, tag = self._tag_stage(word, idx, slot_tag & ~frame_done, nslots, piece.tag_bad)
        end_nslots = walker.end_nslots
        self.verdict = verdict = Verdict([        # (rule, reason, on the word)
            (hdr_w & at_i[0] & ~hdr.known_cmd, REASON_CMD, True),
            (hdr_w & at_i[1] & piece.cmd_bad, REASON_PIECE, True),
            (hdr_w & at_i[2] & ~hdr.is_write & (~hdr.len_cmd | (word != 0)), REASON_CMD, True),
            (t_chk & tag.bad, REASON_TAG, False),
            (t_chk & t_full, REASON_HEADER, False),
            (t_chk & t_piece, REASON_PIECE, False),
            (walker.tag_w & (k_kind != KIND_END) & at_last, REASON_TAG, True),
            (walker.row_w & s.cont & piece.row_bad, REASON_PIECE, True),
            (walker.pay_w & ~s.raw & lil.bad, REASON_LIL, True),
            (walker.list_end_w & ((end_nslots != hdr.addr_n) | hdr.addr_big | (end_nslots == 0) |
                                  Mux(walker.end_tag_w, ~hdr.len_fits | ~at_len, ~hdr.len_full)), REASON_HEADER, True),
        ], fire)
        accept, v_done = verdict.accept, verdict.valid
        v_ns, v_oor = Signal(3, name="v_ns"), Signal(3, name="v_oor")
        self.comb += [
            verdict.done.eq(frame_done), verdict.len_bad.eq(len_bad),
            verdict.cmd_ok.eq(hdr.is_write | (hdr.is_read & prm.read_ok) | (hdr.is_dma & prm.dma_ok) | hdr.is_status),
            piece.accept.eq(accept), piece.refuse.eq(verdict.refuse),
        ]
        self.sync += If(frame_done, v_ns.eq(end_nslots), v_oor.eq(walker.n_oor + (at_row & row_oor)))
        # Into the bank: each slot's table entry (at its row word), the job of an accepted frame.
        slot, job = banks.slot_w, banks.job_w
        p0, p1, p2 = prm.params
        self.comb += [
            banks.slot_we.eq(at_row), banks.slot_index.eq(nslots[:2]),
            slot.raw.eq(s.raw), slot.row.eq(word), slot.off.eq(s.off), slot.cnt.eq(s.cnt),
            slot.nw.eq(s.nw), slot.pay.eq(idx + 1), slot.fin.eq(walker.new_off == ROW_WORDS), slot.inr.eq(row_inr),
            banks.accept.eq(accept),
            job.kind.eq(Mux(hdr.is_w, JOB_WRITE_W, Mux(hdr.is_x, JOB_WRITE_X, Mux(hdr.is_read, JOB_READ,
                            Mux(hdr.is_dma, JOB_DMA, JOB_STATUS))))),
            job.ns.eq(v_ns), job.p0.eq(p0), job.p1.eq(p1), job.p2.eq(p2),
            self.accept.eq(accept), self.refuse.eq(verdict.refuse), self.reason.eq(verdict.reason),
            self.accept_status.eq(accept & hdr.is_status),
            self.rows_refused.eq(v_oor),
            self.idle.eq(at_i[0] & ~discard & ~v_done),
        ]
        self._handshake(banks, word, at_i, fire, discard, frame_done, v_done, hdr.is_status)

    def _tag_stage(self, word, idx, chk, nslots, piece_bad):
        """A slot's tag is checked in a second stage, the cycle after it (before its row word's own rules, if
        that word comes in the same cycle), on registers: the tag word, the room after it (tables of its
        index), a fifth slot, the raw-piece continuity (`piece_bad`). Not on the frame's last word (that tag is
        refused at once) or on a word that ends a frame too short (refused for its length): `chk`, a slot's
        tag (`word` at `idx`, slot `nslots`) is taken otherwise. Returns the registers t_chk (a tag is checked
        now), t_full, t_piece and the TagCheck."""
        k_cnt, k_off = (TAG.field(word, f) for f in ("count", "offset"))
        t_word, t_room, t_lil_room = Signal(32, name="t_word"), Signal(8, name="t_room"), Signal(8, name="t_lil_room")
        t_past = Signal(name="t_past")
        t_chk, t_full, t_piece = Signal(name="t_chk"), Signal(name="t_full"), Signal(name="t_piece")
        self.tag = tag = TagCheck()
        self.comb += [
            tag.word.eq(t_word), tag.room.eq(t_room), tag.lil_room.eq(t_lil_room), tag.past_end.eq(t_past),
        ]
        self.sync += [
            t_word.eq(word), t_past.eq(wide(k_off, 2) + k_cnt > ROW_WORDS),
            t_room.eq(FRAME_WORDS - 2 - idx),
            t_lil_room.eq(Array(C(4 * max(FRAME_WORDS - 2 - i, 0) // LIL_ENTRY_BYTES, 8)
                                for i in range(FRAME_WORDS))[idx]),
            t_chk.eq(chk), t_full.eq(nslots == MAX_SLOTS), t_piece.eq(piece_bad),
        ]
        return t_chk, t_full, t_piece, tag

    def _handshake(self, banks, word, at_i, fire, discard, frame_done, v_done, is_status):
        """`sink.ready` = ~hold & ~(v_done & is_status) & (discard | the bank free: wbank, or in the verdict
        cycle the other one), from registers of its terms' next values: blk = hold | (v_done & is_status) (no
        word in the verdict cycle of a status frame: an accepted one sets `hold`), ok_w / ok_o = discard |
        wbank / the other bank free."""
        sink = self.sink
        blk = Signal(name="blk")
        ok_w, ok_o = Signal(name="ok_w", reset=1), Signal(name="ok_o", reset=1)
        discard_n, hold_n = Signal(name="discard_n"), Signal(name="hold_n")     # next values of discard, hold
        self.comb += [
            sink.ready.eq(~blk & Mux(v_done, ok_o, ok_w)),
            discard_n.eq(Mux(frame_done & ~sink.last, 1, Mux(fire & discard & sink.last, 0, discard))),
            hold_n.eq(self.accept_status | (self.hold & ~self.status_sent)),
        ]
        self.sync += [
            self.hold.eq(hold_n),
            blk.eq(hold_n | (frame_done & Mux(at_i[0], word == CMD_STATUS, is_status))),
            ok_w.eq(discard_n | banks.free_same), ok_o.eq(discard_n | banks.free_other),
        ]

"""Sparsr executor: commits the frames the parser accepted into WMEM / XMEM, runs the XMEM->WMEM DMA and
answers reads and status.

A committed slot costs at most its own length in cycles (slot header words pay for the set-up), so a full frame
commits in at most 255 cycles and input never stalls on writes. The only `LILDecoder` sits on the path into WMEM
(in the `LILWriter`); the XMEM->WMEM DMA feeds LIL rows through it too. Answers leave through `AnswerPath`.
"""
from migen import *
from migen.genlib.record import Record

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import OneHotFSM
from cores.sparsr.common import (
    WORD_LAYOUT, FRAME_WORDS, HEADER_WORDS, PAYLOAD_WORDS, ROW_WORDS, ROW_LANES, TAG, KIND_RAW, LANE_WIDTH_CODE,
    CMD_ANSWER_ROWS, CMD_ANSWER_STATUS, WIRE_VERSION, MAX_PIECE_WORDS, SLOT_HEADER_WORDS, STATUS_COUNTERS,
)
from cores.sparsr.memories import JOB_WRITE_W, JOB_WRITE_X, JOB_READ, JOB_DMA, JOB_STATUS, FORM_BITS
from cores.sparsr.words import lil_payload_words


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
        # nacc != 0 and left != 0 as registers moving with them (timing: entry_valid is one LUT of registers)
        has_acc, has_left = Signal(name="has_acc"), Signal(name="has_left")
        combined = Signal(64)     # held-back bytes followed by the new word
        self.comb += [
            Case(nacc, {i: combined.eq(Cat(acc[:8 * i], self.word) if i else self.word) for i in range(5)}),
            self.entry_valid.eq(self.word_valid & has_acc & has_left),
            self.lane.eq(combined[0:8]),
            self.value.eq(combined[8:40]),
        ]
        self.sync += [
            If(self.start,
                acc.eq(0), nacc.eq(0), left.eq(self.count),
                has_acc.eq(0), has_left.eq(self.count != 0),
            ).Elif(self.word_valid,
                If(self.entry_valid,
                    acc.eq(combined[40:64]), nacc.eq(nacc - 1), left.eq(left - 1),
                    has_acc.eq(nacc != 1), has_left.eq(left != 1),
                ).Else(
                    acc.eq(combined[0:32]), nacc.eq(nacc + 4), has_acc.eq(1),
                )
            )
        ]


class AnswerPath(LiteXModule):
    """Answer words into a FIFO of `fifo_depth` words, out on `source`.

    `push` (one word a cycle, only while `can_push`) with `last`, and `word`, or with `from_wmem` the word
    the WMEM read port delivers two cycles later (`wmem_data`), 0 unless its lane is set: bit `lane` of
    `lanes` (the row's lane mask, sampled with `push`; selected in two registered steps, 16 of 256 with the
    push, then one of 16, so the mask needs no shift or enable). Latency: a word enters the FIFO three cycles
    after `push` (the word into the FIFO is registered). `can_push` is a register that leaves out the word
    the FIFO gives away in its cycle: with `fifo_depth` >= 6 a source that takes a word every cycle still
    gets one every cycle.
    """
    def __init__(self, fifo_depth):
        self.push, self.from_wmem, self.last = Signal(), Signal(), Signal()
        self.word = Signal(32)
        self.can_push = Signal()
        self.wmem_data = Signal(32)
        self.lanes, self.lane = Signal(ROW_LANES), Signal(8)
        self.source = stream.Endpoint(WORD_LAYOUT)

        # # #

        self.fifo = fifo = stream.SyncFIFO(WORD_LAYOUT, fifo_depth, buffered=False)
        # three stages of words on their way: the read of a WMEM word (two), the word into the FIFO
        nib = ROW_LANES // 16
        first = Record([("valid", 1), ("mem", 1), ("last", 1), ("part", nib), ("hi", 4), ("word", 32)])
        second = Record([("valid", 1), ("mem", 1), ("last", 1), ("bit", 1), ("word", 32)])
        third = Record([("valid", 1), ("last", 1), ("word", 32)])
        held = Signal(bits_for(fifo_depth + 3))     # words in the FIFO and on their way
        self.comb += [
            fifo.source.connect(self.source),
            fifo.sink.valid.eq(third.valid),
            fifo.sink.data.eq(third.word),
            fifo.sink.last.eq(third.last),
            held.eq(fifo.level + first.valid + second.valid + third.valid),
        ]
        self.sync += [
            first.valid.eq(self.push), first.mem.eq(self.from_wmem), first.word.eq(self.word),
            first.last.eq(self.last),
            # lane = 16 hi + lo: the lo-th bit of each group of 16, then the hi-th of those
            first.part.eq(Cat(*[Array(self.lanes[16 * h + i] for i in range(16))[self.lane[:4]] for h in range(nib)])),
            first.hi.eq(self.lane[4:]),
            second.valid.eq(first.valid), second.mem.eq(first.mem), second.last.eq(first.last),
            second.word.eq(first.word), second.bit.eq(Array(first.part[h] for h in range(nib))[first.hi]),
            third.valid.eq(second.valid), third.last.eq(second.last),
            third.word.eq(Mux(second.mem, Mux(second.bit, self.wmem_data, 0), second.word)),
            # registered: room for one more word with the words in flight and the one pushed now (not
            # counting a word leaving now), so the executor's decisions start from a register; `push` only
            # picks one of two compares
            self.can_push.eq(Mux(self.push, held < fifo_depth - 1, held < fifo_depth)),
        ]


class LILWriter(LiteXModule):
    """Writes the entries of a LIL slot (or of a LIL row from XMEM) into WMEM physical row `phys`, then the
    row's lane mask (the lanes written, so every other lane reads as 0).

    `start` (with `count`, the entries) begins a slot; each `word_valid` cycle takes one payload `word`
    (through the `LILDecoder`); `last` goes with the slot's last word (or alone: an empty row). The inputs,
    with `phys` (the physical row of each word), are registered first (timing: the words come from block
    RAM output registers). The decoded entries are registered and written one cycle later, their lanes
    registered as two one-hot nibbles and gathered into the slot's lane mask in the same cycle (one LUT a
    lane); the mask is written (and cleared) the cycle after the last entry, three cycles after `last`. The
    executor never writes a lane mask then: empty LIL rows (write slots and DMA rows) go through this writer,
    and the only mask it writes itself, a raw row's at the end of the piece that finishes the row, comes at
    least four cycles after the previous slot's `last` (that piece is the first slot of its frame, a DMA
    row starts after D_NEXT, D_ROW, D_FORM, D_PREP). The executor's own writes to `wmem` in the same cycle
    take precedence.
    """
    def __init__(self, wmem):
        self.start, self.count = Signal(), Signal(9)
        self.word_valid, self.word = Signal(), Signal(32)
        self.last = Signal()
        self.phys = Signal(wmem.phys_bits)

        # # #

        self.decoder = dec = LILDecoder()
        mask_acc = Signal(ROW_LANES)
        # inputs registered (timing: the words come from block RAM output registers across the chip), with
        # the physical row they go to
        i_start, i_valid, i_last = Signal(name="i_start"), Signal(name="i_valid"), Signal(name="i_last")
        i_count, i_word, i_phys = Signal(9, name="i_count"), Signal(32, name="i_word"), Signal(wmem.phys_bits)
        e_valid, e_fin = Signal(name="e_valid"), Signal(name="e_fin")
        e_phys, f_phys = Signal(wmem.phys_bits), Signal(wmem.phys_bits)
        f_fin = Signal(name="f_fin")
        e_lane, e_value = Signal(8, name="e_lane"), Signal(32, name="e_value")
        e_hi, e_lo = Signal(16), Signal(16)      # the entry's lane as one-hot nibbles (e_hi: 0 without entry)
        self.sync += [
            i_start.eq(self.start), i_count.eq(self.count), i_valid.eq(self.word_valid), i_word.eq(self.word),
            i_last.eq(self.last), i_phys.eq(self.phys),
        ]
        self.comb += [
            dec.start.eq(i_start), dec.count.eq(i_count),
            dec.word_valid.eq(i_valid), dec.word.eq(i_word),
        ]
        self.sync += [
            e_valid.eq(dec.entry_valid), e_lane.eq(dec.lane), e_value.eq(dec.value), e_fin.eq(i_last),
            e_phys.eq(i_phys),
            e_hi.eq(Mux(dec.entry_valid, C(1, 16) << dec.lane[4:], 0)), e_lo.eq(C(1, 16) << dec.lane[:4]),
            f_fin.eq(e_fin), f_phys.eq(e_phys),
            [mask_acc[i].eq(~f_fin & (mask_acc[i] | (e_hi[i >> 4] & e_lo[i & 15]))) for i in range(ROW_LANES)],
        ]
        self.comb += [
            If(e_valid, wmem.wr.adr.eq(Cat(e_lane, e_phys)), wmem.wr.dat_w.eq(e_value), wmem.wr.we.eq(1)),
            If(f_fin, wmem.mask_wr.adr.eq(f_phys), wmem.mask_wr.dat_w.eq(mask_acc), wmem.mask_wr.we.eq(1)),
        ]


class SparsrExecutor(LiteXModule):
    """Works through the banks the parser accepted, one after the other: stores the slots of write frames
    in WMEM (LIL slots through the LIL decoder) or XMEM, copies XMEM rows into WMEM (DMA), answers reads
    with raw-slot frames and status with `status`.

    Parameters: `banks` (FrameBanks), `wmem` (WMEM), `xmem` (XMEM, or DRAMXMEM: XMEM in DRAM),
    `fifo_depth` (answer FIFO). `source`: answer frames. `status`: the counters, in STATUS_COUNTERS order
    (inputs). `slot_stored`: a slot was stored (or dropped for its row, not counted) this cycle.
    Cost: a write slot at most its payload words + 2 cycles (a frame at most 255 cycles); a DMA row its
    words + 3 cycles; answers one word a cycle while the source takes them. With XMEM in DRAM a slot into
    XMEM first waits until the DRAM write FIFO has room for it, and a DMA row until it is staged.

    Structure: one FSM, IDLE then the states of each job kind (`add_write_states`, `add_dma_states`,
    `add_read_states`, `add_status_state`), over the registers they share: the slot walk (`walk`), the slot
    or XMEM row being moved (`x`), the job's rows (`rows`), the word mover (`mv`, and `m`: what its data stage
    does with each word, `add_data_stage`), XMEM's side (`xl`, `connect_xmem`) and the answer frame
    (`add_answer`).
    """
    def __init__(self, banks, wmem, xmem, fifo_depth):
        self.source = stream.Endpoint(WORD_LAYOUT)
        self.status = [Signal(32, name=f"status_{n}") for n in STATUS_COUNTERS]
        self.slot_stored = Signal()
        self.status_sent = Signal()     # the last word of a status answer was pushed

        # # #

        pwb, pxb = wmem.phys_bits, xmem.phys_bits
        rb = len(wmem.row)
        # The slot walk: `si`, the slot at hand; `end`: si = banks.job.ns (no slot left), a register moving with
        # si; `next`: the entry the next W_SLOT reads, a register: si + 1 from W_SLOT to the next W_SLOT, else 0
        # (banks.slot is registered: the states before W_SLOT name its entry, IDLE slot 0).
        self.walk = walk = Record([("si", 3), ("end", 1), ("next", 2)])
        self.comb += banks.slot_rindex.eq(walk.next)
        # The slot (or XMEM row) being moved: raw (else LIL), into XMEM, finishes its row, count (raw words / LIL
        # entries), first row word, row in range, payload words, no payload words (a register set with nw).
        self.x = x = Record([("raw", 1), ("tox", 1), ("fin", 1), ("cnt", 9), ("off", 8), ("inr", 1), ("nw", 9),
                             ("z", 1)])
        # The job's rows: the WMEM and XMEM row at hand, rows left to read or copy.
        self.rows = rows = Record([("w", rb), ("x", rb), ("left", rb + 1)])
        self.comb += wmem.row.eq(rows.w)
        # The word mover: the physical row written (`phys`) and the XMEM one read (`physx`), the read pointer,
        # words left to issue and to process (`p_last`: proc_left = 1, a register moving with it), the word
        # index `o`, the source (XMEM, else the frame buffer), a DMA row (else a write slot).
        self.mv = Record([("phys", max(pwb, pxb)), ("physx", pxb), ("rd_ptr", 9), ("issue_left", 9),
                          ("proc_left", 9), ("o", 9), ("p_last", 1), ("src_x", 1), ("in_dma", 1)])
        # XMEM's side (block RAM or DRAM, `connect_xmem`): a slot waits for `room`, a DMA row until it is there
        # (`ready`; its physical row `phys` and its `form`), `start` starts a DMA job, `done` ends a DMA row; `lx`:
        # a LIL slot into XMEM in DRAM writes the physical row that the row entries give from the first MOVE cycle
        # on (read two cycles after W_SLOT; `phys` is not loaded from them in W_PREP).
        self.xl = xl = Record([("room", 1), ("ready", 1), ("start", 1), ("done", 1), ("phys", pxb),
                               ("form", FORM_BITS), ("lx", 1)])
        self.add_answer(wmem, fifo_depth)
        self.add_data_stage(banks, wmem, xmem)
        answer, lil = self.answer, self.lil

        self.fsm = fsm = OneHotFSM(reset_state="IDLE")
        # IDLE loads the read and DMA jobs' registers whether a job is pending or not (timing: their enables
        # are the state's; nothing uses them between jobs)
        is_dma = Signal()
        self.comb += is_dma.eq(banks.job.kind == JOB_DMA)
        fsm.act("IDLE",
            NextValue(rows.w, Mux(is_dma, banks.job.p1, banks.job.p0)), NextValue(rows.x, banks.job.p0),
            NextValue(rows.left, Mux(is_dma, banks.job.p2, banks.job.p1)), NextValue(self.ro, 0),
            NextValue(self.r_end, 0), NextValue(self.fw, 0),
            If(banks.pending,
                NextValue(walk.si, 0), NextValue(walk.end, banks.job.ns == 0),
                Case(banks.job.kind, {
                    JOB_WRITE_W: NextState("W_SLOT"),
                    JOB_WRITE_X: NextState("W_SLOT"),
                    JOB_READ: NextState("R_PLAN"),
                    JOB_DMA: [xl.start.eq(1), NextState("D_ROW")],
                    JOB_STATUS: NextState("S_EMIT"),
                })
            )
        )
        self.add_write_states(fsm, banks, wmem, xmem, lil)
        self.add_dma_states(fsm, banks, wmem, xmem, lil)
        self.add_read_states(fsm, banks, wmem, answer)
        self.add_status_state(fsm, banks, answer)
        # (after the states: fsm.ongoing() would give W_SLOT the first state code)
        self.connect_xmem(fsm, banks, xmem)

    def add_answer(self, wmem, fifo_depth):
        """The answer path and the frame being answered: `fw`, the words of the answer frame pushed so far
        (`fw_full`: all of them), `ro`, the row word read next (`r_end`: ro = ROW_WORDS - 1, a register moving
        with it).

        One word a cycle; words from WMEM are read one cycle before they enter the FIFO. `lanes`: the lane mask
        of the row being read, WMEM's free-running registered mask read (the mask of the row two cycles back:
        R_DATA follows R_TAG and R_ROW, so it is the mask of the row it reads); the answer path picks lane `ro`
        from it."""
        lanes = wmem.lanes
        self.answer = answer = AnswerPath(fifo_depth)
        self.fw = fw = Signal(9)            # words of the answer frame pushed so far
        self.fw_full = fw_full = Signal()   # fw = FRAME_WORDS: its top bit (fw never passes FRAME_WORDS)
        assert FRAME_WORDS == 1 << (len(fw) - 1)
        self.comb += fw_full.eq(fw[-1])
        self.ro = ro = Signal(8)
        self.r_end = Signal(name="r_end")
        self.comb += [
            answer.source.connect(self.source),
            answer.last.eq(fw == FRAME_WORDS - 1),
            answer.wmem_data.eq(wmem.rd.dat_r),
            answer.lanes.eq(lanes), answer.lane.eq(ro),
        ]
        self.sync += If(answer.push, fw.eq(fw + 1))

    def add_data_stage(self, banks, wmem, xmem):
        """The word mover's data stage and the LIL writer (`lil`).

        The frame buffer and XMEM deliver a word two cycles after its address (the block RAM's output
        register), one cycle after the MOVE cycle that accounts for it; MOVE registers what to do with the word
        (`m`: write it into WMEM or XMEM at `adr`, or feed it to the LIL decoder, `last`: the slot's last one),
        which is written (or fed to the LIL decoder) in that next cycle (`d`). The slot's control (row map,
        spare row, form, counters) stays in MOVE; the last word's write follows in the next slot's W_SLOT (or
        D_NEXT), a cycle without writes of its own."""
        pwb, pxb = wmem.phys_bits, xmem.phys_bits
        mv = self.mv
        move_word = Signal(32)
        self.raw_lane = raw_lane = Signal(8)
        self.comb += [
            move_word.eq(Mux(mv.src_x, xmem.rd.dat_r, banks.rd.dat_r)),
            raw_lane.eq(self.x.off + mv.o[:8]),
        ]
        stage = [("we_w", 1), ("we_x", 1), ("lil", 1), ("last", 1), ("adr", 8 + max(pwb, pxb))]
        self.m = m = Record(stage, name="m")
        d = Record(stage, name="d")
        self.sync += [getattr(d, n).eq(getattr(m, n)) for n, _ in stage]
        # LIL slots and LIL rows from XMEM into WMEM physical row `phys`.
        self.lil = lil = LILWriter(wmem)
        self.comb += [
            lil.phys.eq(mv.phys),
            lil.word_valid.eq(d.lil), lil.word.eq(move_word), lil.last.eq(d.last),
            If(d.we_w, wmem.wr.adr.eq(d.adr[:8 + pwb]), wmem.wr.dat_w.eq(move_word), wmem.wr.we.eq(1)),
            If(d.we_x, xmem.wr.adr.eq(d.adr[:8 + pxb]), xmem.wr.dat_w.eq(move_word), xmem.wr.we.eq(1)),
        ]

    def next_slot(self, banks):
        """The statements that go on to the next slot."""
        walk = self.walk
        return [NextValue(walk.si, walk.si + 1), NextValue(walk.end, walk.si + 1 == banks.job.ns), NextState("W_SLOT")]

    def start_move(self, lil):
        """The statements that start to move the words of the slot (or XMEM row) `x`."""
        x, mv = self.x, self.mv
        return [
            NextValue(mv.rd_ptr, mv.rd_ptr + 1), NextValue(mv.issue_left, x.nw - 1), NextValue(mv.proc_left, x.nw),
            NextValue(mv.p_last, x.nw == 1),
            NextValue(mv.o, 0), lil.start.eq(1), lil.count.eq(x.cnt),
            NextState("MOVE"),
        ]

    def add_write_states(self, fsm, banks, wmem, xmem, lil):
        """Write frames, one slot after another: W_SLOT takes the slot's table entry (or releases the bank),
        W_PREP looks its row up (a row out of range is skipped, an empty row stored at once), MOVE moves the words
        of one slot or one XMEM row (raw -> row words, LIL -> decoder or copy), then stores the row."""
        walk, x, rows, mv, m, slot = self.walk, self.x, self.rows, self.mv, self.m, banks.slot
        fsm.act("W_SLOT",
            If(walk.end,
                banks.release.eq(1), NextValue(walk.next, 0), NextState("IDLE"),
            ).Else(
                NextValue(walk.next, walk.si + 1),
                NextValue(x.raw, slot.raw), NextValue(x.cnt, slot.cnt), NextValue(x.off, slot.off),
                NextValue(x.fin, slot.fin), NextValue(x.inr, slot.inr),
                NextValue(x.tox, banks.job.kind == JOB_WRITE_X),
                NextValue(rows.w, slot.row), NextValue(rows.x, slot.row),
                NextValue(mv.rd_ptr, slot.pay), NextValue(x.nw, slot.nw), NextValue(x.z, slot.nw == 0),
                NextValue(mv.in_dma, 0),
                NextState("W_PREP"),
            )
        )
        fsm.act("W_PREP",
            banks.rd.adr.eq(Cat(mv.rd_ptr[:8], banks.ebank)),
            If(~x.inr,
                *self.next_slot(banks),
            ).Elif(x.z,
                If(x.tox,
                    xmem.form.adr.eq(xmem.phys), xmem.form.dat_w.eq(0), xmem.form.we.eq(1),
                ).Else(
                    # an empty lane mask, through the LIL writer (behind the previous slot's mask)
                    NextValue(mv.phys, wmem.phys), lil.start.eq(1), lil.count.eq(0), m.last.eq(1),
                ),
                self.slot_stored.eq(1),
                *self.next_slot(banks),
            ).Elif(~x.tox | self.xl.room,
                NextValue(mv.src_x, 0),
                NextValue(mv.phys, Mux(x.raw, Mux(x.tox, xmem.free, wmem.free), Mux(x.tox, xmem.phys, wmem.phys))),
                *self.start_move(lil),
            )
        )
        # A raw row finished in WMEM: its row map entry and its all-ones lane mask are written the cycle after
        # (from registers; the row's number rows.w holds until the cycle after that)
        fin_w, fin_q = Signal(name="fin_w"), Signal(name="fin_q")
        fin_map, fin_free = Signal(wmem.phys_bits, name="fin_map"), Signal(wmem.phys_bits, name="fin_free")
        self.sync += [fin_q.eq(fin_w), fin_map.eq(wmem.free ^ rows.w), fin_free.eq(wmem.free)]
        self.comb += [
            wmem.map.dat_w.eq(fin_map), wmem.map.we.eq(fin_q),
            If(fin_q, wmem.mask_wr.adr.eq(fin_free), wmem.mask_wr.dat_w.eq((1 << ROW_LANES) - 1),
               wmem.mask_wr.we.eq(1)),
        ]
        fsm.act("MOVE",
            If(mv.src_x,
                xmem.rd.adr.eq(Cat(mv.rd_ptr[:8], mv.physx)),
            ).Else(
                banks.rd.adr.eq(Cat(mv.rd_ptr[:8], banks.ebank)),
            ),
            If(mv.issue_left != 0, NextValue(mv.rd_ptr, mv.rd_ptr + 1), NextValue(mv.issue_left, mv.issue_left - 1)),
            NextValue(mv.proc_left, mv.proc_left - 1), NextValue(mv.p_last, mv.proc_left == 2),
            NextValue(mv.o, mv.o + 1),
            m.adr.eq(Cat(Mux(x.raw, self.raw_lane, mv.o[:8]), Mux(self.xl.lx, xmem.phys, mv.phys))),
            m.we_x.eq(x.tox), m.we_w.eq(~x.tox & x.raw), m.lil.eq(~x.tox & ~x.raw),
            If(mv.p_last,
                m.last.eq(~x.raw & ~x.tox),
                If(x.raw,
                    If(x.fin,
                        If(x.tox,
                            xmem.map.dat_w.eq(xmem.free ^ rows.x), xmem.map.we.eq(1),
                            NextValue(xmem.free, xmem.phys),
                            xmem.form.adr.eq(xmem.free), xmem.form.dat_w.eq(1 << 9), xmem.form.we.eq(1),
                        ).Else(
                            fin_w.eq(1), NextValue(wmem.free, wmem.phys),
                        )
                    )
                ).Elif(x.tox,
                    xmem.form.adr.eq(mv.phys[:xmem.phys_bits]), xmem.form.dat_w.eq(x.cnt), xmem.form.we.eq(1),
                ),
                If(mv.in_dma,
                    NextState("D_NEXT"),
                ).Else(
                    self.slot_stored.eq(1),
                    *self.next_slot(banks),
                )
            )
        )

    def add_dma_states(self, fsm, banks, wmem, xmem, lil):
        """DMA XMEM -> WMEM, one row after another (LIL rows through the decoder): D_ROW waits for the row (or
        releases the bank), D_FORM reads its form, D_PREP moves it (an empty row: its empty lane mask), D_NEXT
        goes on to the next row."""
        x, rows, mv, xl = self.x, self.rows, self.mv, self.xl
        fsm.act("D_ROW",
            If(rows.left == 0,
                banks.release.eq(1), NextState("IDLE"),
            ).Elif(xl.ready,
                NextValue(mv.physx, xl.phys), NextValue(mv.in_dma, 1), NextValue(mv.src_x, 1), NextValue(x.tox, 0),
                NextState("D_FORM"),
            )
        )
        fsm.act("D_FORM",
            xmem.rd.adr.eq(Cat(C(0, 8), mv.physx)),
            NextValue(mv.rd_ptr, 0),
            NextValue(x.raw, xl.form[9]), NextValue(x.fin, 1), NextValue(x.off, 0),
            NextValue(x.cnt, xl.form[:9]),
            NextValue(x.nw, Mux(xl.form[9], ROW_WORDS, lil_payload_words(xl.form[:9]))),
            NextValue(x.z, ~xl.form[9] & (xl.form[:9] == 0)),     # (no LIL entries: no words)
            NextValue(mv.phys, Mux(xl.form[9], wmem.free, wmem.phys)),
            NextState("D_PREP"),
        )
        fsm.act("D_PREP",
            xmem.rd.adr.eq(Cat(mv.rd_ptr[:8], mv.physx)),
            If(x.z,
                # an empty lane mask, through the LIL writer (phys: the row's own physical row, from D_FORM)
                lil.start.eq(1), lil.count.eq(0), self.m.last.eq(1),
                NextState("D_NEXT"),
            ).Else(*self.start_move(lil))
        )
        fsm.act("D_NEXT",
            xl.done.eq(1),
            NextValue(rows.x, rows.x + 1), NextValue(rows.w, rows.w + 1), NextValue(rows.left, rows.left - 1),
            NextState("D_ROW"),
        )

    def add_read_states(self, fsm, banks, wmem, answer):
        """Read WMEM: answer frames of raw pieces. R_PLAN plans a frame (a first piece and, if that ends a row, a
        second one), R_HDR pushes its header, then per piece R_TAG its tag, R_ROW its row number, R_DATA its
        words; R_PAD pads the frame, then plans the next one (or releases the bank)."""
        rows, ro, r_end, fw = self.rows, self.ro, self.r_end, self.fw
        # only R_DATA uses what it reads; wmem.rphys (rows.w's physical row a cycle before) is there: R_DATA comes
        # at least two cycles after rows.w changes (IDLE, R_PLAN, R_HDR; R_TAG, R_ROW)
        self.comb += wmem.rd.adr.eq(Cat(ro, wmem.rphys))
        pc1, pc2, pc, used = (Signal(9, name=n) for n in ("pc1", "pc2", "pc", "used"))     # piece words, frame LEN
        two, second = Signal(name="two"), Signal(name="second")        # a second piece, it is under way
        r_data, r_fire = Signal(name="r_data"), Signal(name="r_fire")
        wleft = Signal(9, name="wleft")     # words of the answer piece left
        w_end = Signal(name="w_end")
        # First piece: the rest of the row from `ro`, at most MAX_PIECE_WORDS words, so it ends the row when
        # ro >= ends_at; the room then left for a second piece (after its 2 header words) is
        # PAYLOAD_WORDS - 4 - (ROW_WORDS - ro) = ro - 7 words, so a second piece needs ro >= second_at (and
        # rows left). Compares and subtractions of `ro` with constants only.
        ends_at = ROW_WORDS - MAX_PIECE_WORDS                           # 5
        second_at = ROW_WORDS + SLOT_HEADER_WORDS + 1 - (PAYLOAD_WORDS - SLOT_HEADER_WORDS)     # 8
        a_pc1, a_two = Signal(9, name="a_pc1"), Signal(name="a_two")
        self.comb += [
            a_pc1.eq(Mux(ro >= ends_at, ROW_WORDS - ro, MAX_PIECE_WORDS)),
            a_two.eq((ro >= second_at) & (rows.left[1:] != 0)),
        ]
        fsm.act("R_PLAN",
            NextValue(pc1, a_pc1),
            NextValue(two, a_two),
            NextValue(pc2, ro - (second_at - 1)),
            NextValue(used, Mux(a_two, PAYLOAD_WORDS, Mux(ro >= ends_at, ROW_WORDS + SLOT_HEADER_WORDS - ro,
                                                          PAYLOAD_WORDS))),
            NextValue(fw, 0), NextValue(second, 0),
            NextState("R_HDR"),
        )
        # (fw is 0, 1, 2 here: its low two bits name the header word)
        fsm.act("R_HDR",
            If(answer.can_push,
                answer.push.eq(1),
                answer.word.eq(Mux(fw[1], 1 + two, Mux(fw[0], used, CMD_ANSWER_ROWS))),
                NextValue(pc, pc1),
                If(fw[1], NextState("R_TAG")),
            )
        )
        fsm.act("R_TAG",
            If(answer.can_push,
                answer.push.eq(1),
                answer.word.eq(TAG.value(kind=KIND_RAW, width=LANE_WIDTH_CODE, count=pc, offset=ro)),
                NextState("R_ROW"),
            )
        )
        fsm.act("R_ROW",
            If(answer.can_push,
                answer.push.eq(1), answer.word.eq(rows.w),
                NextValue(wleft, pc), NextValue(w_end, pc == 1), NextState("R_DATA"),
            )
        )
        # R_DATA: the FSM only leaves the state; the words' counters step on `r_fire`, from the registered
        # state flag `r_data` and `can_push` (no state decode), with the piece's and the row's last word as
        # registers (`w_end`: wleft = 1, `r_end`: ro = ROW_WORDS - 1).
        fsm.act("R_DATA",
            If(answer.can_push & w_end,
                If(two & ~second, NextState("R_TAG")).Else(NextState("R_PAD")),
            )
        )
        # r_data: the FSM is in R_DATA (entered from R_ROW with can_push, left with can_push & w_end)
        self.sync += r_data.eq(Mux(r_data, ~(answer.can_push & w_end), fsm.ongoing("R_ROW") & answer.can_push))
        self.comb += [
            r_fire.eq(r_data & answer.can_push),
            If(r_fire, answer.push.eq(1), answer.from_wmem.eq(1)),
        ]
        self.sync += If(r_fire,
            ro.eq(ro + 1), r_end.eq(ro == ROW_WORDS - 2), wleft.eq(wleft - 1), w_end.eq(wleft == 2),
            If(w_end,
                If(r_end, rows.w.eq(rows.w + 1), rows.left.eq(rows.left - 1)),
                If(two & ~second, second.eq(1), pc.eq(pc2)),
            )
        )
        fsm.act("R_PAD",
            If(self.fw_full,
                If(rows.left == 0, banks.release.eq(1), NextState("IDLE")).Else(NextState("R_PLAN")),
            ).Elif(answer.can_push,
                answer.push.eq(1), answer.word.eq(0),
            )
        )

    def add_status_state(self, fsm, banks, answer):
        """Status: S_EMIT answers with the counters in STATUS_COUNTERS order; ADDR holds WIRE_VERSION."""
        fw = self.fw
        n_cnt = len(STATUS_COUNTERS)
        status_words = Array([C(CMD_ANSWER_STATUS, 32), C(n_cnt, 32), C(WIRE_VERSION, 32)] + self.status)
        fsm.act("S_EMIT",
            If(self.fw_full,
                banks.release.eq(1), self.status_sent.eq(1), NextState("IDLE"),
            ).Elif(answer.can_push,
                answer.push.eq(1),
                answer.word.eq(Mux(fw < HEADER_WORDS + n_cnt, status_words[fw[:4]], 0)),
            )
        )

    def connect_xmem(self, fsm, banks, xmem):
        """XMEM's side of the states (`xl`), from XMEM in block RAM or in DRAM (DRAMXMEM)."""
        x, rows, xl, slot = self.x, self.rows, self.xl, banks.slot
        if xmem.in_dram:
            # The row entries are block RAMs: a slot's row is looked up from W_SLOT on, for MOVE (xl.lx).
            self.comb += [
                xl.lx.eq(x.tox & ~x.raw),
                xmem.row.eq(Mux(fsm.ongoing("W_SLOT"), slot.row, rows.x)),
                # (can_write is registered: the slot's need a cycle ahead, W_SLOT leads to W_PREP; the state is one
                # flip-flop of the one-hot state register)
                xmem.need.eq(Mux(fsm.ongoing("W_SLOT"), slot.nw, x.nw)), xl.room.eq(xmem.can_write),
                xmem.fetch.eq(xl.start), xmem.fetch_row.eq(banks.job.p0), xmem.fetch_n.eq(banks.job.p2),
                xl.ready.eq(xmem.staged), xl.phys.eq(xmem.staged_slot), xl.form.eq(xmem.staged_form),
                xmem.release.eq(xl.done),
            ]
        else:
            self.comb += [
                xmem.row.eq(rows.x), xmem.form_rd.adr.eq(self.mv.physx),
                xl.room.eq(1), xl.ready.eq(1), xl.phys.eq(xmem.phys), xl.form.eq(xmem.form_rd.dat_r),
            ]

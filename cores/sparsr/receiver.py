"""Sparsr card-side receiver: validates whole 256-word frames, then stores their rows in WMEM or XMEM.

Structure (one word per cycle in, see docs/sparsr.md), one submodule each:

* `FrameBanks`: two 256-word frame buffers (ping-pong), each with what the parser found in it (a job and a
  slot table); the parser fills one while the executor works on the other.
* `SparsrParser`: every accepted input word is written into the free frame buffer and checked on the fly
  (header, tags, LIL lane order and padding, raw-piece continuity, LEN/ADDR against the slots). At the
  frame's last word it either hands the buffer to the executor with a slot table, or drops the whole frame
  and names the reason.
* `SparsrExecutor`: commits the buffered frame (or runs a read/DMA/status command) while the parser fills
  the other buffer. A committed slot costs at most its own length in cycles (slot header words pay for the
  set-up), so a full frame commits in at most 255 cycles and input never stalls on writes. Answers leave
  through `AnswerPath`.
* `WMEM`, `XMEM` (row memories): rows are stored in physical row slots behind a row map with one spare slot.
  A raw row's pieces go into the spare slot and the map is switched when the last piece arrives, so a row
  changes only when complete, at no copy cost. WMEM keeps a 256-bit lane mask per physical row: a LIL row
  writes only its listed lanes and its mask (lanes not listed read as 0), so clearing a row costs no cycles.
  XMEM keeps rows as sent: the LIL payload words verbatim plus a (kind, count) form word, or the raw words.
* The only `LILDecoder` sits on the path into WMEM; the XMEM->WMEM DMA feeds LIL rows through it too.
"""
from migen import *
from migen.genlib.record import Record

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.block_ram import BlockRAM
from cores.lib.counters import add_counters, add_counter_csrs
from cores.lib.logic import OneHotFSM, index_bits
from cores.sparsr.common import (
    FRAME_WORDS, HEADER_WORDS, PAYLOAD_WORDS, MAX_SLOTS, ROW_WORDS, ROW_LANES, LIL_ENTRY_BYTES,
    TAG, KIND_END, KIND_RAW, KIND_LIL, LANE_WIDTH_CODE, LIL_MAX_ENTRIES, CMD_WRITE_WMEM, CMD_WRITE_XMEM,
    CMD_READ_WMEM, CMD_DMA_XMEM_WMEM, CMD_STATUS, CMD_ANSWER_ROWS, CMD_ANSWER_STATUS, CMD_PARAMS,
    MAX_PIECE_WORDS, SLOT_HEADER_WORDS, REASONS, REASON_LENGTH, REASON_CMD, REASON_TAG, REASON_LIL, REASON_PIECE, REASON_HEADER,
    REASON_BITS, COUNTERS, STATUS_COUNTERS, MAX_ROWS, XMEM_BRAM, XMEM_DRAM, XMEM_KINDS, DRAM_COUNTERS,
)

WORD_LAYOUT = [("data", 32)]


def _wide(value, extra):
    """`value` zero-extended by `extra` bits. Verilog evaluates an expression at the width of its widest
    operand or target (Migen's simulator at unbounded width), so a sum or shift that can outgrow both must
    widen an operand; otherwise it wraps in the gateware only."""
    return Cat(value, C(0, extra))


def _word_ram(depth, tile_rows=None):
    """A 32-bit `BlockRAM` of `depth` words (at most `tile_rows` rows of ECP5 tiles) and its port records `wr`
    (adr, dat_w, we), `rd` (adr, dat_r), with
    registers on both sides of the block RAM (timing: its tiles sit apart, its clock-to-out is 5.8 ns on ECP5
    without the output register): a write lands in the RAM one cycle after `wr.we`, read data comes two cycles
    after the address (on ECP5 from the DP16KD's output register, 0.9 ns after the clock). A read that meets
    a write to its address returns an undefined word (never used here). Returns the RAM, `wr`, `rd`, the
    write registers (sync) and the read wiring (comb)."""
    ram = BlockRAM(32, depth, tile_rows=tile_rows)
    wr = Record([("adr", len(ram.adr_w)), ("dat_w", 32), ("we", 1)])
    rd = Record([("adr", len(ram.adr_r)), ("dat_r", 32)])
    return ram, wr, rd, [ram.adr_w.eq(wr.adr), ram.dat_w.eq(wr.dat_w), ram.we.eq(wr.we)], [
        ram.adr_r.eq(rd.adr), rd.dat_r.eq(ram.dat_r)]


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


# Executor job kinds (internal: the buffered frame's command, decoded once by the parser).
JOB_WRITE_W, JOB_WRITE_X, JOB_READ, JOB_DMA, JOB_STATUS = range(5)


# Frame banks ---------------------------------------------------------------------------------------------

def slot_layout(row_bits):
    """A slot table entry: raw (else LIL), row number, first row word, count (raw words / LIL entries),
    payload words, frame index of the slot's first payload word, finishes its row, row in range."""
    return [("raw", 1), ("row", row_bits), ("off", 8), ("cnt", 9), ("nw", 9), ("pay", 8), ("fin", 1), ("inr", 1)]


def job_layout(row_bits):
    """A job: what the executor does with a bank (JOB_*), its slot count and the command parameters (row
    numbers and row counts, which an accepted command keeps within the memories: row_bits + 1 bits)."""
    return [("kind", 3), ("ns", 3)] + [(p, row_bits + 1) for p in ("p0", "p1", "p2")]


class FrameBanks(LiteXModule):
    """Two frame buffers of FRAME_WORDS words (one block RAM, ping-pong), each with a job and a slot table
    of MAX_SLOTS entries (`job_layout(row_bits)`, `slot_layout(row_bits)`).

    Fill side (the parser), bank `wbank`: `fill_bank`, the bank the words go to (`wbank`, or the other one
    in the cycle that accepts `wbank`), `free_same` / `free_other`: whether `wbank` / the other bank will be
    free in the next cycle (with this cycle's `accept` and `release`; for the parser's registered
    handshake), `wr` (the buffer's write port,
    address Cat(word, fill_bank)), `slot_we`/`slot_index`/`slot_w` (write a slot table entry), `accept` (with
    `job_w`: the bank becomes busy and the fill side moves to the other bank).
    Drain side (the executor), bank `ebank`: `pending` (the bank is busy), `rd` (read port: data two cycles after
    the address), `job`, `slot`
    (registered: the entry `slot_rindex` named in the previous cycle), `release` (the bank is free again, the drain side moves on).
    `empty`: neither bank is busy.
    """
    def __init__(self, row_bits):
        layout, job = slot_layout(row_bits), job_layout(row_bits)
        self.wbank, self.ebank = Signal(name="wbank"), Signal(name="ebank")
        self.fill_bank = Signal(name="fill_bank")
        self.free_same, self.free_other = Signal(name="free_same"), Signal(name="free_other")
        self.pending, self.empty = Signal(name="pending"), Signal(name="empty")
        self.slot_we, self.slot_index, self.slot_w = Signal(), Signal(2), Record(layout)
        self.accept, self.job_w = Signal(name="accept"), Record(job)
        self.slot_rindex, self.slot, self.job = Signal(2), Record(layout), Record(job)
        self.release = Signal()
        self.fbuf, self.wr, self.rd, write, read = _word_ram(2 * FRAME_WORDS)
        self.sync += write
        self.comb += read

        # # #

        busy = Array(Signal(name=f"busy{i}") for i in range(2))
        tables = {n: Array(Signal(w) for _ in range(2 * MAX_SLOTS)) for n, w in layout}
        jobs = {n: Array(Signal(w) for _ in range(2)) for n, w in job}
        tix_e = Signal(3)
        self.comb += [
            self.fill_bank.eq(self.wbank ^ self.accept),
            # next cycle: accept makes wbank busy and the other bank the fill bank; release frees ebank
            # (never the bank accepted: that one was not busy)
            self.free_same.eq(Mux(self.accept, ~busy[~self.wbank] | (self.release & (self.ebank != self.wbank)),
                                  ~busy[self.wbank] | (self.release & (self.ebank == self.wbank)))),
            self.free_other.eq(~self.accept & (~busy[~self.wbank] | (self.release & (self.ebank != self.wbank)))),
            self.pending.eq(busy[self.ebank]),
            self.empty.eq(~busy[0] & ~busy[1]),
            tix_e.eq(Cat(self.slot_rindex, self.ebank)),
            [getattr(self.job, n).eq(jobs[n][self.ebank]) for n, _ in job],
        ]
        tix = Cat(self.slot_index, self.wbank)
        self.sync += [
            [getattr(self.slot, n).eq(tables[n][tix_e]) for n, _ in layout],
            If(self.slot_we, [tables[n][tix].eq(getattr(self.slot_w, n)) for n, _ in layout]),
            If(self.accept, busy[self.wbank].eq(1), self.wbank.eq(~self.wbank)),
            # a free bank's job follows job_w, so the bank accepted keeps the job of its accept cycle (timing: the
            # job registers' enables are registers, not `accept`)
            If(~busy[self.wbank], [jobs[n][self.wbank].eq(getattr(self.job_w, n)) for n, _ in job]),
            If(self.release, busy[self.ebank].eq(0), self.ebank.eq(~self.ebank)),
        ]


# Row memories --------------------------------------------------------------------------------------------

class RowMemory(LiteXModule):
    """`rows` rows of ROW_WORDS words in rows + 1 physical rows (one spare) behind a row map.

    `wr`, `rd`: ports of the words (address Cat(word, physical row); a write lands the cycle after `wr.we`,
    read data comes two cycles after the address). `row` (row_bits, input): a row number;
    `phys`: the physical row holding it (combinational). `map`: the row map's port at `row`; it holds
    physical row XOR row number, so its all-zero reset state is the identity map (no initialisation).
    `free`: the spare physical row (`rows` at reset); the executor swaps it with a row's physical row when
    the row's last raw piece is written into the spare. `name`: "w" or "x" (memory names sparsr_<name>mem,
    sparsr_<name>map). `tile_rows`: of the words' block RAM (`BlockRAM`).
    """
    def __init__(self, rows, row_bits, name, tile_rows=None):
        self.phys_bits = pb = bits_for(rows)          # physical row index: 0..rows
        self.row = Signal(row_bits)
        self.phys = Signal(pb)
        self.free = Signal(pb, reset=rows)
        self.values, self.wr, self.rd, write, read = _word_ram((rows + 1) * ROW_WORDS, tile_rows)
        self.sync += write
        self.comb += read
        row_map = Memory(pb, max(rows, 2), name=f"sparsr_{name}map")     # (a 1-entry memory has no address)
        self.map = row_map.get_port(write_capable=True, async_read=True)
        self.specials += row_map, self.map

        # # #

        self.comb += [self.map.adr.eq(self.row), self.phys.eq(self.map.dat_r ^ self.row)]


class WMEM(RowMemory):
    """WMEM: a RowMemory with a lane mask of ROW_LANES bits per physical row (`mask_wr` (adr, dat_w, we): a
    write lands two cycles later, through two stages of registers in front of the RAM's write port (the
    second sits by the RAM); `lanes`: the mask of `phys` two cycles before, from registers: a LUT RAM read at
    `phys` and a register, or with more than MASK_LUT_ROWS rows (where synthesis takes block RAM) a BlockRAM
    read through its output register). A lane whose mask bit is 0 reads as 0. A mask read that meets a write
    of the same physical row gives an undefined `lanes` (only a read job, after the writes, uses them).
    `rphys`: the physical row of `row` a cycle before, a register (the words' read address) from a second copy
    of the row map, the read side's, which also addresses the mask (timing: the executor's `phys` stays off
    the wide RAMs' address pins, the words' tiles spread over the chip). The words' RAM has at most
    WORD_TILE_ROWS rows of ECP5 tiles (its read data's row select behind the output registers is that many
    inputs wide)."""
    MASK_LUT_ROWS = 32
    WORD_TILE_ROWS = 5

    def __init__(self, rows, row_bits):
        RowMemory.__init__(self, rows, row_bits, "w", self.WORD_TILE_ROWS)
        self.mask_wr = Record([("adr", bits_for(rows)), ("dat_w", ROW_LANES), ("we", 1)])
        self.lanes = Signal(ROW_LANES)
        self.rphys = Signal(self.phys_bits)

        # # #

        # the read side's copy of the row map (written as the map)
        rmap = Memory(self.phys_bits, max(rows, 2), name="sparsr_wrmap")
        rmap_w, rmap_r = rmap.get_port(write_capable=True), rmap.get_port(async_read=True)
        self.specials += rmap, rmap_w, rmap_r
        mphys = Signal(self.phys_bits)      # the mask's read address
        self.comb += [
            rmap_w.adr.eq(self.row), rmap_w.dat_w.eq(self.map.dat_w), rmap_w.we.eq(self.map.we),
            rmap_r.adr.eq(self.row), mphys.eq(rmap_r.dat_r ^ self.row),
        ]
        self.sync += self.rphys.eq(mphys)
        staged = Record(self.mask_wr.layout)
        self.sync += staged.eq(self.mask_wr)
        if rows > self.MASK_LUT_ROWS:
            self.mask_ram = ram = BlockRAM(ROW_LANES, rows + 1)
            self.submodules += ram
            self.sync += [ram.adr_w.eq(staged.adr), ram.dat_w.eq(staged.dat_w), ram.we.eq(staged.we)]
            self.comb += [ram.adr_r.eq(mphys), self.lanes.eq(ram.dat_r)]
        else:
            mask = Memory(ROW_LANES, rows + 1, name="sparsr_wmask")
            mask_w, mask_rd = mask.get_port(write_capable=True), mask.get_port()
            self.specials += mask, mask_w, mask_rd
            self.sync += [mask_w.adr.eq(staged.adr), mask_w.dat_w.eq(staged.dat_w), mask_w.we.eq(staged.we),
                          self.lanes.eq(mask_rd.dat_r)]
            self.comb += mask_rd.adr.eq(mphys)


# An XMEM row's form: Cat(count (9 bits), is_raw); all zero is an empty LIL row.
FORM_BITS = 10


class XMEM(RowMemory):
    """XMEM in block RAM: a RowMemory with the form of each physical row (`form` write port, `form_rd`
    asynchronous read port); at reset (all zero) every row is an empty LIL row. (XMEM in DRAM:
    `cores.sparsr.xmem_dram.DRAMXMEM`.)"""
    def __init__(self, rows, row_bits):
        RowMemory.__init__(self, rows, row_bits, "x")
        self.in_dram = False
        form = Memory(FORM_BITS, rows + 1, name="sparsr_xform")
        self.form, self.form_rd = form.get_port(write_capable=True), form.get_port(async_read=True)
        self.specials += form, self.form, self.form_rd


# Parser --------------------------------------------------------------------------------------------------

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
        self.accept, self.refuse, self.reason = Signal(), Signal(), Signal(REASON_BITS)
        self.rows_refused = Signal(4)
        self.idle = Signal()
        self.hold = Signal()            # a status answer is pending (from the verdict to `status_sent`)
        self.status_sent = Signal()     # in: the status answer is out
        self.accept_status = Signal()   # out: the frame accepted now is a status command

        # # #

        R, X = wmem_rows, xmem_rows
        sink = self.sink
        word = sink.data
        idx = Signal(8)
        # Where idx is, as registers that move with it (no compare of idx on the word's paths): one-hot
        # idx = 0..5 (the header and the command parameters), idx >= HEADER_WORDS, idx = FRAME_WORDS - 1.
        at_i = Signal(HEADER_WORDS + 3, reset=1)
        in_body, at_last = Signal(), Signal()
        at_len = Signal()        # idx = len_at (from idx = HEADER_WORDS on)
        discard = Signal()
        # LEN and ADDR, decoded from their words into flags and small registers
        len_cmd, len_full, len_fits = Signal(), Signal(), Signal()  # LEN = the command's, PAYLOAD_WORDS, < 253
        len_at = Signal(8)       # HEADER_WORDS + LEN (when len_fits): the index of a kind-00 tag that agrees
        addr_n, addr_big = Signal(3), Signal()
        reason = Signal(REASON_BITS)
        PS_TAG, PS_ROW, PS_PAY, PS_END = range(4)
        ps = Signal(2)
        nslots = Signal(3)
        n_oor = Signal(3)
        s_raw, s_cnt, s_off, s_nw, s_cont = Signal(), Signal(9), Signal(8), Signal(9), Signal()
        s_left, s_last = Signal(9), Signal()     # payload words left in the slot; the next one is its last
        # LIL: byte phase of the word, entries left, previous lane, entry bytes left before this word (down to
        # 0), which of this word's bytes are padding
        phase, eleft, prev, has_prev, bleft, pad = Signal(3), Signal(9), Signal(8), Signal(), Signal(10), Signal(4)
        nb = index_bits(max(R, X)) + 1     # a row number or row count within the memories
        params = [Signal(nb) for _ in range(3)]
        # The command parameters' range checks, each made as its word arrives (against constants and the
        # parameters before it, which an accepted command keeps within nb bits): p0 < R, p0 < X, p1 != 0,
        # p1 < R, p0 + p1 <= R, p2 != 0, p0 + p2 <= X, p1 + p2 <= R.
        c_p0r, c_p0x, c_p1nz, c_p1r, c_s01r, c_p2nz, c_s02x, c_s12r = (Signal() for _ in range(8))
        # (the sums as one compare of the word: R - p0, X - p0 and R - p1, registered with p0 and p1; each is
        # only used with its parameter's own range check, p0 < R, p0 < X or p1 < R, so it never wraps then)
        r0_left, x0_left, r1_left = (Signal(nb, name=n) for n in ("r0_left", "x0_left", "r1_left"))
        # Raw row in progress: committed (p_*) and as this frame would leave it (q_*).
        p_valid, p_row, p_off, p_x = Signal(), Signal(32), Signal(9), Signal()
        q_valid, q_row, q_off, q_x = Signal(), Signal(32), Signal(9), Signal()

        is_w, is_x = Signal(), Signal()
        is_write, is_read, is_dma, is_status = Signal(), Signal(), Signal(), Signal()
        fire = Signal()
        v_done = Signal()        # the verdict cycle: one cycle after a frame's last word (or its length error)
        # ready = ~hold & ~(v_done & is_status) & (discard | the bank free: wbank, or in the verdict cycle the
        # other one), from registers of its terms' next values: blk = hold | (v_done & is_status) (no word in
        # the verdict cycle of a status frame: an accepted one sets `hold`), ok_w / ok_o = discard | wbank /
        # the other bank free
        blk = Signal(name="blk")
        ok_w, ok_o = Signal(name="ok_w", reset=1), Signal(name="ok_o", reset=1)
        self.comb += [
            sink.ready.eq(~blk & Mux(v_done, ok_o, ok_w)),
            fire.eq(sink.valid & sink.ready),
            banks.wr.adr.eq(Cat(idx, banks.fill_bank)),
            banks.wr.dat_w.eq(word),
            banks.wr.we.eq(fire & ~discard),
        ]
        # The command, decoded from the CMD word into registers.
        self.comb += is_write.eq(is_w | is_x)
        # The current word as if it were a tag.
        k_kind, k_cnt, k_off = (TAG.field(word, f) for f in ("kind", "count", "offset"))
        # The word's place as if it were taken (the rules registered in `errs` are these, without `fire`: a
        # word not taken is masked out the cycle after, by `took`), then with `fire`.
        hdr_w, body_w = Signal(), Signal()
        tag_w, row_w, pay_w = Signal(), Signal(), Signal()
        body = Signal()          # a payload word of a write frame
        at_tag, at_row, at_pay = Signal(), Signal(), Signal()
        self.comb += [
            hdr_w.eq(~discard & ~in_body),
            body_w.eq(~discard & in_body & is_write),
            tag_w.eq(body_w & (ps == PS_TAG)),
            row_w.eq(body_w & (ps == PS_ROW)),
            pay_w.eq(body_w & (ps == PS_PAY)),
            body.eq(fire & body_w),
            at_tag.eq(fire & tag_w),
            at_row.eq(fire & row_w),
            at_pay.eq(fire & pay_w),
        ]
        row_inr, row_oor = Signal(), Signal()
        self.comb += [
            row_inr.eq(Mux(is_x, word < X, word < R)),       # (two compares with constants)
            row_oor.eq(~row_inr),
        ]
        # LIL checks on a payload word.
        lane_here = Signal()
        lane = Signal(8)
        wbytes = [word[8 * i:8 * i + 8] for i in range(4)]
        pad_bad = Signal()
        self.comb += [
            lane_here.eq(~phase[2] & (eleft != 0)),
            lane.eq(Array(wbytes)[phase[:2]]),
            pad_bad.eq(reduce(or_, [pad[i] & (wbytes[i] != 0) for i in range(4)])),
        ]
        # End of the slot list in this word (a kind-00 tag, or a slot ending on the frame's last word).
        end_tag_w, list_end_w = Signal(), Signal()
        end_nslots = Signal(3)
        self.comb += [
            end_tag_w.eq(tag_w & (k_kind == KIND_END)),
            list_end_w.eq(end_tag_w | (((row_w & (s_nw == 0)) | (pay_w & s_last)) & at_last)),
            end_nslots.eq(nslots + row_w),
        ]
        # Errors found on this word, in priority order (the first one names the refusal).
        known_cmd, cont_ok = Signal(), Signal()
        self.comb += [
            known_cmd.eq((word >= CMD_WRITE_WMEM) & (word <= CMD_STATUS)),
            cont_ok.eq(Mux(p_x, is_x, is_w) | is_status),
        ]
        exp_len = Signal(2)
        self.comb += exp_len.eq(Mux(is_read, CMD_PARAMS[CMD_READ_WMEM], Mux(is_dma, CMD_PARAMS[CMD_DMA_XMEM_WMEM],
                                                                          CMD_PARAMS[CMD_STATUS])))
        piece_bad = Signal()
        self.comb += piece_bad.eq(Mux(q_valid, (nslots != 0) | (k_kind != KIND_RAW) | (k_off != q_off),
                                      (k_kind == KIND_RAW) & (k_off != 0)))
        # A slot's tag is checked in a second stage, the cycle after it (before its row word's own rules, if
        # that word comes in the same cycle), on registers: the tag word, the room after it (tables of its
        # index), a fifth slot, the raw-piece continuity. Not on the frame's last word (that tag is refused
        # at once) or on a word that ends a frame too short (refused for its length).
        slot_tag = Signal()
        t_word, t_room, t_lil_room = Signal(32), Signal(8), Signal(8)
        t_past = Signal(name="t_past")
        t_chk, t_full, t_piece = Signal(), Signal(), Signal()
        self.tag = tag = TagCheck()
        self.comb += [
            slot_tag.eq(at_tag & (k_kind != KIND_END)),
            tag.word.eq(t_word), tag.room.eq(t_room), tag.lil_room.eq(t_lil_room), tag.past_end.eq(t_past),
        ]
        # (rule, reason, on the word: registered without `fire`, masked by `fired`)
        errors = [
            (hdr_w & at_i[0] & ~known_cmd, REASON_CMD, True),
            (hdr_w & at_i[1] & p_valid & ~cont_ok, REASON_PIECE, True),
            (hdr_w & at_i[2] & ~is_write & (~len_cmd | (word != 0)), REASON_CMD, True),
            (t_chk & tag.bad, REASON_TAG, False),
            (t_chk & t_full, REASON_HEADER, False),
            (t_chk & t_piece, REASON_PIECE, False),
            (tag_w & (k_kind != KIND_END) & at_last, REASON_TAG, True),
            (row_w & s_cont & (word != q_row), REASON_PIECE, True),
            (pay_w & ~s_raw & ((lane_here & has_prev & (lane <= prev)) | pad_bad), REASON_LIL, True),
            (list_end_w & ((end_nslots != addr_n) | addr_big | (end_nslots == 0) |
                           Mux(end_tag_w, ~len_fits | ~at_len, ~len_full)), REASON_HEADER, True),
        ]
        errs_w = Signal(len(errors))    # the rules the previous word broke, if it was taken
        fired = Signal(name="fired")    # it was
        errs = Signal(len(errors))      # the rules the previous word broke
        self.sync += errs_w.eq(Cat(*[cond for cond, _, _ in errors])), fired.eq(fire)
        self.comb += errs.eq(Cat(*[errs_w[i] & fired if on_word else errs_w[i]
                                   for i, (_, _, on_word) in enumerate(errors)]))
        err_prev = Signal()
        err_code = Signal(REASON_BITS)
        self.comb += err_prev.eq(errs != 0)
        sel = err_code.eq(0)
        for i, (_, r, _) in reversed(list(enumerate(errors))):
            sel = If(errs[i], err_code.eq(r)).Else(sel)
        self.comb += sel
        p0, p1, p2 = params
        cmd_ok = Signal()
        cmd_ok_r = Signal()
        self.comb += cmd_ok.eq(
            is_write |
            (is_read & c_p0r & c_p1nz & c_s01r) |
            (is_dma & c_p0x & c_p1r & c_p2nz & c_s02x & c_s12r) |
            is_status)
        self.sync += cmd_ok_r.eq(cmd_ok)
        w_small, w_n = Signal(), Signal(nb)     # the word fits nb bits; its nb low bits
        self.comb += [w_small.eq(word[nb:] == 0), w_n.eq(word[:nb])]
        frame_end = Signal()
        len_bad = Signal()
        frame_done = Signal()
        self.comb += [
            frame_end.eq(fire & ~discard & at_last & sink.last),
            len_bad.eq(fire & ~discard & (sink.last != at_last)),
            frame_done.eq(frame_end | len_bad),
        ]
        # The verdict, one cycle after the frame's last word: `reason` holds the first rule broken up to the
        # word before the last, `errs` the last word's.
        v_len = Signal()
        v_ns = Signal(3)
        v_oor = Signal(3)
        final_reason = Signal(REASON_BITS)
        accept = Signal()
        refuse = Signal()
        self.comb += [
            final_reason.eq(Mux(reason != 0, reason, Mux(err_prev, err_code, Mux(cmd_ok_r, 0, REASON_CMD)))),
            # final_reason == 0, from the registers without the rule priority (every reason code is non-zero)
            accept.eq(v_done & ~v_len & (reason == 0) & ~err_prev & cmd_ok_r),
            refuse.eq(v_done & ~accept),
        ]
        refuse_code = Signal(REASON_BITS)
        self.comb += refuse_code.eq(Mux(v_len, REASON_LENGTH, final_reason))
        job_kind = Signal(3)
        self.comb += job_kind.eq(Mux(is_w, JOB_WRITE_W, Mux(is_x, JOB_WRITE_X, Mux(is_read, JOB_READ,
                                     Mux(is_dma, JOB_DMA, JOB_STATUS)))))
        new_off = Signal(9)
        self.comb += new_off.eq(s_off + s_cnt)
        self.sync += [
            t_word.eq(word), t_past.eq(_wide(k_off, 2) + k_cnt > ROW_WORDS),
            t_room.eq(FRAME_WORDS - 2 - idx),
            t_lil_room.eq(Array(C(4 * max(FRAME_WORDS - 2 - i, 0) // LIL_ENTRY_BYTES, 8)
                                for i in range(FRAME_WORDS))[idx]),
            t_chk.eq(slot_tag & ~frame_done), t_full.eq(nslots == MAX_SLOTS), t_piece.eq(piece_bad),
            v_done.eq(frame_done), v_len.eq(len_bad),
            If(frame_done, v_ns.eq(end_nslots), v_oor.eq(n_oor + (at_row & row_oor))),
            If(err_prev & (reason == 0), reason.eq(err_code)),
            If(v_done, reason.eq(0)),
            If(fire & discard & sink.last, discard.eq(0)),
            If(fire & ~discard,
                idx.eq(idx + 1),
                at_i.eq(at_i << 1), If(at_i[HEADER_WORDS - 1], in_body.eq(1)), at_last.eq(idx == FRAME_WORDS - 2),
                at_len.eq(idx + 1 == len_at),
                If(at_i[0],
                    is_w.eq(word == CMD_WRITE_WMEM), is_x.eq(word == CMD_WRITE_XMEM), is_read.eq(word == CMD_READ_WMEM),
                    is_dma.eq(word == CMD_DMA_XMEM_WMEM), is_status.eq(word == CMD_STATUS),
                ),
                If(at_i[1],
                    len_cmd.eq(word == exp_len), len_full.eq(word == PAYLOAD_WORDS),
                    len_fits.eq(word < FRAME_WORDS - HEADER_WORDS), len_at.eq(word[:8] + HEADER_WORDS),
                ),
                If(at_i[2], addr_n.eq(word[:3]), addr_big.eq(word[3:] != 0)),
                [If(at_i[HEADER_WORDS + i], params[i].eq(word)) for i in range(3)],
                If(at_i[HEADER_WORDS],
                    c_p0r.eq(word < R), c_p0x.eq(word < X), r0_left.eq(R - w_n), x0_left.eq(X - w_n),
                ),
                If(at_i[HEADER_WORDS + 1],
                    c_p1nz.eq(word != 0), c_p1r.eq(word < R), c_s01r.eq(w_small & (w_n <= r0_left)),
                    r1_left.eq(R - w_n),
                ),
                If(at_i[HEADER_WORDS + 2],
                    c_p2nz.eq(word != 0), c_s02x.eq(w_small & (w_n <= x0_left)),
                    c_s12r.eq(w_small & (w_n <= r1_left)),
                ),
            ),
            If(at_tag,
                If(k_kind == KIND_END,
                    ps.eq(PS_END),
                ).Else(
                    ps.eq(PS_ROW),
                    s_raw.eq(k_kind == KIND_RAW), s_cnt.eq(k_cnt), s_off.eq(k_off),
                    s_nw.eq(Mux(k_kind == KIND_LIL, _lil_words(k_cnt), k_cnt)),
                    s_cont.eq(q_valid),
                    phase.eq(0), eleft.eq(k_cnt), has_prev.eq(0),
                    bleft.eq(_entry_bytes(k_cnt)), pad.eq(Mux(k_cnt == 0, 0b1111, 0)),
                )
            ),
            If(at_row,
                ps.eq(Mux(s_nw == 0, PS_TAG, PS_PAY)), s_left.eq(s_nw), s_last.eq(s_nw == 1),
                nslots.eq(nslots + 1),
                n_oor.eq(n_oor + row_oor),
                If(s_raw,
                    q_valid.eq(new_off != ROW_WORDS), q_row.eq(word), q_off.eq(new_off), q_x.eq(is_x),
                ),
            ),
            If(at_pay,
                If(s_last, ps.eq(PS_TAG)),
                s_left.eq(s_left - 1), s_last.eq(s_left == 2),
                phase.eq(Mux(phase == 4, 0, phase + 1)),
                bleft.eq(Mux(bleft > 4, bleft - 4, 0)), pad.eq(Cat(*[bleft <= 4 + i for i in range(4)])),
                If(lane_here, eleft.eq(eleft - 1), prev.eq(lane), has_prev.eq(1)),
            ),
            If(accept,
                p_valid.eq(q_valid), p_row.eq(q_row), p_off.eq(q_off), p_x.eq(q_x),
            ),
            If(refuse,
                q_valid.eq(p_valid), q_row.eq(p_row), q_off.eq(p_off), q_x.eq(p_x),
            ),
            If(frame_done,
                idx.eq(0), at_i.eq(1), in_body.eq(0), at_last.eq(0), ps.eq(PS_TAG), nslots.eq(0), n_oor.eq(0),
                If(~sink.last, discard.eq(1)),
            ),
        ]
        # Into the bank: each slot's table entry (at its row word), the job of an accepted frame.
        slot = banks.slot_w
        self.comb += [
            banks.slot_we.eq(at_row), banks.slot_index.eq(nslots[:2]),
            slot.raw.eq(s_raw), slot.row.eq(word), slot.off.eq(s_off), slot.cnt.eq(s_cnt),
            slot.nw.eq(s_nw), slot.pay.eq(idx + 1), slot.fin.eq(new_off == ROW_WORDS), slot.inr.eq(row_inr),
            banks.accept.eq(accept),
            banks.job_w.kind.eq(job_kind), banks.job_w.ns.eq(v_ns),
            banks.job_w.p0.eq(p0), banks.job_w.p1.eq(p1), banks.job_w.p2.eq(p2),
            self.accept.eq(accept), self.refuse.eq(refuse), self.reason.eq(refuse_code),
            self.accept_status.eq(accept & is_status),
            self.rows_refused.eq(v_oor),
            self.idle.eq(at_i[0] & ~discard & ~v_done),
        ]
        # The handshake's registers (see `ready` above), from the next values of hold, discard and is_status
        discard_n, hold_n = Signal(), Signal()
        self.comb += [
            discard_n.eq(Mux(frame_done & ~sink.last, 1, Mux(fire & discard & sink.last, 0, discard))),
            hold_n.eq(self.accept_status | (self.hold & ~self.status_sent)),
        ]
        self.sync += [
            self.hold.eq(hold_n),
            blk.eq(hold_n | (frame_done & Mux(at_i[0], word == CMD_STATUS, is_status))),
            ok_w.eq(discard_n | banks.free_same), ok_o.eq(discard_n | banks.free_other),
        ]


# Executor ------------------------------------------------------------------------------------------------

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
    `fifo_depth` (answer FIFO). `source`: answer frames. `status`: the counters, in STATUS_COUNTERS order (inputs). `slot_stored`: a
    slot was stored (or dropped for its row, not counted) this cycle.
    Cost: a write slot at most its payload words + 2 cycles (a frame at most 255 cycles); a DMA row its
    words + 3 cycles; answers one word a cycle while the source takes them. With XMEM in DRAM a slot into
    XMEM first waits until the DRAM write FIFO has room for it, and a DMA row until it is staged.
    """
    def __init__(self, banks, wmem, xmem, fifo_depth):
        self.source = stream.Endpoint(WORD_LAYOUT)
        self.status = [Signal(32, name=f"status_{n}") for n in STATUS_COUNTERS]
        self.slot_stored = Signal()
        self.status_sent = Signal()     # the last word of a status answer was pushed

        # # #

        pwb, pxb = wmem.phys_bits, xmem.phys_bits
        rb = len(wmem.row)
        si = Signal(3)
        s_end = Signal(name="s_end")        # si = banks.job.ns (no slot left), a register moving with si
        slot = banks.slot      # registered: the states before W_SLOT name its entry (IDLE: slot 0)
        # the entry the next W_SLOT reads, a register: si + 1 from W_SLOT to the next W_SLOT, else 0
        s_next = Signal(2)
        self.comb += banks.slot_rindex.eq(s_next)
        x_raw, x_tox, x_fin = Signal(name="x_raw"), Signal(name="x_tox"), Signal(name="x_fin")
        x_cnt, x_off, x_inr = Signal(9, name="x_cnt"), Signal(8, name="x_off"), Signal(name="x_inr")
        x_nw = Signal(9)
        x_z = Signal(name="x_z")            # x_nw = 0, a register set with x_nw
        trow_w, trow_x = Signal(rb), Signal(rb)
        phys = Signal(max(pwb, pxb))
        physx = Signal(pxb)
        rd_ptr = Signal(9)
        issue_left, proc_left, o = Signal(9), Signal(9), Signal(9)
        p_last = Signal(name="p_last")      # proc_left = 1, a register moving with proc_left
        src_x = Signal()
        in_dma = Signal()
        rleft = Signal(rb + 1)       # rows left to read or copy
        wleft = Signal(9)            # words of the answer piece left
        self.comb += wmem.row.eq(trow_w)
        move_word = Signal(32)
        raw_lane = Signal(8)
        self.comb += [
            move_word.eq(Mux(src_x, xmem.rd.dat_r, banks.rd.dat_r)),
            raw_lane.eq(x_off + o[:8]),
        ]
        # Data stage: the frame buffer and XMEM deliver a word two cycles after its address (the block RAM's
        # output register), one cycle after the MOVE cycle that accounts for it; MOVE registers what to do
        # with the word, which is written (or fed to the LIL decoder) in that next cycle. The slot's control
        # (row map, spare row, form, counters) stays in MOVE; the last word's write follows in the next slot's
        # W_SLOT (or D_NEXT), a cycle without writes of its own.
        m_we_w, m_we_x, m_lil, m_last = Signal(), Signal(), Signal(), Signal()
        m_adr = Signal(8 + max(pwb, pxb))
        d_we_w, d_we_x, d_lil, d_last = (Signal(name=n) for n in ("d_we_w", "d_we_x", "d_lil", "d_last"))
        d_adr = Signal(8 + max(pwb, pxb))
        self.sync += [
            d_we_w.eq(m_we_w), d_we_x.eq(m_we_x), d_lil.eq(m_lil), d_last.eq(m_last), d_adr.eq(m_adr),
        ]

        # Answers: one word a cycle; words from WMEM are read one cycle before they enter the FIFO.
        # `lanes`: the lane mask of the row being read, WMEM's free-running registered mask read (the mask of
        # the row two cycles back: R_DATA follows R_TAG and R_ROW, so it is the mask of the row it reads);
        # the answer path picks lane `ro` from it.
        lanes = wmem.lanes
        self.answer = answer = AnswerPath(fifo_depth)
        fw = Signal(9)               # words of the answer frame pushed so far
        fw_full = Signal()           # fw = FRAME_WORDS: its top bit (fw never passes FRAME_WORDS)
        assert FRAME_WORDS == 1 << (len(fw) - 1)
        self.comb += fw_full.eq(fw[-1])
        ro = Signal(8)
        self.comb += [
            answer.source.connect(self.source),
            answer.last.eq(fw == FRAME_WORDS - 1),
            answer.wmem_data.eq(wmem.rd.dat_r),
            answer.lanes.eq(lanes), answer.lane.eq(ro),
        ]
        self.sync += If(answer.push, fw.eq(fw + 1))

        # Read plan of one answer frame: a first piece and, if that ends a row, a second one.
        # only R_DATA uses what it reads; wmem.rphys (trow_w's physical row a cycle before) is there: R_DATA comes
        # at least two cycles after trow_w changes (IDLE, R_PLAN, R_HDR; R_TAG, R_ROW)
        self.comb += wmem.rd.adr.eq(Cat(ro, wmem.rphys))
        pc1, pc2, pc, used = Signal(9), Signal(9), Signal(9), Signal(9)
        two, second = Signal(), Signal()
        r_data, r_fire = Signal(name="r_data"), Signal(name="r_fire")
        w_end, r_end = Signal(name="w_end"), Signal(name="r_end")
        # First piece: the rest of the row from `ro`, at most MAX_PIECE_WORDS words, so it ends the row when
        # ro >= ends_at; the room then left for a second piece (after its 2 header words) is
        # PAYLOAD_WORDS - 4 - (ROW_WORDS - ro) = ro - 7 words, so a second piece needs ro >= second_at (and
        # rows left). Compares and subtractions of `ro` with constants only.
        ends_at = ROW_WORDS - MAX_PIECE_WORDS                           # 5
        second_at = ROW_WORDS + SLOT_HEADER_WORDS + 1 - (PAYLOAD_WORDS - SLOT_HEADER_WORDS)     # 8
        a_pc1, a_two = Signal(9), Signal()
        self.comb += [
            a_pc1.eq(Mux(ro >= ends_at, ROW_WORDS - ro, MAX_PIECE_WORDS)),
            a_two.eq((ro >= second_at) & (rleft[1:] != 0)),
        ]

        # LIL slots and LIL rows from XMEM into WMEM physical row `phys`.
        self.lil = lil = LILWriter(wmem)
        self.comb += [
            lil.phys.eq(phys),
            lil.word_valid.eq(d_lil), lil.word.eq(move_word), lil.last.eq(d_last),
            If(d_we_w, wmem.wr.adr.eq(d_adr[:8 + pwb]), wmem.wr.dat_w.eq(move_word), wmem.wr.we.eq(1)),
            If(d_we_x, xmem.wr.adr.eq(d_adr[:8 + pxb]), xmem.wr.dat_w.eq(move_word), xmem.wr.we.eq(1)),
        ]

        # XMEM in block RAM or DRAM: a slot waits for room (x_room), a DMA row until it is there (d_ready; its
        # physical row d_phys and form d_form), d_start starts a DMA job, d_done ends a DMA row.
        x_room, d_ready, d_start, d_done = Signal(), Signal(), Signal(), Signal()
        # x_lx: a LIL slot into XMEM in DRAM writes the physical row that the row entries give from the first MOVE
        # cycle on (read two cycles after W_SLOT; `phys` is not loaded from them in W_PREP)
        x_lx = Signal(name="x_lx")
        if xmem.in_dram:
            self.comb += x_lx.eq(x_tox & ~x_raw)
        d_phys, d_form = Signal(pxb), Signal(FORM_BITS)
        self.fsm = fsm = OneHotFSM(reset_state="IDLE")
        # IDLE loads the read and DMA jobs' registers whether a job is pending or not (timing: their enables
        # are the state's; nothing uses them between jobs)
        is_dma = Signal()
        self.comb += is_dma.eq(banks.job.kind == JOB_DMA)
        fsm.act("IDLE",
            NextValue(trow_w, Mux(is_dma, banks.job.p1, banks.job.p0)), NextValue(trow_x, banks.job.p0),
            NextValue(rleft, Mux(is_dma, banks.job.p2, banks.job.p1)), NextValue(ro, 0), NextValue(r_end, 0),
            NextValue(fw, 0),
            If(banks.pending,
                NextValue(si, 0), NextValue(s_end, banks.job.ns == 0),
                Case(banks.job.kind, {
                    JOB_WRITE_W: NextState("W_SLOT"),
                    JOB_WRITE_X: NextState("W_SLOT"),
                    JOB_READ: NextState("R_PLAN"),
                    JOB_DMA: [d_start.eq(1), NextState("D_ROW")],
                    JOB_STATUS: NextState("S_EMIT"),
                })
            )
        )
        # Write frames: one slot after another.
        fsm.act("W_SLOT",
            If(s_end,
                banks.release.eq(1), NextValue(s_next, 0), NextState("IDLE"),
            ).Else(
                NextValue(s_next, si + 1),
                NextValue(x_raw, slot.raw), NextValue(x_cnt, slot.cnt), NextValue(x_off, slot.off),
                NextValue(x_fin, slot.fin), NextValue(x_inr, slot.inr),
                NextValue(x_tox, banks.job.kind == JOB_WRITE_X),
                NextValue(trow_w, slot.row), NextValue(trow_x, slot.row),
                NextValue(rd_ptr, slot.pay), NextValue(x_nw, slot.nw), NextValue(x_z, slot.nw == 0),
                NextValue(in_dma, 0),
                NextState("W_PREP"),
            )
        )
        next_slot = [NextValue(si, si + 1), NextValue(s_end, si + 1 == banks.job.ns), NextState("W_SLOT")]
        start_move = [
            NextValue(rd_ptr, rd_ptr + 1), NextValue(issue_left, x_nw - 1), NextValue(proc_left, x_nw),
            NextValue(p_last, x_nw == 1),
            NextValue(o, 0), lil.start.eq(1), lil.count.eq(x_cnt),
            NextState("MOVE"),
        ]
        fsm.act("W_PREP",
            banks.rd.adr.eq(Cat(rd_ptr[:8], banks.ebank)),
            If(~x_inr,
                *next_slot,
            ).Elif(x_z,
                If(x_tox,
                    xmem.form.adr.eq(xmem.phys), xmem.form.dat_w.eq(0), xmem.form.we.eq(1),
                ).Else(
                    # an empty lane mask, through the LIL writer (behind the previous slot's mask)
                    NextValue(phys, wmem.phys), lil.start.eq(1), lil.count.eq(0), m_last.eq(1),
                ),
                self.slot_stored.eq(1),
                *next_slot,
            ).Elif(~x_tox | x_room,
                NextValue(src_x, 0),
                NextValue(phys, Mux(x_raw, Mux(x_tox, xmem.free, wmem.free), Mux(x_tox, xmem.phys, wmem.phys))),
                *start_move,
            )
        )
        # Move the words of one slot (or one XMEM row): raw -> row words, LIL -> decoder or copy.
        # A raw row finished in WMEM: its row map entry and its all-ones lane mask are written the cycle after
        # (from registers; the row's number trow_w holds until the cycle after that)
        fin_w, fin_q = Signal(name="fin_w"), Signal(name="fin_q")
        fin_map, fin_free = Signal(pwb), Signal(pwb)
        self.sync += [fin_q.eq(fin_w), fin_map.eq(wmem.free ^ trow_w), fin_free.eq(wmem.free)]
        self.comb += [
            wmem.map.dat_w.eq(fin_map), wmem.map.we.eq(fin_q),
            If(fin_q, wmem.mask_wr.adr.eq(fin_free), wmem.mask_wr.dat_w.eq((1 << ROW_LANES) - 1),
               wmem.mask_wr.we.eq(1)),
        ]
        fsm.act("MOVE",
            If(src_x,
                xmem.rd.adr.eq(Cat(rd_ptr[:8], physx)),
            ).Else(
                banks.rd.adr.eq(Cat(rd_ptr[:8], banks.ebank)),
            ),
            If(issue_left != 0, NextValue(rd_ptr, rd_ptr + 1), NextValue(issue_left, issue_left - 1)),
            NextValue(proc_left, proc_left - 1), NextValue(p_last, proc_left == 2),
            NextValue(o, o + 1),
            m_adr.eq(Cat(Mux(x_raw, raw_lane, o[:8]), Mux(x_lx, xmem.phys, phys))),
            m_we_x.eq(x_tox), m_we_w.eq(~x_tox & x_raw), m_lil.eq(~x_tox & ~x_raw),
            If(p_last,
                m_last.eq(~x_raw & ~x_tox),
                If(x_raw,
                    If(x_fin,
                        If(x_tox,
                            xmem.map.dat_w.eq(xmem.free ^ trow_x), xmem.map.we.eq(1),
                            NextValue(xmem.free, xmem.phys),
                            xmem.form.adr.eq(xmem.free), xmem.form.dat_w.eq(1 << 9), xmem.form.we.eq(1),
                        ).Else(
                            fin_w.eq(1), NextValue(wmem.free, wmem.phys),
                        )
                    )
                ).Elif(x_tox,
                    xmem.form.adr.eq(phys[:pxb]), xmem.form.dat_w.eq(x_cnt), xmem.form.we.eq(1),
                ),
                If(in_dma,
                    NextState("D_NEXT"),
                ).Else(
                    self.slot_stored.eq(1),
                    *next_slot,
                )
            )
        )
        # DMA XMEM -> WMEM, one row after another; LIL rows go through the decoder.
        fsm.act("D_ROW",
            If(rleft == 0,
                banks.release.eq(1), NextState("IDLE"),
            ).Elif(d_ready,
                NextValue(physx, d_phys), NextValue(in_dma, 1), NextValue(src_x, 1), NextValue(x_tox, 0),
                NextState("D_FORM"),
            )
        )
        fsm.act("D_FORM",
            xmem.rd.adr.eq(Cat(C(0, 8), physx)),
            NextValue(rd_ptr, 0),
            NextValue(x_raw, d_form[9]), NextValue(x_fin, 1), NextValue(x_off, 0),
            NextValue(x_cnt, d_form[:9]),
            NextValue(x_nw, Mux(d_form[9], ROW_WORDS, _lil_words(d_form[:9]))),
            NextValue(x_z, ~d_form[9] & (d_form[:9] == 0)),     # (no LIL entries: no words)
            NextValue(phys, Mux(d_form[9], wmem.free, wmem.phys)),
            NextState("D_PREP"),
        )
        fsm.act("D_PREP",
            xmem.rd.adr.eq(Cat(rd_ptr[:8], physx)),
            If(x_z,
                # an empty lane mask, through the LIL writer (phys: the row's own physical row, from D_FORM)
                lil.start.eq(1), lil.count.eq(0), m_last.eq(1),
                NextState("D_NEXT"),
            ).Else(*start_move)
        )
        fsm.act("D_NEXT",
            d_done.eq(1),
            NextValue(trow_x, trow_x + 1), NextValue(trow_w, trow_w + 1), NextValue(rleft, rleft - 1),
            NextState("D_ROW"),
        )
        # Read WMEM: answer frames of raw pieces.
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
                answer.push.eq(1), answer.word.eq(trow_w),
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
                If(r_end, trow_w.eq(trow_w + 1), rleft.eq(rleft - 1)),
                If(two & ~second, second.eq(1), pc.eq(pc2)),
            )
        )
        fsm.act("R_PAD",
            If(fw_full,
                If(rleft == 0, banks.release.eq(1), NextState("IDLE")).Else(NextState("R_PLAN")),
            ).Elif(answer.can_push,
                answer.push.eq(1), answer.word.eq(0),
            )
        )
        # Status: the counters in STATUS_COUNTERS order.
        n_cnt = len(STATUS_COUNTERS)
        status_words = Array([C(CMD_ANSWER_STATUS, 32), C(n_cnt, 32), C(0, 32)] + self.status)
        fsm.act("S_EMIT",
            If(fw_full,
                banks.release.eq(1), self.status_sent.eq(1), NextState("IDLE"),
            ).Elif(answer.can_push,
                answer.push.eq(1),
                answer.word.eq(Mux(fw < HEADER_WORDS + n_cnt, status_words[fw[:4]], 0)),
            )
        )
        # (after the states: fsm.ongoing() would give W_SLOT the first state code)
        if xmem.in_dram:
            # The row entries are block RAMs: a slot's row is looked up from W_SLOT on, for MOVE (x_lx).
            self.comb += [
                xmem.row.eq(Mux(fsm.ongoing("W_SLOT"), slot.row, trow_x)),
                # (can_write is registered: the slot's need a cycle ahead, W_SLOT leads to W_PREP; the state is one
                # flip-flop of the one-hot state register)
                xmem.need.eq(Mux(fsm.ongoing("W_SLOT"), slot.nw, x_nw)), x_room.eq(xmem.can_write),
                xmem.fetch.eq(d_start), xmem.fetch_row.eq(banks.job.p0), xmem.fetch_n.eq(banks.job.p2),
                d_ready.eq(xmem.staged), d_phys.eq(xmem.staged_slot), d_form.eq(xmem.staged_form),
                xmem.release.eq(d_done),
            ]
        else:
            self.comb += [
                xmem.row.eq(trow_x), xmem.form_rd.adr.eq(physx),
                x_room.eq(1), d_ready.eq(1), d_phys.eq(xmem.phys), d_form.eq(xmem.form_rd.dat_r),
            ]


# Receiver ------------------------------------------------------------------------------------------------

class SparsrReceiver(LiteXModule):
    """Card-side receiver of the Sparsr wire format, with WMEM, XMEM and the XMEM->WMEM DMA.

    Parameters: `wmem_rows`, `xmem_rows` (rows of 1024 bytes each memory holds, 1..MAX_ROWS), `fifo_depth`
    of the answer FIFO, `with_csr` (one CSRStatus per counter of `common.COUNTERS`, cores.lib.counters; with
    XMEM in DRAM also `common.DRAM_COUNTERS`), `xmem`: where XMEM keeps its rows, XMEM_BRAM (block RAM) or
    XMEM_DRAM (DRAM through `dram_port`, a LiteDRAM native port (crossbar.get_port()), from byte `xmem_base`;
    cores.sparsr.xmem_dram).

    `sink`: 32-bit words, `last` on the 256th word of each frame (a frame of any other length is refused,
    reason LENGTH). `source`: answer frames (rows read, status), same framing. `counters`: name -> Signal.
    Throughput: one input word per cycle sustained for write frames (a frame commits in at most 255
    cycles while the next one streams in); a read or DMA command holds the input only while it runs. With
    XMEM in DRAM, write frames into XMEM take words as fast as the DRAM takes them once its write FIFO is
    full, and a DMA row costs its fetch from DRAM (docs/sparsr.md, "XMEM in DRAM").
    `idle`: nothing received or in progress (with XMEM in DRAM: no XMEM write left for the DRAM). Latency: a frame's rows are visible at most 262 cycles after
    its last word.
    """
    def __init__(self, wmem_rows=32, xmem_rows=16, fifo_depth=8, with_csr=False, xmem=XMEM_BRAM, dram_port=None,
                 xmem_base=0):
        for name, v in (("wmem_rows", wmem_rows), ("xmem_rows", xmem_rows)):
            if not isinstance(v, int) or not 1 <= v <= MAX_ROWS:
                raise ValueError(f"{name} must be an integer in 1..{MAX_ROWS}, got {v!r}")
        if not isinstance(fifo_depth, int) or fifo_depth < 4:
            raise ValueError(f"fifo_depth must be an integer >= 4, got {fifo_depth!r}")
        if xmem not in XMEM_KINDS:
            raise ValueError(f"xmem must be one of {XMEM_KINDS}, got {xmem!r}")
        if (xmem == XMEM_DRAM) != (dram_port is not None):
            raise ValueError(f"xmem={XMEM_DRAM!r} needs a dram_port (a LiteDRAM port), and xmem={XMEM_BRAM!r} none")
        self.wmem_rows, self.xmem_rows = wmem_rows, xmem_rows
        self.sink = stream.Endpoint(WORD_LAYOUT)
        self.source = stream.Endpoint(WORD_LAYOUT)
        self.idle = Signal()

        # # #

        row_bits = index_bits(max(wmem_rows, xmem_rows))
        self.wmem = wmem = WMEM(wmem_rows, row_bits)
        if dram_port is None:
            self.xmem = xmem = XMEM(xmem_rows, row_bits)
        else:
            from cores.sparsr.xmem_dram import DRAMXMEM      # imports LiteDRAM
            self.xmem = xmem = DRAMXMEM(xmem_rows, row_bits, dram_port, xmem_base)
        self.banks = banks = FrameBanks(row_bits)
        self.parser = parser = SparsrParser(banks, wmem_rows, xmem_rows)
        self.executor = executor = SparsrExecutor(banks, wmem, xmem, fifo_depth)
        # A status answer gives the counters as its frame left them: no later frame is taken (and so
        # accepted, refused or counted) until the answer is out.
        self.comb += parser.status_sent.eq(executor.status_sent)
        # The counters add their events one cycle late, from registers; the verdict's are registered before
        # (vq_*: its logic reaches neither the increments' registers nor the counters); `counting`: a verdict
        # still to be counted (two cycles).
        vq_ok, vq_no = Signal(name="vq_ok"), Signal(name="vq_no")
        vq_reason, vq_rows = Signal(REASON_BITS, name="vq_reason"), Signal(len(parser.rows_refused), name="vq_rows")
        self.sync += [
            vq_ok.eq(parser.accept), vq_no.eq(parser.refuse), vq_reason.eq(parser.reason),
            vq_rows.eq(Mux(parser.accept, parser.rows_refused, 0)),
        ]
        counting = Signal()
        self.sync += counting.eq(vq_ok | vq_no)
        self.comb += [
            self.sink.connect(parser.sink),
            executor.source.connect(self.source),
            self.idle.eq(parser.idle & ~vq_ok & ~vq_no & ~counting & banks.empty &
                         (xmem.idle if xmem.in_dram else 1)),
        ]
        add_counters(self, COUNTERS, {
            "frames_ok": vq_ok,
            **{"refused_" + name: vq_no & (vq_reason == code) for code, name in REASONS.items()},
            "slots_stored": executor.slot_stored,
            "slots_refused_row": vq_rows,
        }, register=True)
        self.comb += [s.eq(self.counters[n]) for s, n in zip(executor.status, STATUS_COUNTERS)]
        if with_csr:
            add_counter_csrs(self, COUNTERS)
            if xmem.in_dram:
                add_counter_csrs(self, DRAM_COUNTERS, xmem.counters)

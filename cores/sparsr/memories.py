"""Sparsr receiver memories: the frame banks the parser fills and the executor drains, and the row memories
WMEM and XMEM (in block RAM; XMEM in DRAM: `cores.sparsr.xmem_dram`).

Rows are stored in physical row slots behind a row map with one spare slot. A raw row's pieces go into the
spare slot and the map is switched when the last piece arrives, so a row changes only when complete, at no copy
cost. WMEM keeps a 256-bit lane mask per physical row: a LIL row writes only its listed lanes and its mask
(lanes not listed read as 0), so clearing a row costs no cycles. XMEM keeps rows as sent: the LIL payload words
verbatim plus a (kind, count) form word, or the raw words.
"""
from migen import *
from migen.genlib.record import Record

from litex.gen import LiteXModule

from cores.lib.block_ram import BlockRAM
from cores.sparsr.common import FRAME_WORDS, MAX_SLOTS, ROW_WORDS, ROW_LANES


def word_ram(depth, tile_rows=None):
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
    the address), `job`, `slot` (registered: the entry `slot_rindex` named in the previous cycle), `release` (the
    bank is free again, the drain side moves on).
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
        self.fbuf, self.wr, self.rd, write, read = word_ram(2 * FRAME_WORDS)
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
        self.values, self.wr, self.rd, write, read = word_ram((rows + 1) * ROW_WORDS, tile_rows)
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

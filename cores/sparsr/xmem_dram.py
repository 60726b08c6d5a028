"""XMEM in DRAM: the Sparsr receiver's XMEM rows in DRAM behind one LiteDRAM native port (docs/sparsr.md,
"XMEM in DRAM").

The row map and the rows' forms stay in block RAM (one entry per row); only the row words move to DRAM, at
the port's native width (LiteDRAM's 32-bit up-converter waits for each wide access to finish before it takes
the next one: about 3.5 cycles a word on a 128-bit DDR3 port, measured). Writes: a FIFO of (word address,
word), a packer that gathers consecutive words of one native word (byte enables for the others) and a native
write stream. Reads (the DMA): a fetcher reads a whole row through a `LiteDRAMDMAReader` into a two-row
staging buffer in block RAM (one memory per 32-bit lane of the native word), which the executor reads one word
a cycle as it reads the block-RAM XMEM. A read command is issued only while no write waits, so the port keeps
every read behind the writes queued before it (LiteDRAM keeps a port's commands to one bank in order).
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from litedram.common import LiteDRAMNativePort
from litedram.frontend.dma import LiteDRAMDMAReader

from cores.lib.block_ram import BlockRAM
from cores.lib.buffers import BlockRAMFIFO
from cores.lib.counters import add_counters
from cores.lib.logic import delayed
from cores.sparsr.common import ROW_WORDS, ROW_BYTES, WORD_BITS, DRAM_COUNTERS
from cores.sparsr.memories import FORM_BITS
from cores.sparsr.words import wide, lil_payload_words

# Rows the staging buffer holds (a power of two): the fetcher issues a row's reads as soon as a slot is free,
# up to STAGE_ROWS - 1 rows ahead of the executor. Measured (64 raw rows, steady state): 2 slots 267.8 cycles a
# row on the SDR model (its read rate: 265.7), 4 slots 265.7; on the DDR3 model 260.0 both (the executor's
# copy, one word a cycle). Before the issue and arrival sides were split, 2 slots cost about 300.
STAGE_ROWS = 2


def native_geometry(port, base):
    """Of the LiteDRAM native port `port`: the words in a native word, their address bits, and the native word
    address of byte `base`."""
    ratio = port.data_width // WORD_BITS
    return ratio, log2_int(ratio), base * 8 // port.data_width


def check_port(port, rows, base):
    """Raise ValueError unless `port` is a LiteDRAM native port (mode "both", a power-of-two multiple of
    WORD_BITS wide, at most a row) that holds rows + 1 rows from byte address `base` (a multiple of
    ROW_BYTES)."""
    if not isinstance(port, LiteDRAMNativePort):
        raise ValueError(f"XMEM in DRAM needs a LiteDRAM native port (crossbar.get_port()), got {port!r}")
    ratio = port.data_width // WORD_BITS
    if port.mode != "both" or port.data_width % WORD_BITS or ratio & (ratio - 1) or ratio > ROW_WORDS:
        raise ValueError(f"XMEM in DRAM needs a port of mode 'both', a power-of-two multiple of {WORD_BITS} bits "
                         f"wide, got mode {port.mode!r}, {port.data_width} bits")
    if not isinstance(base, int) or base < 0 or base % ROW_BYTES:
        raise ValueError(f"xmem_base must be a byte address that is a multiple of {ROW_BYTES}, got {base!r}")
    size = 2**port.address_width * port.data_width // 8
    if base + (rows + 1) * ROW_BYTES > size:
        raise ValueError(f"XMEM of {rows} rows in DRAM needs {(rows + 1) * ROW_BYTES} bytes (a spare row) from "
                         f"{base:#x}, past the end of the port's {size} bytes")


class DRAMXMEM(LiteXModule):
    """XMEM of `rows` rows on the LiteDRAM native port `port` (checked by `check_port`), physical row p at
    byte `base` + p * ROW_BYTES. The executor's side, like `XMEM`'s, with block-RAM latencies:

    * `row` (in): a row number; `phys`: its physical row two cycles later (the map is a BlockRAM read at
      `row`, through its output register). `free`: the spare physical row (a register the executor swaps).
      `map` (`dat_w`, `we`) and `form` (`dat_w`, `we`; `adr` is not used): write the entry of `row` (the
      form is kept per row, not per physical row).
    * `wr` (`adr` = Cat(word, physical row), `dat_w`, `we`): one word into the write FIFO (through a
      register); `need` (in) and `can_write`, a register: the FIFO has room for the `need` of a cycle before,
      with the words that may have come since (two: it may say no two cycles longer than needed); the
      executor waits for room before a slot, then writes one word a cycle.
    * DMA: `fetch` (a pulse, with `fetch_row`, `fetch_n`; taken a cycle later, from registers) fetches rows
      fetch_row.. fetch_row + fetch_n - 1 in order into the slots of the staging buffer (STAGE_ROWS rows),
      round robin. `staged` (the executor's next row is there), `staged_slot`, `staged_form`; `rd` (`adr` =
      Cat(word, slot), `dat_r` two cycles later, as the block-RAM XMEM's): the staging buffer's read port;
      `release` (a pulse): the executor is done with that slot.
    * `idle`: no write queued or in flight to the port, no fetch running.

    Throughput: writes take one word a cycle while the FIFO (`write_depth` words) has room, and leave at up
    to one native word a cycle; the fetcher issues a row's reads at the port's read rate, 3 cycles after
    the previous row's (the DRAM's latency overlaps the rows before), when a slot is free.

    Structure: the row entries (`add_row_entries`), the write path (`add_write_path`), the port's commands
    (the write path's, else the fetcher's reads through a `LiteDRAMDMAReader`) and the fetcher with its
    staging buffer (`add_fetcher`).
    """
    def __init__(self, rows, row_bits, port, base=0, write_depth=512, read_depth=32):
        check_port(port, rows, base)
        self.in_dram = True
        sb = log2_int(STAGE_ROWS)
        self.phys_bits = pb = max(bits_for(rows), sb)      # wide enough to carry a staging slot too
        self.row = Signal(row_bits)
        self.phys = Signal(pb)
        self.free = Signal(pb, reset=rows)
        self.map = Record([("dat_w", pb), ("we", 1)])
        self.form = Record([("adr", pb), ("dat_w", FORM_BITS), ("we", 1)])
        self.wr = Record([("adr", 8 + pb), ("dat_w", WORD_BITS), ("we", 1)])
        self.need = Signal(9)
        self.can_write = Signal()
        self.fetch = Signal()
        self.fetch_row = Signal(row_bits)
        self.fetch_n = Signal(row_bits + 1)
        self.staged = Signal()
        self.staged_slot = Signal(sb)
        self.staged_form = Signal(FORM_BITS)
        self.rd = Record([("adr", 8 + sb), ("dat_r", WORD_BITS)])
        self.release = Signal()
        self.idle = Signal()

        # # #

        ratio = port.data_width // WORD_BITS
        self.add_row_entries(rows, row_bits)
        self.add_write_path(port, base, write_depth)
        # Reads: the fetcher's native reads, issued only while no write waits.
        rport = LiteDRAMNativePort("read", port.address_width, port.data_width)
        self.reader = reader = LiteDRAMDMAReader(rport, fifo_depth=read_depth)
        self.comb += [
            If(self.writing,
                port.cmd.valid.eq(self.wcmd.valid), port.cmd.we.eq(1), port.cmd.addr.eq(self.wcmd.addr),
                self.wcmd.ready.eq(port.cmd.ready),
            ).Else(
                rport.cmd.connect(port.cmd),
            ),
            port.rdata.connect(rport.rdata),
        ]
        self.add_fetcher(row_bits, port, base)
        self.comb += self.idle.eq(~self.writing & ~self.wdata.source.valid & ~self.fetching)
        add_counters(self, DRAM_COUNTERS, {
            "dram_words_written": self.wbuf.source.valid & self.wbuf.source.ready,
            "dram_words_read": Mux(reader.source.valid, ratio, 0),
        })

    def add_row_entries(self, rows, row_bits):
        """The row entries: physical row XOR row number (all-zero reset = identity map) in `xmap`, and the
        row's form in `fform`, two BlockRAMs (read through the DP16KD's output register), each written at
        `row`, so no entry is read, modified and written back. They are read at `ent_adr` (driven by
        `add_fetcher`): `row` (the executor's write jobs) or, for the fetcher (DMA jobs: the two never
        overlap), the job's first row as it starts, then the fetcher's row `r` (r + 1 while it issues a row's
        reads: the next row's entries are read ahead). `ent_a_we`: an entry is written."""
        self.xmap = xmap = BlockRAM(self.phys_bits, max(rows, 2))
        self.fform = fform = BlockRAM(FORM_BITS, max(rows, 2))
        self.ent_a_we = Signal()
        self.ent_adr = ent_adr = Signal(row_bits)
        self.comb += [
            self.ent_a_we.eq(self.map.we | self.form.we),
            [m.adr_r.eq(ent_adr) for m in (xmap, fform)],
            self.phys.eq(xmap.dat_r ^ delayed(self, self.row, BlockRAM.LATENCY)),
            [m.adr_w.eq(self.row) for m in (xmap, fform)],
            xmap.we.eq(self.map.we), xmap.dat_w.eq(self.map.dat_w),
            fform.we.eq(self.form.we), fform.dat_w.eq(self.form.dat_w),
        ]

    def add_write_path(self, port, base, write_depth):
        """Writes: FIFO -> packer (one native word, its byte enables) -> command (`wcmd`: valid, ready, addr),
        then data when the controller asks for it. `writing`: a write is queued (a register: a cycle longer
        than needed; the executor's word counts as it enters the input register).

        The FIFO is a BlockRAMFIFO (its block RAM read through the DP16KD's output register, then a small
        LUT-RAM FIFO), and each word carries `cont`: its native word is the previous word's (compared as it
        enters), so the packer's "same native word" is p_valid & cont, with no address compare behind the
        FIFO's output."""
        ratio, lb, base_native = native_geometry(port, base)
        aw = port.address_width
        self.wfifo = wfifo = BlockRAMFIFO([("address", aw + lb), ("data", WORD_BITS), ("cont", 1)], write_depth)
        # The executor's words are registered first (timing: they come from block RAM output registers).
        wq = Record(self.wr.layout, name="wq")
        self.sync += wq.eq(self.wr)
        last_adr = Signal(aw, reset=2**aw - 1)
        queued = Signal(max=write_depth + 6)       # words in the FIFO and its input register
        room = Signal(max=write_depth)
        in_adr = Signal(aw + lb)
        self.comb += [
            in_adr.eq(base_native * ratio + wq.adr),
            wfifo.sink.valid.eq(wq.we),
            wfifo.sink.address.eq(in_adr),
            wfifo.sink.data.eq(wq.dat_w),
            wfifo.sink.cont.eq(in_adr[lb:] == last_adr),
            queued.eq(wfifo.level + wq.we),
        ]
        self.sync += [
            If(wq.we, last_adr.eq(in_adr[lb:])),
            # the room a cycle before, less the word that may have come since, then `can_write` from it, less
            # the word that may have come in the cycle after (timing: registers, one compare apart)
            room.eq(Mux(queued < write_depth - 1, write_depth - 2 - queued, 0)),
            self.can_write.eq(self.need <= room),
        ]
        # the FIFO's words reach the packer through registers (timing: not from the output FIFO's LUT RAM read)
        self.wbuf = wbuf = stream.PipeValid(wfifo.source.description)
        self.comb += wfifo.source.connect(wbuf.sink)
        w = wbuf.source
        self.wcmd = wcmd = Record([("valid", 1), ("ready", 1), ("addr", aw)])       # addr: the packer's
        p_valid = Signal()
        p_data, p_we = Signal(port.data_width, name="p_data"), Signal(port.data_width // 8, name="p_we")
        w_addr, w_lane = Signal(aw, name="w_addr"), Signal(max(lb, 1), name="w_lane")
        same, emit, emitted = Signal(name="same"), Signal(name="emit"), Signal(name="emitted")
        self.wdata = wdata = stream.SyncFIFO([("data", port.data_width), ("we", port.data_width // 8)], 16)
        self.comb += [
            w_addr.eq(w.address[lb:]),
            w_lane.eq(w.address[:lb] if lb else 0),
            same.eq(p_valid & w.cont),
            emit.eq(p_valid & ~(w.valid & same)),
            wcmd.valid.eq(emit & wdata.sink.ready),
            emitted.eq(wcmd.valid & wcmd.ready),
            w.ready.eq(~p_valid | same | emitted),
            wdata.sink.valid.eq(emitted),
            wdata.sink.data.eq(p_data), wdata.sink.we.eq(p_we),
            wdata.source.connect(port.wdata, omit={"first", "last"}),
        ]
        lanes = [(w_lane == i) for i in range(ratio)]
        wb = WORD_BITS // 8
        self.sync += [
            If(w.valid & w.ready,
                p_valid.eq(1), wcmd.addr.eq(w_addr),
                *[If(lanes[i], p_data[WORD_BITS * i:WORD_BITS * (i + 1)].eq(w.data)) for i in range(ratio)],
                p_we.eq(Cat(*[Replicate(lanes[i] | (same & p_we[wb * i]), wb) for i in range(ratio)])),
            ).Elif(emitted,
                p_valid.eq(0),
            ),
        ]
        self.writing = writing = Signal()
        self.sync += writing.eq(self.wr.we | wq.we | (wfifo.level != 0) | w.valid | p_valid)

    def add_fetcher(self, row_bits, port, base):
        """Fetcher: rows one after the other into the staging slots, round robin. The issue side (an FSM) looks
        a row up and issues its reads once its slot is free (so the next row's reads follow the last ones of a
        row); the arrival side fills the slots in the same order, native word k of a row into entry k of every
        lane memory (lane i holds the row's words k * ratio + i). An empty row still reads one native word.
        `fetching`: a fetch is under way. (BlockRAMs: the executor's words leave through the DP16KD's output
        registers, then the lane select.)"""
        ratio, lb, base_native = native_geometry(port, base)
        sb = log2_int(STAGE_ROWS)
        reader, xmap, fform = self.reader, self.xmap, self.fform
        self.fsm = fsm = FSM(reset_state="IDLE")
        self.fetching = fetching = Signal()
        stage = [BlockRAM(WORD_BITS, STAGE_ROWS * ROW_WORDS // ratio) for i in range(ratio)]
        self.submodules += stage
        r = Signal(row_bits)
        left = Signal(row_bits + 1)
        # issue, arrival and executor slots
        islot, aslot, eslot = Signal(sb, name="islot"), Signal(sb, name="aslot"), Signal(sb, name="eslot")
        busy = Array(Signal(name=f"stage_busy{i}") for i in range(STAGE_ROWS))     # issued into, not released
        full = Array(Signal(name=f"staged{i}") for i in range(STAGE_ROWS))         # every word arrived
        forms = Array(Signal(FORM_BITS, name=f"stage_form{i}") for i in range(STAGE_ROWS))
        # a slot's native words less one (its last word's index: no subtraction before the arrival compare)
        nns = Array(Signal(9, name=f"stage_nn{i}") for i in range(STAGE_ROWS))
        f_phys, f_nn = Signal(self.phys_bits, name="f_phys"), Signal(9, name="f_nn")
        f_adr = Signal(row_bits)        # the fetcher's entry address: r, r + 1 from ISSUE on (a register)
        f_active = Signal()             # the fetcher is not idle: it owns the entries' read address
        issued, arrived = Signal(9, name="issued"), Signal(9, name="arrived")
        i_end = Signal(name="i_end")        # issued = f_nn, a register moving with issued
        claim, last_word = Signal(name="claim"), Signal(name="last_word")
        # the entry's payload words (a register: no carry chain after the RAM), then its native words
        nw_q, nn_q = Signal(9, name="nw_q"), Signal(9, name="nn_q")
        self.sync += [
            nw_q.eq(Mux(fform.dat_r[9], ROW_WORDS, lil_payload_words(fform.dat_r[:9]))),
            nn_q.eq(Mux(nw_q == 0, 1, (wide(nw_q, 1) + ratio - 1) >> lb)),
        ]
        # the job's start and parameters registered (the executor's job decode reaches no fetcher register)
        fetch_q, fetch_row_q = Signal(name="fetch_q"), Signal(row_bits, name="fetch_row_q")
        fetch_n_q = Signal(row_bits + 1)
        self.sync += [fetch_q.eq(self.fetch), fetch_row_q.eq(self.fetch_row), fetch_n_q.eq(self.fetch_n)]
        self.comb += [
            reader.sink.address.eq(base_native + Cat(issued[:8 - lb], f_phys)),
            reader.sink.last.eq(issued == f_nn - 1),
            reader.source.ready.eq(1),
            [m.adr_w.eq(Cat(arrived[:8 - lb], aslot)) for m in stage],
            [m.dat_w.eq(reader.source.data[WORD_BITS * i:WORD_BITS * (i + 1)]) for i, m in enumerate(stage)],
            [m.we.eq(reader.source.valid) for m in stage],
            last_word.eq(reader.source.valid & (arrived == nns[aslot])),
            f_active.eq(~fsm.ongoing("IDLE")),
            self.ent_adr.eq(Mux(f_active, f_adr, Mux(fetch_q, fetch_row_q, self.row))),
            fetching.eq(fetch_q | f_active | (busy[aslot] & ~full[aslot])),
        ]
        fsm.act("IDLE",
            If(fetch_q, NextValue(r, fetch_row_q), NextValue(f_adr, fetch_row_q), NextValue(left, fetch_n_q),
               NextState("LOOK")),
        )
        # The entry of `r` is read from the cycle before LOOK on (IDLE: the job's first row), or ahead, while the
        # row before issues its reads (ISSUE, at least two cycles: f_adr = r + 1), which then go on at LOOK2: its
        # data is there in LOOK2, its words counted in LOOK2 (nw_q) and LOOK3 (nn_q).
        fsm.act("LOOK", NextState("LOOK2"))
        fsm.act("LOOK2", NextState("LOOK3"))
        fsm.act("LOOK3", NextState("ENTRY"))
        fsm.act("ENTRY",
            NextValue(f_phys, xmap.dat_r ^ r), NextValue(f_nn, nn_q), NextValue(issued, 0), NextValue(i_end, 0),
            If(~busy[islot], claim.eq(1), NextValue(f_adr, r + 1), NextState("ISSUE")),
        )
        fsm.act("ISSUE",
            reader.sink.valid.eq(~self.writing & ~i_end),
            If(reader.sink.valid & reader.sink.ready,
                NextValue(issued, issued + 1), NextValue(i_end, issued + 1 == f_nn),
            ),
            If(i_end,
                NextValue(islot, islot + 1), NextValue(r, r + 1), NextValue(left, left - 1),
                If(left == 1, NextState("IDLE")).Else(NextState("LOOK2")),
            ),
        )
        self.comb += [
            self.staged.eq(full[eslot]), self.staged_slot.eq(eslot), self.staged_form.eq(forms[eslot]),
            [m.adr_r.eq(Cat(self.rd.adr[lb:8], self.rd.adr[8:])) for m in stage],
            # the lane kept beside the read data: as XMEM's block RAM, 2 cycles
            self.rd.dat_r.eq(Array(m.dat_r for m in stage)[delayed(self, self.rd.adr[:lb] if lb else C(0, 1),
                                                                   BlockRAM.LATENCY)]),
        ]
        self.sync += [
            If(claim, busy[islot].eq(1), forms[islot].eq(fform.dat_r), nns[islot].eq(nn_q - 1)),
            If(reader.source.valid, arrived.eq(arrived + 1)),
            If(last_word, full[aslot].eq(1), aslot.eq(aslot + 1), arrived.eq(0)),
            If(self.release, busy[eslot].eq(0), full[eslot].eq(0), eslot.eq(eslot + 1)),
        ]

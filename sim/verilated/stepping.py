"""Modules stepped in Verilator from Python, on generic C++ harnesses.

* `CycleSim` steps any module one cycle at a time (one pipe round trip per cycle).
* `run_vectors` applies one input vector per cycle from a numpy array and returns the outputs of each cycle.
"""
import os
import subprocess
import time

import numpy as np

from sim.verilated.build import Model, VerilatorError
from sim.verilated.verilog import flat_ports


_CYCLE_HARNESS = r"""
#include "V%(top)s.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>

int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    V%(top)s *top = new V%(top)s;
    top->rst = 1;
    for (int i = 0; i < 4; i++) { top->clk = 0; top->eval(); top->clk = 1; top->eval(); }
    top->rst = 0;
    static char line[1 << 16];
    while (fgets(line, sizeof line, stdin)) {
        char *p = line;
%(set_in)s
        top->clk = 0; top->eval();
        printf("%(fmt)s\n", %(vals)s);
        fflush(stdout);
        top->clk = 1; top->eval();
    }
    delete top;
    return 0;
}
"""


class CycleSim:
    """Any module in Verilator, stepped one clock cycle at a time from Python (for host models that react
    every cycle, e.g. a PCIe link at TLP level). `ports` maps a port name to (signal, is_input); signals up
    to 64 bits. `step(**inputs) -> outputs`: sets the inputs (others keep their last value, 0 at first),
    lets the logic settle, returns every output as seen before the clock edge, then clocks. A few ten
    thousand cycles per second (one pipe round trip per cycle). quick_build: Model's (short runs)."""
    def __init__(self, module, ports, name="cyclesim", quick_build=False):
        if any(len(sig) > 64 for sig, _ in ports.values()):
            raise ValueError("CycleSim ports are at most 64 bits")
        self.inputs = [n for n, (_, i) in ports.items() if i]
        self.outputs = [n for n, (_, i) in ports.items() if not i]
        harness = _CYCLE_HARNESS % dict(
            top=name, set_in="\n".join(f"        top->{n} = strtoull(p, &p, 16);" for n in self.inputs),
            fmt=" ".join(["%llx"] * len(self.outputs)),
            vals=", ".join(f"(unsigned long long)top->{n}" for n in self.outputs))
        self.model = Model(name, {f"{name}.v": flat_ports(module, ports, name)}, name, harness,
                           quick_build=quick_build)
        self.proc = None
        self.restart()

    def restart(self):
        """A new run of the model from reset (every input 0, cycle 0)."""
        if self.proc is not None:
            self.close()
        self.proc = self.model.popen(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.values = dict.fromkeys(self.inputs, 0)
        self.cycle = 0

    def step(self, **inputs):
        self.values.update(inputs)
        self.proc.stdin.write(" ".join(f"{self.values[n]:x}" for n in self.inputs) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise VerilatorError("the Verilated model stopped")
        self.cycle += 1
        return dict(zip(self.outputs, (int(v, 16) for v in line.split())))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


_VECTOR_HARNESS = r"""
#include <cstdio>
#include <cstdint>
#include "V%(top)s.h"
#include "verilated.h"
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    V%(top)s *top = new V%(top)s;
    FILE *fi = fopen(argv[1], "rb"), *fo = fopen(argv[2], "wb");
    if (!fi || !fo) return 2;
    const int NI = %(ni)d, NO = %(no)d;
    uint64_t in[NI > 0 ? NI : 1], out[NO];
    top->rst = 1; top->clk = 0; top->eval(); top->clk = 1; top->eval(); top->clk = 0; top->eval(); top->rst = 0;
    while (fread(in, 8, NI, fi) == (size_t)NI) {
%(set)s
        top->clk = 0;
        top->eval();
%(get)s
        fwrite(out, 8, NO, fo);
        top->clk = 1;
        top->eval();
    }
    fclose(fi); fclose(fo);
    delete top;
    return 0;
}
"""


def run_vectors(module, inputs, outputs, vectors, name):
    """Apply `vectors[c]` (a numpy array of shape (cycles, len(inputs))) to the signals `inputs` in cycle c;
    returns the (cycles, len(outputs)) uint64 samples of `outputs`, taken before each clock edge. Signals
    are at most 64 bits wide."""
    for s in list(inputs) + list(outputs):
        if len(s) > 64:
            raise ValueError(f"signal {s} is wider than 64 bits")
    ports = {f"i{k}": (s, True) for k, s in enumerate(inputs)}
    ports.update({f"o{k}": (s, False) for k, s in enumerate(outputs)})
    harness = _VECTOR_HARNESS % dict(
        top="vectors", ni=len(inputs), no=len(outputs),
        set="\n".join(f"        top->i{k} = in[{k}];" for k in range(len(inputs))),
        get="\n".join(f"        out[{k}] = top->o{k};" for k in range(len(outputs))))
    model = Model(name, {"vectors.v": flat_ports(module, ports, "vectors")}, "vectors", harness)
    tag = f"{os.getpid()}_{time.monotonic_ns()}"
    fin, fout = os.path.join(model.dir, f"in_{tag}.bin"), os.path.join(model.dir, f"out_{tag}.bin")
    np.ascontiguousarray(vectors, dtype=np.uint64).tofile(fin)
    try:
        model.run([fin, fout])
        return np.fromfile(fout, dtype=np.uint64).reshape(-1, len(outputs))
    finally:
        for p in (fin, fout):
            if os.path.exists(p):
                os.remove(p)


"""The RIFL SoC block (cores/rifl/soc_block.py RIFLLoopback) as a Verilated model on sim.verilated, for the
benchmark's error-rate points.

    model = loopback(frame_bits=256, latency=59)           # built once, cached by sim.verilated
    counts = run_point(model, cycles=400_000, threshold=thr)

Ports: the block's CSR storages (control, err_ab, err_ba, limit, rx_ready) as inputs, every counter of
LOOPBACK_COUNTERS as an output of that name. A point: reset, generators on (1-bit error bursts) with
per-frame error threshold `threshold` both ways, WARM_CYCLES cycles, `cycles` measured cycles, then the
generators off and no errors for DRAIN_CYCLES cycles. It returns every counter at the end and `frames`: the
numbered frames both endpoints accepted during the measured cycles.
"""
from cores.rifl.common import LOOPBACK_CONTROL, LOOPBACK_COUNTERS
from cores.rifl.soc_block import RIFLLoopback
from sim.verilated import Model, flat_ports

INPUTS = ("control", "err_ab", "err_ba", "limit", "rx_ready")
WARM_CYCLES = 2000
DRAIN_CYCLES = 20000

HARNESS = r"""
#include "Vrifl_loopback.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    unsigned long long cycles = strtoull(argv[1], 0, 10);
    unsigned thr = strtoul(argv[2], 0, 10);
    Vrifl_loopback *t = new Vrifl_loopback;
    t->rst = 1; t->clk = 0; t->eval(); t->clk = 1; t->eval(); t->clk = 0; t->rst = 0;
    t->control = %(control_on)d; t->err_ab = thr; t->err_ba = thr; t->limit = 0; t->rx_ready = 0;
    unsigned long long a0 = 0, b0 = 0, warm = %(warm)d;
    for (unsigned long long c = 0; c < cycles + warm; c++) {
        if (c == warm) { a0 = t->a_rx_frames; b0 = t->b_rx_frames; }
        t->clk = 1; t->eval(); t->clk = 0; t->eval();
    }
    unsigned long long a1 = t->a_rx_frames, b1 = t->b_rx_frames;
    t->control = %(control_off)d; t->err_ab = 0; t->err_ba = 0;   // drain
    for (int c = 0; c < %(drain)d; c++) { t->clk = 1; t->eval(); t->clk = 0; t->eval(); }
    printf("frames %%llu\n", (unsigned long long)((a1 - a0) & 0xffffffffULL) + ((b1 - b0) & 0xffffffffULL));
%(prints)s
    delete t;
    return 0;
}
"""


def loopback(frame_bits, latency):
    """The Verilated model of RIFLLoopback(frame_bits, latency)."""
    dut = RIFLLoopback(frame_bits, latency)
    ports = {name: (getattr(dut, name).storage, True) for name in INPUTS}
    ports.update({name: (dut.counters[name], False) for name, _ in LOOPBACK_COUNTERS})
    prints = "\n".join(f'    printf("{name} %u\\n", (unsigned)t->{name});' for name, _ in LOOPBACK_COUNTERS)
    harness = HARNESS % dict(warm=WARM_CYCLES, drain=DRAIN_CYCLES, prints=prints,
                             control_on=LOOPBACK_CONTROL.pack(enable=1, burst=1),
                             control_off=LOOPBACK_CONTROL.pack(burst=1))
    return Model(f"rifl_loopback_F{frame_bits}_L{latency}",
                 {"rifl_loopback.v": flat_ports(dut, ports, "rifl_loopback")}, "rifl_loopback", harness)


def run_point(model, cycles, threshold):
    """One error-rate point (see the module docstring): {counter name: value, "frames": frames accepted}."""
    out = model.run([cycles, threshold])
    return {k: int(v) for k, v in (line.split() for line in out.strip().splitlines())}

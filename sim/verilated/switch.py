"""Verilated models of the switch on sim.verilated.

* `scheduler(n, iterations)`: the RTL iSLIP scheduler (cores.switch.islip.ISLIPScheduler) inside a C++ harness
  that owns unbounded VOQs. `run_scheduler(model, trace, horizon)` plays a trace of
  software.switch.traffic through it at cell-time granularity: every cell time the harness moves the
  trace's arrivals into the VOQs, presents the N^2 request bits, pulses `start`, clocks the RTL until
  `done` (2k + 1 cycles) and serves the matched VOQ heads. It returns the departure cell time of every
  cell, as the models of software.switch.reference do.
* `PackedNetwork` / `run_network(n, codes)`: the Batcher-Banyan network with every input's (valid, dst) in
  one packed word and each input's index as its payload, one code a cycle (sim.verilated.run_vectors).
"""
import os
import tempfile

import numpy as np
from migen import Signal

from litex.gen import LiteXModule

from cores.lib.logic import index_bits
from cores.switch.batcher_banyan import BatcherBanyan
from cores.switch.islip import ISLIPScheduler
from sim.verilated.build import Model
from sim.verilated.stepping import run_vectors
from sim.verilated.verilog import flat_ports

# Stimulus: the trace as int32 triples (arrival cell time, src, dst) in arrival order; argv: horizon (cell
# times), trace file, departures file (int64 a cell, -1 if not served); stdout: "<errors> <cycles>", errors =
# matches of an empty VOQ (never, for a correct scheduler), cycles = clock cycles simulated.
SCHEDULER_HARNESS = r"""
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <vector>
#include "Vsched.h"
#include "verilated.h"

template <typename T> static void set_words(T &port, const uint32_t *w) { port = (T)(w[0] | ((uint64_t)w[1] << 32)); }
template <std::size_t W> static void set_words(VlWide<W> &port, const uint32_t *w) { for (std::size_t i = 0; i < W; i++) port[i] = w[i]; }
template <typename T> static void get_words(const T &port, uint32_t *w) { uint64_t v = port; w[0] = (uint32_t)v; w[1] = (uint32_t)(v >> 32); }
template <std::size_t W> static void get_words(const VlWide<W> &port, uint32_t *w) { for (std::size_t i = 0; i < W; i++) w[i] = port[i]; }
static unsigned bits(const uint32_t *w, int pos, int width) {
    unsigned v = 0;
    for (int b = 0; b < width; b++) v |= ((w[(pos + b) / 32] >> ((pos + b) %% 32)) & 1u) << b;
    return v;
}

int main(int argc, char **argv) {
    const int N = %(n)d, LOGN = %(logn)d;
    long horizon = atol(argv[1]);
    FILE *f = fopen(argv[2], "rb");
    std::vector<int32_t> tr;
    int32_t buf[3];
    while (fread(buf, 4, 3, f) == 3) tr.insert(tr.end(), buf, buf + 3);
    fclose(f);
    long total = tr.size() / 3, nxt = 0, queued = 0, errors = 0, cycles = 0;
    std::vector<int64_t> dep(total, -1);
    std::vector<std::deque<long>> voq(N * N);
    Vsched *top = new Vsched;
    top->rst = 1; top->clk = 0; top->eval(); top->clk = 1; top->eval(); top->clk = 0; top->eval();
    top->rst = 0;
    uint32_t req[(N * N + 31) / 32 + 2], match[(N * LOGN + 31) / 32 + 2], valid[2];
    for (long t = 0; t < horizon; t++) {
        while (nxt < total && tr[3 * nxt] <= t) { voq[tr[3 * nxt + 1] * N + tr[3 * nxt + 2]].push_back(nxt); nxt++; queued++; }
        if (nxt == total && queued == 0) break;
        for (auto &w : req) w = 0;
        for (int q = 0; q < N * N; q++) if (!voq[q].empty()) req[q / 32] |= 1u << (q %% 32);
        set_words(top->req, req);
        top->start = 1;
        int guard = 0;
        do {
            top->clk = 1; top->eval(); top->clk = 0; top->eval(); cycles++;
            top->start = 0;
            top->eval();
        } while (!top->done && ++guard < 1000);
        get_words(top->match, match);
        get_words(top->valid, valid);
        for (int i = 0; i < N; i++) {
            if (!bits(valid, i, 1)) continue;
            int j = bits(match, i * LOGN, LOGN);
            if (voq[i * N + j].empty()) { errors++; continue; }
            dep[voq[i * N + j].front()] = t;
            voq[i * N + j].pop_front();
            queued--;
        }
    }
    FILE *o = fopen(argv[3], "wb");
    fwrite(dep.data(), 8, total, o);
    fclose(o);
    printf("%%ld %%ld\n", errors, cycles);
    delete top;
    return 0;
}
"""


def scheduler(n, iterations, build=True):
    """The Verilated model of ISLIPScheduler(n, iterations) in the VOQ harness (built once, then cached;
    build=False: its digest only)."""
    dut = ISLIPScheduler(n, iterations)
    ports = {"req": (dut.req, True), "start": (dut.start, True), "done": (dut.done, False),
             "valid": (dut.match_valid, False), "match": (dut.match_flat, False)}
    harness = SCHEDULER_HARNESS % dict(n=n, logn=index_bits(n))
    return Model(f"switch_islip_n{n}_k{iterations}", {"sched.v": flat_ports(dut, ports, "sched")}, "sched", harness,
                 build=build)


def run_scheduler(model, trace, horizon):
    """Departure cell time of every cell of `trace` through the scheduler `model` within `horizon` cell times;
    returns (departures, clock cycles simulated)."""
    with tempfile.TemporaryDirectory(dir=model.dir) as tmp:
        tin, tout = os.path.join(tmp, "trace.bin"), os.path.join(tmp, "dep.bin")
        np.stack([trace["time"], trace["src"], trace["dst"]], axis=1).astype(np.int32).tofile(tin)
        errors, cycles = (int(x) for x in model.run([horizon, tin, tout]).split())
        dep = np.fromfile(tout, dtype=np.int64)
    if errors:
        raise RuntimeError(f"RTL scheduler matched {errors} empty VOQs")
    return dep, cycles


class PackedNetwork(LiteXModule):
    """BatcherBanyan(n, log2 n) with packed ports: input i's (valid, dst) is bit field i of `vin` (1 + log2 n
    bits, valid lowest), its payload is i; `vout` packs every output's (valid, payload) the same way."""
    def __init__(self, n):
        w = index_bits(n)
        self.net = net = BatcherBanyan(n, w, pipeline=True)
        self.vin = Signal(n * (1 + w))
        self.vout = Signal(n * (1 + w))
        self.collisions = net.collisions

        # # #

        for i in range(n):
            base = i * (1 + w)
            self.comb += [net.in_valid[i].eq(self.vin[base]), net.in_dst[i].eq(self.vin[base + 1:base + 1 + w]),
                          net.in_data[i].eq(i),
                          self.vout[base].eq(net.out_valid[i]), self.vout[base + 1:base + 1 + w].eq(net.out_data[i])]


def run_network(n, codes):
    """Apply the packed input words `codes` (uint64) one a cycle, then idle cycles until the last has crossed;
    returns (`vout` of each code, the collision count at the end)."""
    dut = PackedNetwork(n)
    lat = dut.net.latency
    vectors = np.concatenate([np.asarray(codes, dtype=np.uint64), np.zeros(lat + 1, dtype=np.uint64)])[:, None]
    out = run_vectors(dut, [dut.vin], [dut.vout, dut.collisions], vectors, f"switch_network_n{n}")
    return out[lat:lat + len(codes), 0], int(out[-1, 1])

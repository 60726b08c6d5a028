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
import os
import threading

from migen import Array, Case, Cat, ClockDomain, ClockDomainsRenamer, If, Signal, log2_int

from litex.gen import LiteXModule

from cores.rifl.common import (CC_INTERVAL_FRAMES, ELASTIC_DEPTH, EP_COUNTERS, LOOPBACK_CONTROL, LOOPBACK_COUNTERS,
                               LOOPBACK_DIRECTIONS, LOOPBACK_ENDPOINTS, LOOPBACK_EP_COUNTERS)
from cores.rifl.elastic import RIFLElasticBuffer
from cores.rifl.link import RIFLEndpoint
from cores.rifl.serdes import RIFLSerDesLink
from cores.rifl.soc_block import RIFLLoopback, TrafficChecker, TrafficGenerator
from sim.verilated.build import Model
from sim.verilated.verilog import convert, flat_ports

INPUTS = ("control", "err_ab", "err_ba", "limit", "rx_ready")
WARM_CYCLES = 2000
DRAIN_CYCLES = 20000

HARNESS = r"""
#include "Vrifl_loopback.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
#define PROGRESS_MASK ((1ULL << 20) - 1)
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
        if (!(c & PROGRESS_MASK)) fprintf(stderr, "progress %%llu %%llu\n", c, cycles + warm);
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


def loopback(frame_bits, latency, build=True):
    """The Verilated model of RIFLLoopback(frame_bits, latency) (build=False: its digest only)."""
    dut = RIFLLoopback(frame_bits, latency)
    ports = {name: (getattr(dut, name).storage, True) for name in INPUTS}
    ports.update({name: (dut.counters[name], False) for name, _ in LOOPBACK_COUNTERS})
    prints = "\n".join(f'    printf("{name} %u\\n", (unsigned)t->{name});' for name, _ in LOOPBACK_COUNTERS)
    harness = HARNESS % dict(warm=WARM_CYCLES, drain=DRAIN_CYCLES, prints=prints,
                             control_on=LOOPBACK_CONTROL.pack(enable=1, burst=1),
                             control_off=LOOPBACK_CONTROL.pack(burst=1))
    return Model(f"rifl_loopback_F{frame_bits}_L{latency}",
                 {"rifl_loopback.v": flat_ports(dut, ports, "rifl_loopback")}, "rifl_loopback", harness, build=build)


def run_point(model, cycles, threshold, progress=None):
    """One error-rate point (see the module docstring): {counter name: value, "frames": frames accepted}.
    progress(done, total): called every 2^20 cycles (Model.run)."""
    out = model.run([cycles, threshold], progress=progress)
    return {k: int(v) for k, v in (line.split() for line in out.strip().splitlines())}


NET_HARNESS = r"""
#include "Vrifl_net_block.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    unsigned long long cycles = strtoull(argv[1], 0, 10), drain = strtoull(argv[2], 0, 10);
    unsigned thr[4];
    for (int k = 0; k < 4; k++) thr[k] = strtoul(argv[3 + k], 0, 10);
    int force_ch = atoi(argv[7]);
    unsigned long long force_at = strtoull(argv[8], 0, 10);
    Vrifl_net_block *t = new Vrifl_net_block;
    t->rst = 1; t->clk = 0; t->eval(); t->clk = 1; t->eval(); t->clk = 0; t->rst = 0;
%(set_bers)s
    t->control = %(control_on)d; t->limit = 0; t->down = 0; t->force_bits = 0; t->force_re = 0;
    for (unsigned long long c = 0; c < cycles + drain; c++) {
        if (c == cycles) { t->control = %(control_off)d; }
        t->force_re = force_ch >= 0 && c == force_at;
        t->force_bits = force_ch >= 0 ? (1u << force_ch) : 0;
        t->clk = 1; t->eval(); t->clk = 0; t->eval();
    }
%(prints)s
    delete t;
    return 0;
}
"""


def net_block(n=4, frame_bits=64, data_width=64, latency=8, build=True, quick_build=False):
    """The Verilated model of RIFLNetBlock: run `net_point(model, cycles, drain, thresholds, force=(c, at))`
    (build=False: its digest only; quick_build: sim.verilated's cheaper C++ build, for runs of ~10^5 cycles)."""
    from cores.rifl.common import CHANNEL_RANDOM_MAX_BITS
    from cores.rifl_net.common import NET_CONTROL
    from cores.rifl_net.soc_block import RIFLNetBlock
    dut = RIFLNetBlock(n, frame_bits, data_width, latency)
    ports = {"control": (dut.control.storage, True), "limit": (dut.limit.storage, True),
             "down": (dut.down.storage, True), "force_bits": (dut.force.storage, True), "force_re": (dut.force.re, True),
             "status": (dut.status.status, False)}
    for k, ber in enumerate(dut.bers):
        ports[f"ber{k}"] = (ber.storage, True)
    ports.update({name: (sig, False) for name, sig in dut.counters.items()})
    set_bers = "\n".join(f"    for (int w = 0; w < {CHANNEL_RANDOM_MAX_BITS}; w++) t->ber{k}[w] = thr[w];"
                         for k in range(len(dut.bers)))
    prints = "\n".join(f'    printf("{name} %u\\n", (unsigned)t->{name});' for name in ["status", *dut.counters])
    harness = NET_HARNESS % dict(set_bers=set_bers, prints=prints,
                                 control_on=NET_CONTROL.pack(enable=1, random=1), control_off=NET_CONTROL.pack(random=1))
    return Model(f"rifl_net_block_n{n}_F{frame_bits}", {"rifl_net_block.v": flat_ports(dut, ports, "rifl_net_block")},
                 "rifl_net_block", harness, build=build, quick_build=quick_build)


def net_point(model, cycles, drain, thresholds, force=None):
    """Generators on for `cycles` cycles (independent bit errors with `thresholds` on every channel all along),
    then `drain` cycles off; `force` = (channel, cycle): that channel's next data frame gets the codeword.
    Returns every counter and `status`."""
    ch, at = force if force else (-1, 0)
    out = model.run([cycles, drain, *thresholds, ch, at])
    return {k: int(v) for k, v in (line.split() for line in out.strip().splitlines())}


# Two ends on separate oscillators -----------------------------------------------------------------------------

class RIFLTwoClockLink(LiteXModule):
    """Endpoints A (clock domain a) and B (clock domain b) on separate clocks, a TrafficGenerator and a
    TrafficChecker per direction, always on. Frame lines (serdes=False): each line reaches the far end
    through a RIFLElasticBuffer written in the sender's clock. SERDES (serdes=True): each end is a
    RIFLSerDesLink(elastic=True) on 2-byte 8b/10b words, its receive side in the sender's clock; the A->B
    words arrive shifted by one byte lane (commas split across words). cc_interval: the endpoints' (frame
    lines only; None: IDLEs only when idle, which a saturated link never is). Counters `counters[name]`:
    <dir>_<name> (generator, checker), <dir>_<removed|inserted|slips> (the receiving end's buffer) and
    <ep>_<name> (LOOPBACK_EP_COUNTERS, link_up)."""
    def __init__(self, frame_bits=64, cc_interval=CC_INTERVAL_FRAMES, serdes=False):
        self.cd_a, self.cd_b = ClockDomain("a"), ClockDomain("b")
        self.counters = {}
        # Buffer latency ~ ELASTIC_DEPTH / 2 + 3 slots and the pipelines: the round trip the endpoints size
        # their replay and receive buffers for.
        rtt = ELASTIC_DEPTH + 8

        # # #

        ends, eps, buffers = {}, {}, {}
        for e, far in (("a", "b"), ("b", "a")):
            if serdes:
                link = ClockDomainsRenamer({"sys": e, "rx": far})(RIFLSerDesLink(frame_bits, rtt, 2, elastic=True))
                ends[e], eps[e], buffers[far + e] = link, link.endpoint, link.elastic
            else:
                ep = ClockDomainsRenamer(e)(RIFLEndpoint(frame_bits, rtt, cc_interval=cc_interval))
                eb = RIFLElasticBuffer(frame_bits, cd_write=far, cd_read=e)
                self.comb += ep.rx_frame.eq(eb.rd_frame)
                ends[e], eps[e], buffers[far + e] = ep, ep, eb
                setattr(self, f"eb_{far}{e}", eb)
            setattr(self, e, ends[e])
        if serdes:
            a, b = ends["a"], ends["b"]
            prev_data, prev_k = Signal(8), Signal()         # the previous A word's upper byte lane
            self.sync.a += If(a.tx_words.valid, prev_data.eq(a.tx_words.data[8:]), prev_k.eq(a.tx_words.ctrl[1]))
            self.comb += [
                b.rx_words.valid.eq(1), a.tx_words.ready.eq(1),
                b.rx_words.data.eq(Cat(prev_data, a.tx_words.data[:8])),
                b.rx_words.ctrl.eq(Cat(prev_k, a.tx_words.ctrl[0])),
                b.tx_words.connect(a.rx_words),
            ]
        else:
            self.comb += [self.eb_ab.wr_frame.eq(eps["a"].tx_frame), self.eb_ba.wr_frame.eq(eps["b"].tx_frame)]
        for d, (src, dst) in zip(LOOPBACK_DIRECTIONS, (("a", "b"), ("b", "a"))):
            gen = ClockDomainsRenamer({"sys": src})(TrafficGenerator(frame_bits))
            chk = ClockDomainsRenamer({"sys": dst})(TrafficChecker(frame_bits))
            setattr(self, f"gen_{d}", gen)
            setattr(self, f"chk_{d}", chk)
            self.comb += [gen.enable.eq(1), gen.source.connect(ends[src].sink), ends[dst].source.connect(chk.sink)]
            for name, sig in {**gen.counters, **chk.counters, **buffers[d].counters}.items():
                self.counters[f"{d}_{name}"] = sig
        for e, ep in eps.items():
            for name in LOOPBACK_EP_COUNTERS:
                self.counters[f"{e}_{name}"] = ep.counters[name]
            self.counters[f"{e}_link_up"] = ep.link_up


TWO_CLOCK_HARNESS = r"""
#include "Vrifl_two_clock.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
// argv: cycles of clock a, period of a and of b (any unit, even numbers). Both clocks toggle at their own
// half periods on one time line; the model is evaluated after every edge.
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    unsigned long long cycles = strtoull(argv[1], 0, 10), pa = strtoull(argv[2], 0, 10), pb = strtoull(argv[3], 0, 10);
    Vrifl_two_clock *t = new Vrifl_two_clock;
    unsigned long long na = pa / 2, nb = pb / 2, ca = 0;
    t->a_clk = 0; t->b_clk = 0; t->a_rst = 1; t->b_rst = 1; t->eval();
    while (ca < cycles) {
        unsigned long long now = na < nb ? na : nb;
        if (na == now) { t->a_clk = !t->a_clk; na += pa / 2; if (t->a_clk && ++ca == 4) t->a_rst = 0; }
        if (nb == now) { t->b_clk = !t->b_clk; nb += pb / 2; if (t->b_clk && ca >= 4) t->b_rst = 0; }
        t->eval();
    }
%(prints)s
    printf("b_cycles %%llu\n", nb / pb);
    delete t;
    return 0;
}
"""


def two_clock_link(frame_bits=64, cc_interval=CC_INTERVAL_FRAMES, serdes=False, build=True):
    """The Verilated RIFLTwoClockLink: `two_clock_run(model, cycles, ppm_a, ppm_b)` (build=False: its digest
    only)."""
    dut = RIFLTwoClockLink(frame_bits, cc_interval, serdes)
    ios = set()
    for cd in (dut.cd_a, dut.cd_b):
        for sig, kind in ((cd.clk, "clk"), (cd.rst, "rst")):
            sig.name_override = f"{cd.name}_{kind}"
            ios.add(sig)
    for name, sig in dut.counters.items():
        port = Signal(len(sig), name_override=name)
        dut.comb += port.eq(sig)
        ios.add(port)
    prints = "\n".join(f'    printf("{name} %u\\n", (unsigned)t->{name});' for name in dut.counters)
    text, _ = convert(dut, ios, "rifl_two_clock")
    return Model(f"rifl_two_clock_F{frame_bits}_{'serdes' if serdes else f'cc{cc_interval}'}",
                 {"rifl_two_clock.v": text}, "rifl_two_clock",
                 TWO_CLOCK_HARNESS % dict(prints=prints), build=build)


def two_clock_run(model, cycles, ppm_a, ppm_b):
    """`cycles` of clock a with the two clocks at ppm_a and ppm_b from nominal: every counter, b_cycles."""
    nominal = 2_000_000
    periods = [round(nominal * (1 - ppm * 1e-6) / 2) * 2 for ppm in (ppm_a, ppm_b)]   # faster = shorter
    out = model.run([cycles, *periods])
    return {k: int(v) for k, v in (line.split() for line in out.strip().splitlines())}


# A link with injection points, for fuzzing the receivers ---------------------------------------------------

FUZZ_MODES = {"pass": 0, "xor": 1, "replace": 2, "repeat": 3}
FUZZ_HISTORY = 16            # "repeat" replays the line's frame of 1..FUZZ_HISTORY - 1 cycles ago


class RIFLFuzzLink(LiteXModule):
    """Endpoints A and B (F bits, lines of `latency` cycles each way), a TrafficGenerator and a
    TrafficChecker each way, and an injection point on each line in front of its receiver: per cycle
    `inj_<dir>_mode` (FUZZ_MODES) with `inj_<dir>_value`: the frame passes, is XORed with value, is
    replaced by value, or is replaced by the line's frame of `value` cycles ago (a duplicate). Inputs
    `enable` (the generators) and `ready_rate` (the checkers', as TrafficChecker). Counters `counters[name]`:
    <dir>_<name> (generator, checker) and <ep>_<name> (EP_COUNTERS, link_up)."""
    def __init__(self, frame_bits=64, latency=4):
        F = frame_bits
        self.enable = Signal()
        self.ready_rate = Signal(8)
        self.counters = {}

        # # #

        eps = {e: RIFLEndpoint(F, rtt=2 * latency) for e in LOOPBACK_ENDPOINTS}
        for e, ep in eps.items():
            setattr(self, e, ep)
        for d, (src, dst) in zip(LOOPBACK_DIRECTIONS, (("a", "b"), ("b", "a"))):
            mode, value = Signal(2, name=f"inj_{d}_mode"), Signal(F, name=f"inj_{d}_value")
            setattr(self, f"inj_{d}_mode", mode)
            setattr(self, f"inj_{d}_value", value)
            line = [eps[src].tx_frame]
            for _ in range(latency):
                stage = Signal(F)
                self.sync += stage.eq(line[-1])
                line.append(stage)
            history = [line[-1]]
            for _ in range(FUZZ_HISTORY - 1):
                stage = Signal(F)
                self.sync += stage.eq(history[-1])
                history.append(stage)
            self.comb += Case(mode, {
                FUZZ_MODES["pass"]: eps[dst].rx_frame.eq(line[-1]),
                FUZZ_MODES["xor"]: eps[dst].rx_frame.eq(line[-1] ^ value),
                FUZZ_MODES["replace"]: eps[dst].rx_frame.eq(value),
                FUZZ_MODES["repeat"]: eps[dst].rx_frame.eq(Array(history)[value[:log2_int(FUZZ_HISTORY)]]),
            })
            gen, chk = TrafficGenerator(F), TrafficChecker(F, seed=0x7F4A7C15 if d == "ab" else 0x3C6EF372)
            setattr(self, f"gen_{d}", gen)
            setattr(self, f"chk_{d}", chk)
            self.comb += [gen.enable.eq(self.enable), chk.ready_rate.eq(self.ready_rate),
                          gen.source.connect(eps[src].sink), eps[dst].source.connect(chk.sink)]
            for name, sig in {**gen.counters, **chk.counters}.items():
                self.counters[f"{d}_{name}"] = sig
        for e, ep in eps.items():
            for name, _ in EP_COUNTERS:
                self.counters[f"{e}_{name}"] = ep.counters[name]
            self.counters[f"{e}_link_up"] = ep.link_up


FUZZ_HARNESS = r"""
#include "Vrifl_fuzz.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
// argv: stimulus file (lines "cycle dir mode value", dir 0 = A->B, 1 = B->A, value hex; by cycle), active
// cycles (generators on, the stimulus applied, checkers at ready_rate), drain limit (generators off, no
// injection, checkers always ready, until every packet sent is delivered), ready_rate.
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    FILE *f = fopen(argv[1], "r");
    unsigned long long active = strtoull(argv[2], 0, 10), limit = strtoull(argv[3], 0, 10);
    unsigned rate = strtoul(argv[4], 0, 10);
    Vrifl_fuzz *t = new Vrifl_fuzz;
    t->rst = 1; t->clk = 0; t->eval(); t->clk = 1; t->eval(); t->clk = 0; t->rst = 0;
    unsigned long long ec = 0, ev; int ed = 0, em = 0, have = fscanf(f, "%%llu %%d %%d %%llx", &ec, &ed, &em, &ev) == 4;
    t->enable = 1; t->ready_rate = rate;
    for (unsigned long long c = 0; c < active; c++) {
        t->inj_ab_mode = 0; t->inj_ba_mode = 0;
        while (have && ec == c) {
            if (ed == 0) { t->inj_ab_mode = em; t->inj_ab_value = ev; } else { t->inj_ba_mode = em; t->inj_ba_value = ev; }
            have = fscanf(f, "%%llu %%d %%d %%llx", &ec, &ed, &em, &ev) == 4;
        }
        t->eval();
        t->clk = 1; t->eval(); t->clk = 0; t->eval();
    }
    t->enable = 0; t->ready_rate = 0; t->inj_ab_mode = 0; t->inj_ba_mode = 0;
    unsigned long long drained = 0;
    while (drained < limit && !(t->ab_delivered == t->ab_sent && t->ba_delivered == t->ba_sent && t->a_link_up &&
                                t->b_link_up && drained > 64)) {
        t->clk = 1; t->eval(); t->clk = 0; t->eval(); drained++;
    }
%(prints)s
    printf("drain_cycles %%llu\n", drained);
    delete t;
    return 0;
}
"""


def fuzz_link(frame_bits=64, latency=4):
    """The Verilated RIFLFuzzLink: `fuzz_run(model, events, active, limit, ready_rate)`."""
    if frame_bits != 64:
        raise ValueError("the fuzz harness passes frames as 64-bit words: frame_bits must be 64")
    dut = RIFLFuzzLink(frame_bits, latency)
    ports = {"enable": (dut.enable, True), "ready_rate": (dut.ready_rate, True)}
    for d in LOOPBACK_DIRECTIONS:
        for f in ("mode", "value"):
            ports[f"inj_{d}_{f}"] = (getattr(dut, f"inj_{d}_{f}"), True)
    ports.update({name: (sig, False) for name, sig in dut.counters.items()})
    prints = "\n".join(f'    printf("{name} %u\\n", (unsigned)t->{name});' for name in dut.counters)
    return Model(f"rifl_fuzz_F{frame_bits}_L{latency}", {"rifl_fuzz.v": flat_ports(dut, ports, "rifl_fuzz")},
                 "rifl_fuzz", FUZZ_HARNESS % dict(prints=prints))


def fuzz_run(model, events, active, limit, ready_rate=0):
    """`events`: (cycle, direction ("ab"/"ba"), mode (FUZZ_MODES name), value) in any order. Returns every
    counter and drain_cycles (limit: the link did not deliver everything in time)."""
    lines = [f"{c} {LOOPBACK_DIRECTIONS.index(d)} {FUZZ_MODES[m]} {v:x}"
             for c, d, m, v in sorted(events, key=lambda e: e[0])]
    path = os.path.join(model.dir, f"stim_{os.getpid()}_{threading.get_ident()}.txt")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    try:
        out = model.run([path, active, limit, ready_rate])
    finally:
        os.remove(path)
    return {k: int(v) for k, v in (line.split() for line in out.strip().splitlines())}

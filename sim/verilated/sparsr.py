"""The Sparsr receiver as a Verilated model: the generated Verilog's semantics, as in litex_sim and on the
FPGA (Migen's simulator evaluates expressions at unbounded width, Verilog at the width of the widest operand
or target, so some bugs only show here).

    card = VerilatedReceiver(wmem_rows=4, xmem_rows=2)        # built once by sim.verilated (cached)
    run = card.run(frames, seed=1, valid_prob=0.8, ready_prob=0.7)
    run.answers, run.counters, run.cycles, run.input_rate
    card = VerilatedReceiver(8, 64, dram="sdr")               # XMEM in DRAM (sim.models.dram)
    run = card.run(frames + [WAIT, Probe(write=False, words=4096)])

`run` streams the frames into a fresh receiver (out of reset) through a C++ harness with seeded random
valid/ready, one frame after the other (`last` on each frame's final word, so a frame of any length can be
sent), and returns when every word went in and the receiver is idle with no answer left.
Stimulus file: one input word a line, `<hex word> <last>`, or `wait`, or `probe <r|w> <hex words>`; the
harness writes each answer word taken the same way, `W <last word cycle> <idle cycle>` per wait, `P <r|w>
<hex words> <cycles>` per probe, then `END <cycles> <first word cycle> <last word cycle> <words in>`,
`EPOCHS <epochs> <mismatches>` and one `<counter> <value>` line per counter (STATUS_COUNTERS, then with a
DRAM the DRAM_COUNTERS).
"""
import os
import tempfile
from dataclasses import dataclass, field

from migen import Mux, Signal

from litex.gen import LiteXModule

from cores.sparsr.common import STATUS_COUNTERS, DRAM_COUNTERS, XMEM_DRAM
from cores.sparsr.receiver import SparsrReceiver
from sim.verilated.build import Model, VerilatorError
from sim.verilated.verilog import flat_ports

TOP = "sparsr_rx"


def receiver_ports(rx):
    """The receiver's streams, `idle` and counters as plainly named ports."""
    return {
        "in_valid": (rx.sink.valid, True), "in_ready": (rx.sink.ready, False),
        "in_data": (rx.sink.data, True), "in_last": (rx.sink.last, True),
        "out_valid": (rx.source.valid, False), "out_ready": (rx.source.ready, True),
        "out_data": (rx.source.data, False), "out_last": (rx.source.last, False),
        "idle": (rx.idle, False),
        **{f"cnt_{n}": (rx.counters[n], False) for n in STATUS_COUNTERS},
    }


HARNESS = r"""
#include "V%(top)s.h"
#include "verilated.h"
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>
#define HAS_PROBES %(probes)d

static uint64_t rng_state;
static uint32_t rnd() {                    // xorshift64*
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ULL) >> 40) %% 1000000;
}

// Stimulus items: an input word (with `last`), a wait for the receiver to be idle, or a DRAM probe run.
enum { WORD, WAIT, PROBE };
struct Item { int kind; uint32_t data; unsigned last; };

int main(int argc, char **argv) {
    if (argc != 7 && argc != 8) { fprintf(stderr, "usage: in out seed valid_ppm ready_ppm max_cycles [repeat]\n"); return 2; }
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
    if (!in || !out) { perror("open"); return 2; }
    rng_state = strtoull(argv[3], 0, 0) * 0x9E3779B97F4A7C15ULL + 1;
    uint32_t valid_ppm = strtoul(argv[4], 0, 0), ready_ppm = strtoul(argv[5], 0, 0);
    uint64_t max_cycles = strtoull(argv[6], 0, 0), repeat = argc == 8 ? strtoull(argv[7], 0, 0) : 1;
    // Epochs after the first replay the input once the receiver is idle; their answers are compared
    // with the first epoch's (mismatches: answer words that differ, or a different answer length).
    std::vector<uint32_t> ans0; std::vector<uint8_t> ans0_last;
    uint64_t epoch = 0, ans_k = 0, mismatches = 0;
    std::vector<Item> items;
    size_t n_words = 0;
    char line[64];
    while (fgets(line, sizeof line, in)) {
        unsigned d, l; char rw;
        if (!strncmp(line, "wait", 4)) items.push_back({WAIT, 0, 0});
        else if (sscanf(line, "probe %%c %%x", &rw, &d) == 2) items.push_back({PROBE, d, (unsigned)(rw == 'w')});
        else if (sscanf(line, "%%x %%u", &d, &l) == 2) { items.push_back({WORD, d, l}); n_words++; }
    }
    Verilated::commandArgs(argc, argv);
    V%(top)s *top = new V%(top)s;
    top->rst = 1; top->in_valid = 0; top->out_ready = 0;
    for (int i = 0; i < 4; i++) { top->clk = 0; top->eval(); top->clk = 1; top->eval(); }
    top->rst = 0;
    size_t pos = 0, words_in = 0;
    uint64_t cycle = 0, quiet = 0;
    long long first = -1, lastw = -1;
    bool probing = false;
    while (cycle < max_cycles) {
        bool at_word = pos < items.size() && items[pos].kind == WORD;
        bool offer = at_word && rnd() < valid_ppm;
        bool take = rnd() < ready_ppm;
        top->in_valid = offer;
        top->in_data = offer ? items[pos].data : 0;
        top->in_last = offer ? items[pos].last : 0;
        top->out_ready = take;
        bool start_probe = false;
        top->clk = 0; top->eval();
        bool settled = top->idle && !top->out_valid;
        if (pos < items.size() && items[pos].kind != WORD && settled) {
            if (items[pos].kind == WAIT) {
                if (epoch == 0) fprintf(out, "W %%lld %%llu\n", lastw, (unsigned long long)cycle);
                pos++;
            }
#if HAS_PROBES
            else if (!probing) { start_probe = true; probing = true; }
            else if (!top->probe_busy) {
                if (epoch == 0) fprintf(out, "P %%c %%x %%u\n", items[pos].last ? 'w' : 'r', items[pos].data,
                                        (unsigned)top->probe_cycles);
                probing = false; pos++;
            }
#endif
        }
#if HAS_PROBES
        top->probe_start = start_probe;
        top->probe_write = start_probe && items[pos].last;
        top->probe_n = start_probe ? items[pos].data : 0;
        top->eval();
#endif
        if (take && top->out_valid) {
            uint32_t w = top->out_data; uint8_t l = top->out_last;
            if (epoch == 0) { fprintf(out, "%%08x %%u\n", w, l); ans0.push_back(w); ans0_last.push_back(l); }
            else mismatches += ans_k >= ans0.size() || ans0[ans_k] != w || ans0_last[ans_k] != l;
            ans_k++;
        }
        if (offer && top->in_ready) { pos++; words_in++; if (first < 0) first = cycle; lastw = cycle; }
        bool done = pos == items.size() && settled;
        top->clk = 1; top->eval();
        cycle++;
        quiet = done ? quiet + 1 : 0;
        if (quiet > 16) {
            if (epoch > 0) mismatches += ans_k != ans0.size();
            if (++epoch == repeat) break;
            pos = 0; quiet = 0; ans_k = 0; words_in = 0;
        }
    }
    fprintf(out, "END %%llu %%lld %%lld %%zu\n", (unsigned long long)cycle, first, lastw, words_in);
    fprintf(out, "EPOCHS %%llu %%llu\n", (unsigned long long)epoch, (unsigned long long)mismatches);
%(counters)s
    fclose(out);
    delete top;
    return 0;
}
"""


@dataclass
class VRun:
    answers: list          # answer frames (lists of words), as delimited by `last`
    counters: dict         # the receiver's counters after the run
    cycles: int            # cycles until the receiver was idle with every answer out
    words_in: int          # input words accepted
    first_word_cycle: int
    last_word_cycle: int
    epochs: int = 1        # times the input was sent (run(repeat=...)), each after the receiver went idle
    mismatches: int = 0    # answer words of the later epochs that differ from the first epoch's
    waits: list = field(default_factory=list)    # per WAIT: (cycle of the last word before it, cycle idle)
    probes: list = field(default_factory=list)   # per Probe: (write, words, cycles)
    dram: dict = field(default_factory=dict)     # DRAM XMEM counters (DRAM_COUNTERS)

    @property
    def input_rate(self):
        """Words accepted per cycle between the first and the last accepted word."""
        return self.words_in / (self.last_word_cycle - self.first_word_cycle + 1)


# Items of run()'s input besides frames: wait until the receiver is idle (its DRAM writes done too) and note
# the cycle; run the DRAM bandwidth probe (a DRAM card only) while the receiver is idle.
WAIT = "wait"


@dataclass(frozen=True)
class Probe:
    write: bool            # write (else read) `words` native words at consecutive DRAM addresses
    words: int


class SparsrDRAMCard(LiteXModule):
    """The receiver with XMEM in DRAM (`dram`: a sim.models.dram model, XMEM at byte 0 of it) and two
    bandwidth probes (LiteDRAM DMA read and write streams on native-width ports of the same crossbar)."""
    def __init__(self, wmem_rows, xmem_rows, fifo_depth, dram):
        from sim.models.dram import DRAMModel, BandwidthProbe
        self.dram = DRAMModel(dram)
        xbar = self.dram.crossbar
        self.rx = SparsrReceiver(wmem_rows, xmem_rows, fifo_depth, xmem=XMEM_DRAM,
                                 dram_port=xbar.get_port())
        self.probe_r = BandwidthProbe(xbar.get_port(), write=False)
        self.probe_w = BandwidthProbe(xbar.get_port(), write=True)
        self.native_bits = xbar.controller.data_width
        self.probe_start, self.probe_write, self.probe_n = Signal(), Signal(), Signal(32)
        self.probe_busy, self.probe_cycles = Signal(), Signal(32)

        # # #

        pr, pw = self.probe_r, self.probe_w
        self.comb += [
            pr.start.eq(self.probe_start & ~self.probe_write), pw.start.eq(self.probe_start & self.probe_write),
            pr.n.eq(self.probe_n), pw.n.eq(self.probe_n),
            self.probe_busy.eq(pr.busy | pw.busy),
            self.probe_cycles.eq(Mux(pw.cycles != 0, pw.cycles, pr.cycles)),
        ]


class VerilatedReceiver:
    """SparsrReceiver(wmem_rows, xmem_rows, fifo_depth) as a Verilated model (cached; the first build takes
    about half a minute; build=False: `model.digest` only). `dram`: XMEM in DRAM, a sim.models.dram model
    ("sdr" or "ddr3"; a SparsrDRAMCard, which also runs `Probe`s); None: XMEM in block RAM."""
    def __init__(self, wmem_rows, xmem_rows, fifo_depth=8, build=True, dram=None):
        self.wmem_rows, self.xmem_rows, self.dram = wmem_rows, xmem_rows, dram
        if dram is None:
            top = rx = SparsrReceiver(wmem_rows, xmem_rows, fifo_depth, with_csr=False)
            ports = receiver_ports(rx)
        else:
            top = SparsrDRAMCard(wmem_rows, xmem_rows, fifo_depth, dram)
            rx = top.rx
            self.native_bits = top.native_bits
            ports = {**receiver_ports(rx), "probe_start": (top.probe_start, True),
                     "probe_write": (top.probe_write, True), "probe_n": (top.probe_n, True),
                     "probe_busy": (top.probe_busy, False), "probe_cycles": (top.probe_cycles, False),
                     **{f"cnt_{n}": (rx.xmem.counters[n], False) for n, _ in DRAM_COUNTERS}}
        self.counter_names = list(STATUS_COUNTERS) + ([n for n, _ in DRAM_COUNTERS] if dram else [])
        counters = "\n".join(f'    fprintf(out, "{n} %u\\n", (unsigned)top->cnt_{n});' for n in self.counter_names)
        self.model = Model(TOP if dram is None else f"{TOP}_dram_{dram}",
                           {f"{TOP}.v": flat_ports(top, ports, TOP)}, TOP,
                           HARNESS % dict(top=TOP, counters=counters, probes=int(dram is not None)), build=build)

    def run(self, frames, seed=1, valid_prob=1.0, ready_prob=1.0, max_cycles=20_000_000, repeat=1):
        """`frames`: frames (lists of words), WAIT and Probe items, in order. `repeat`: send them that many
        times, each time once the receiver is idle (a soak: `answers` are the first epoch's, `mismatches`
        counts the later epochs' answer words that differ)."""
        lines_in, n_words = [], 0
        for f in frames:
            if f is WAIT:
                lines_in.append("wait\n")
            elif isinstance(f, Probe):
                if self.dram is None:
                    raise ValueError("a Probe needs a DRAM card (VerilatedReceiver(..., dram=...))")
                lines_in.append(f"probe {'w' if f.write else 'r'} {f.words:x}\n")
            else:
                lines_in += [f"{w:08x} {int(i == len(f) - 1)}\n" for i, w in enumerate(f)]
                n_words += len(f)
        with tempfile.TemporaryDirectory(dir=self.model.dir) as tmp:
            src, dst = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
            with open(src, "w") as f:
                f.writelines(lines_in)
            self.model.run([src, dst, seed, int(valid_prob * 1e6), int(ready_prob * 1e6), int(max_cycles), repeat])
            with open(dst) as f:
                lines = f.read().split("\n")
        answers, current, waits, probes, k = [], [], [], [], 0
        while not lines[k].startswith("END"):
            parts = lines[k].split()
            if parts[0] == "W":
                waits.append((int(parts[1]), int(parts[2])))
            elif parts[0] == "P":
                probes.append((parts[1] == "w", int(parts[2], 16), int(parts[3])))
            else:
                current.append(int(parts[0], 16))
                if parts[1] == "1":
                    answers.append(current)
                    current = []
            k += 1
        _, cycles, first, last, n_in = lines[k].split()
        if current or int(n_in) != n_words:
            raise VerilatorError(f"Verilated receiver stopped after {cycles} cycles with {n_in}/{n_words} words "
                                 f"in and {len(current)} words of an unfinished answer")
        _, epochs, mismatches = lines[k + 1].split()
        if int(epochs) != repeat:
            raise VerilatorError(f"Verilated receiver ran {epochs} of {repeat} epochs in {cycles} cycles")
        values = {name: int(v) for name, v in (ln.split() for ln in lines[k + 2:k + 2 + len(self.counter_names)])}
        counters = {n: values[n] for n in STATUS_COUNTERS}
        dram = {n: values[n] for n, _ in DRAM_COUNTERS if n in values}
        return VRun(answers, counters, int(cycles), int(n_in), int(first), int(last), int(epochs), int(mismatches),
                    waits, probes, dram)

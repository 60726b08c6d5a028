"""The Sparsr receiver as a Verilated model: the generated Verilog's semantics, as in litex_sim and on the
FPGA (Migen's simulator evaluates expressions at unbounded width, Verilog at the width of the widest operand
or target, so some bugs only show here).

    card = VerilatedReceiver(wmem_rows=4, xmem_rows=2)        # built once by sim.verilated (cached)
    run = card.run(frames, seed=1, valid_prob=0.8, ready_prob=0.7)
    run.answers, run.counters, run.cycles, run.input_rate

`run` streams the frames into a fresh receiver (out of reset) through a C++ harness with seeded random
valid/ready, one frame after the other (`last` on each frame's final word, so a frame of any length can be
sent), and returns when every word went in and the receiver is idle with no answer left.
Stimulus file: one input word a line, `<hex word> <last>`; the harness writes each answer word taken the
same way, then `END <cycles> <first word cycle> <last word cycle> <words in>` and one `<counter> <value>`
line per counter of STATUS_COUNTERS.
"""
import os
import tempfile
from dataclasses import dataclass

from cores.sparsr.common import STATUS_COUNTERS
from cores.sparsr.receiver import SparsrReceiver
from sim.verilated import Model, VerilatorError, flat_ports

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
#include <vector>

static uint64_t rng_state;
static uint32_t rnd() {                    // xorshift64*
    rng_state ^= rng_state >> 12; rng_state ^= rng_state << 25; rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 2685821657736338717ULL) >> 40) %% 1000000;
}

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
    std::vector<uint32_t> data; std::vector<uint8_t> last;
    unsigned d, l;
    while (fscanf(in, "%%x %%u", &d, &l) == 2) { data.push_back(d); last.push_back(l); }
    Verilated::commandArgs(argc, argv);
    V%(top)s *top = new V%(top)s;
    top->rst = 1; top->in_valid = 0; top->out_ready = 0;
    for (int i = 0; i < 4; i++) { top->clk = 0; top->eval(); top->clk = 1; top->eval(); }
    top->rst = 0;
    size_t pos = 0;
    uint64_t cycle = 0, quiet = 0;
    long long first = -1, lastw = -1;
    while (cycle < max_cycles) {
        bool offer = pos < data.size() && rnd() < valid_ppm;
        bool take = rnd() < ready_ppm;
        top->in_valid = offer;
        top->in_data = offer ? data[pos] : 0;
        top->in_last = offer ? last[pos] : 0;
        top->out_ready = take;
        top->clk = 0; top->eval();
        if (take && top->out_valid) {
            uint32_t w = top->out_data; uint8_t l = top->out_last;
            if (epoch == 0) { fprintf(out, "%%08x %%u\n", w, l); ans0.push_back(w); ans0_last.push_back(l); }
            else mismatches += ans_k >= ans0.size() || ans0[ans_k] != w || ans0_last[ans_k] != l;
            ans_k++;
        }
        if (offer && top->in_ready) { pos++; if (first < 0) first = cycle; lastw = cycle; }
        bool done = pos == data.size() && top->idle && !top->out_valid;
        top->clk = 1; top->eval();
        cycle++;
        quiet = done ? quiet + 1 : 0;
        if (quiet > 16) {
            if (epoch > 0) mismatches += ans_k != ans0.size();
            if (++epoch == repeat) break;
            pos = 0; quiet = 0; ans_k = 0;
        }
    }
    fprintf(out, "END %%llu %%lld %%lld %%zu\n", (unsigned long long)cycle, first, lastw, pos);
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

    @property
    def input_rate(self):
        """Words accepted per cycle between the first and the last accepted word."""
        return self.words_in / (self.last_word_cycle - self.first_word_cycle + 1)


class VerilatedReceiver:
    """SparsrReceiver(wmem_rows, xmem_rows, fifo_depth) as a Verilated model (cached; the first build takes
    about half a minute; build=False: `model.digest` only)."""
    def __init__(self, wmem_rows, xmem_rows, fifo_depth=8, build=True):
        self.wmem_rows, self.xmem_rows = wmem_rows, xmem_rows
        rx = SparsrReceiver(wmem_rows, xmem_rows, fifo_depth, with_csr=False)
        counters = "\n".join(f'    fprintf(out, "{n} %u\\n", (unsigned)top->cnt_{n});' for n in STATUS_COUNTERS)
        self.model = Model(TOP, {f"{TOP}.v": flat_ports(rx, receiver_ports(rx), TOP)}, TOP,
                           HARNESS % dict(top=TOP, counters=counters), build=build)

    def run(self, frames, seed=1, valid_prob=1.0, ready_prob=1.0, max_cycles=20_000_000, repeat=1):
        """`repeat`: send the frames that many times, each time once the receiver is idle (a soak: `answers`
        are the first epoch's, `mismatches` counts the later epochs' answer words that differ)."""
        words = [(w, int(i == len(f) - 1)) for f in frames for i, w in enumerate(f)]
        with tempfile.TemporaryDirectory(dir=self.model.dir) as tmp:
            src, dst = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
            with open(src, "w") as f:
                f.writelines(f"{w:08x} {l}\n" for w, l in words)
            self.model.run([src, dst, seed, int(valid_prob * 1e6), int(ready_prob * 1e6), int(max_cycles), repeat])
            with open(dst) as f:
                lines = f.read().split("\n")
        answers, current, k = [], [], 0
        while not lines[k].startswith("END"):
            w, l = lines[k].split()
            current.append(int(w, 16))
            if l == "1":
                answers.append(current)
                current = []
            k += 1
        _, cycles, first, last, n_in = lines[k].split()
        if current or int(n_in) != len(words):
            raise VerilatorError(f"Verilated receiver stopped after {cycles} cycles with {n_in}/{len(words)} words "
                                 f"in and {len(current)} words of an unfinished answer")
        _, epochs, mismatches = lines[k + 1].split()
        if int(epochs) != repeat:
            raise VerilatorError(f"Verilated receiver ran {epochs} of {repeat} epochs in {cycles} cycles")
        counters = {name: int(v) for name, v in (ln.split() for ln in lines[k + 2:k + 2 + len(STATUS_COUNTERS)])}
        return VRun(answers, counters, int(cycles), int(n_in), int(first), int(last), int(epochs), int(mismatches))

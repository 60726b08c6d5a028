"""The Sparsr receiver as generated Verilog, run in Verilator: the same gateware semantics as litex_sim and
the FPGA (Migen's simulator evaluates expressions at unbounded width, Verilog at the width of the widest
operand or target, so some bugs only show here).

    card = VerilatedReceiver(wmem_rows=4, xmem_rows=2)        # generates and compiles once (cached)
    run = card.run(frames, seed=1, valid_prob=0.8, ready_prob=0.7)
    run.answers, run.counters, run.cycles, run.input_rate

`run` streams the frames into a fresh receiver (out of reset) through a C++ harness with seeded random
valid/ready, one frame after the other (`last` on each frame's final word, so a frame of any length can be
sent), and returns when every word went in and the receiver is idle with no answer left. The compiled
simulator is kept under build/sparsr_vsim/<hash of the Verilog and harness>/.

Also here: `CycleSim` (any module stepped one cycle at a time from Python, used for the PCIe path at TLP
level) and `lint` (verilator --lint-only of generated gateware, with blackbox stubs for vendor cells).
"""
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from migen import ClockDomain, Signal

from litex.gen import LiteXModule
from litex.gen.fhdl.verilog import convert

from cores.sparsr.common import STATUS_COUNTERS
from cores.sparsr.receiver import SparsrReceiver

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.path.join(ROOT, "build", "sparsr_vsim")
VERILATOR = os.environ.get("VERILATOR", "verilator")
TOP = "sparsr_rx"


class _Ports(LiteXModule):
    """`module` with flat, explicitly named ports: `ports` maps a port name to (signal, is_input)."""
    def __init__(self, module, ports):
        self.cd_sys = ClockDomain()
        self.dut = module
        self.ios = {self.cd_sys.clk, self.cd_sys.rst}
        self.cd_sys.clk.name_override, self.cd_sys.rst.name_override = "clk", "rst"
        for name, (sig, is_input) in ports.items():
            port = Signal(len(sig), name_override=name)
            self.comb += sig.eq(port) if is_input else port.eq(sig)
            self.ios.add(port)


def _receiver_ports(rx):
    return {
        "in_valid": (rx.sink.valid, True), "in_ready": (rx.sink.ready, False),
        "in_data": (rx.sink.data, True), "in_last": (rx.sink.last, True),
        "out_valid": (rx.source.valid, False), "out_ready": (rx.source.ready, True),
        "out_data": (rx.source.data, False), "out_last": (rx.source.last, False),
        "idle": (rx.idle, False),
        **{f"cnt_{n}": (rx.counters[n], False) for n in STATUS_COUNTERS},
    }


def _compile(module, ports, harness, top):
    """Verilog of `module` with `ports`, compiled with `harness` (cached by content); the executable."""
    if shutil.which(VERILATOR) is None:
        raise RuntimeError(f"{VERILATOR} not found (set VERILATOR)")
    wrapped = _Ports(module, ports)
    verilog = str(convert(wrapped, ios=wrapped.ios, name=top))
    key = hashlib.sha1((verilog + harness).encode()).hexdigest()[:16]
    folder = os.path.join(BUILD_DIR, key)
    exe = os.path.join(folder, "obj_dir", f"V{top}")
    if os.path.exists(exe):
        return exe
    os.makedirs(BUILD_DIR, exist_ok=True)
    work = tempfile.mkdtemp(dir=BUILD_DIR, prefix="tmp-")
    with open(os.path.join(work, f"{top}.v"), "w") as f:
        f.write(verilog)
    with open(os.path.join(work, "harness.cpp"), "w") as f:
        f.write(harness)
    cmd = [VERILATOR, "--cc", "--exe", "--build", "-j", "1", "-Wno-fatal", "-Wno-lint", "-Wno-style",
           "--top-module", top, "-O1", "-CFLAGS", "-O1", f"{top}.v", "harness.cpp"]
    r = subprocess.run(cmd, cwd=work, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"verilator failed in {work}:\n{r.stdout[-3000:]}")
    try:
        os.rename(work, folder)
    except OSError:                     # built meanwhile by another process
        shutil.rmtree(work, ignore_errors=True)
    return exe


_HARNESS = r"""
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
    if (argc != 7) { fprintf(stderr, "usage: in out seed valid_ppm ready_ppm max_cycles\n"); return 2; }
    FILE *in = fopen(argv[1], "r"), *out = fopen(argv[2], "w");
    if (!in || !out) { perror("open"); return 2; }
    rng_state = strtoull(argv[3], 0, 0) * 0x9E3779B97F4A7C15ULL + 1;
    uint32_t valid_ppm = strtoul(argv[4], 0, 0), ready_ppm = strtoul(argv[5], 0, 0);
    uint64_t max_cycles = strtoull(argv[6], 0, 0);
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
        if (take && top->out_valid) fprintf(out, "%%08x %%u\n", (unsigned)top->out_data, (unsigned)top->out_last);
        if (offer && top->in_ready) { pos++; if (first < 0) first = cycle; lastw = cycle; }
        bool done = pos == data.size() && top->idle && !top->out_valid;
        top->clk = 1; top->eval();
        cycle++;
        quiet = done ? quiet + 1 : 0;
        if (quiet > 16) break;
    }
    fprintf(out, "END %%llu %%lld %%lld %%zu\n", (unsigned long long)cycle, first, lastw, pos);
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

    @property
    def input_rate(self):
        """Words accepted per cycle between the first and the last accepted word."""
        return self.words_in / (self.last_word_cycle - self.first_word_cycle + 1)


class VerilatedReceiver:
    """SparsrReceiver(wmem_rows, xmem_rows, fifo_depth) compiled with Verilator (cached; the first build
    takes about half a minute)."""
    def __init__(self, wmem_rows, xmem_rows, fifo_depth=8):
        self.wmem_rows, self.xmem_rows = wmem_rows, xmem_rows
        rx = SparsrReceiver(wmem_rows, xmem_rows, fifo_depth, with_csr=False)
        counters = "\n".join(f'    fprintf(out, "{n} %u\\n", (unsigned)top->cnt_{n});' for n in STATUS_COUNTERS)
        self.exe = _compile(rx, _receiver_ports(rx), _HARNESS % dict(top=TOP, counters=counters), TOP)

    def run(self, frames, seed=1, valid_prob=1.0, ready_prob=1.0, max_cycles=20_000_000):
        words = [(w, int(i == len(f) - 1)) for f in frames for i, w in enumerate(f)]
        with tempfile.TemporaryDirectory(dir=BUILD_DIR) as tmp:
            src, dst = os.path.join(tmp, "in.txt"), os.path.join(tmp, "out.txt")
            with open(src, "w") as f:
                f.writelines(f"{w:08x} {l}\n" for w, l in words)
            subprocess.run([self.exe, src, dst, str(seed), str(int(valid_prob * 1e6)), str(int(ready_prob * 1e6)),
                            str(int(max_cycles))], check=True)
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
            raise RuntimeError(f"Verilated receiver stopped after {cycles} cycles with {n_in}/{len(words)} words in "
                               f"and {len(current)} words of an unfinished answer")
        counters = {name: int(v) for name, v in (ln.split() for ln in lines[k + 1:k + 1 + len(STATUS_COUNTERS)])}
        return VRun(answers, counters, int(cycles), int(n_in), int(first), int(last))


class CycleSim:
    """Any module in Verilator, stepped one clock cycle at a time from Python (for host models that react
    every cycle, e.g. a PCIe link at TLP level). `ports` maps a port name to (signal, is_input); signals
    up to 64 bits. `step(**inputs) -> outputs`: sets the inputs (others keep their last value, 0 at
    first), lets the logic settle, returns every output as seen before the clock edge, then clocks.
    A few ten thousand cycles per second (one pipe round trip per cycle)."""
    def __init__(self, module, ports, top="cyclesim"):
        if any(len(sig) > 64 for sig, _ in ports.values()):
            raise ValueError("CycleSim ports are at most 64 bits")
        self.inputs = [n for n, (_, i) in ports.items() if i]
        self.outputs = [n for n, (_, i) in ports.items() if not i]
        set_in = "\n".join(f"        top->{n} = strtoull(p, &p, 16);" for n in self.inputs)
        fmt = " ".join(["%llx"] * len(self.outputs))
        vals = ", ".join(f"(unsigned long long)top->{n}" for n in self.outputs)
        harness = _CYCLE_HARNESS % dict(top=top, set_in=set_in, fmt=fmt, vals=vals)
        exe = _compile(module, ports, harness, top)
        self.proc = subprocess.Popen([exe], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.values = dict.fromkeys(self.inputs, 0)
        self.cycle = 0

    def step(self, **inputs):
        self.values.update(inputs)
        self.proc.stdin.write(" ".join(f"{self.values[n]:x}" for n in self.inputs) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the Verilated model stopped")
        self.cycle += 1
        return dict(zip(self.outputs, (int(v, 16) for v in line.split())))

    def close(self):
        self.proc.stdin.close()
        self.proc.wait()


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


# Lint of generated gateware -------------------------------------------------------------------------
_DECL = re.compile(r"^\s*(?:input|output|inout)?\s*(?:wire|reg)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s*)?(\w+)", re.M)
_INSTANCE = re.compile(r"^(\w+)\s*(?:#\((.*?)\n\)\s*)?(\w+)\s*\((.*?)\n\);", re.M | re.S)
_CONNECTION = re.compile(r"^\s*\.(\w+)\s*\((.*)\),?\s*$")
_SECTIONS = {"// Inputs.": "input", "// Outputs.": "output", "// InOuts.": "inout"}


def blackbox_stubs(verilog):
    """Empty modules for every module the generated Verilog instantiates but does not define (vendor
    primitives and IP): ports and directions from LiteX's `// Inputs.`/`// Outputs.` instance sections,
    widths from the connected signals, parameters from the instances. Returns (stub text, module names)."""
    widths = {name: int(hi) - int(lo) + 1 if hi else 1 for hi, lo, name in _DECL.findall(verilog)}
    defined = set(re.findall(r"^module\s+(\w+)", verilog, re.M))
    modules = {}
    for mod, params, _, body in _INSTANCE.findall(verilog):
        if mod in defined or mod in ("module", "assign", "always", "if", "case"):
            continue
        ports, pset = modules.setdefault(mod, ({}, set()))
        for line in (params or "").split("\n"):
            m = _CONNECTION.match(line)
            if m:
                pset.add(m.group(1))
        direction = "input"
        for line in body.split("\n"):
            direction = _SECTIONS.get(line.strip(), direction)
            m = _CONNECTION.match(line)
            if not m:
                continue
            expr = m.group(2).strip()
            if re.match(r"^\d+'[dhb]", expr):
                width = int(expr.split("'")[0])
            elif re.match(r"^\w+$", expr):
                width = widths.get(expr, 1)
            elif re.match(r"^\w+\[(\d+):(\d+)\]$", expr):
                hi, lo = map(int, re.findall(r"\d+", expr.split("[", 1)[1]))
                width = hi - lo + 1
            else:
                width = 1
            old = ports.get(m.group(1), (direction, 0))
            ports[m.group(1)] = (direction, max(width, old[1]))
    text = []
    for mod, (ports, params) in sorted(modules.items()):
        plist = ", ".join(f"parameter {p} = 0" for p in sorted(params))
        decl = ",\n".join(f"    {d} wire [{w - 1}:0] {p}" for p, (d, w) in sorted(ports.items()))
        text.append(f"module {mod}{f' #({plist})' if plist else ''} (\n{decl}\n);\nendmodule\n")
    return "\n".join(text), sorted(modules)


def lint(verilog_path, top, extra_args=()):
    """`verilator --lint-only` of a generated Verilog file with blackbox stubs for what it does not define.
    Returns (returncode, list of %Warning/%Error lines, stubbed module names)."""
    with open(verilog_path) as f:
        stubs, names = blackbox_stubs(f.read())
    stub_path = os.path.join(os.path.dirname(os.path.abspath(verilog_path)), f"{top}_blackboxes.v")
    with open(stub_path, "w") as f:
        f.write(stubs)
    r = subprocess.run([VERILATOR, "--lint-only", "-Wno-fatal", "--top-module", top, *extra_args,
                        verilog_path, stub_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    messages = [line for line in r.stdout.split("\n") if line.startswith(("%Warning", "%Error"))]
    return r.returncode, messages, names

"""Verilator model of MiniSharpCore for long tests and benchmarks.

`VerilatedMiniSharp(**core_params)` converts the core to Verilog under build/minisharp/<hash>/, generates a
C++ harness for its ports and compiles it once (cached by the Verilog text). `run()` feeds frames to the
ports (each frame no earlier than its start cycle, back to back otherwise), drains the outputs with a
seeded random ready, and returns the output frames, the cycle numbers needed for throughput/latency
figures, and every counter. The Migen simulator needs ~0.1 s a cycle for the whole core; this runs
millions of cycles a minute.
"""
import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass, field

from migen import Module, Signal
from migen.fhdl.verilog import convert

from cores.minisharp.common import DROP_REASONS
from cores.minisharp.core import MiniSharpCore

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VERILATOR = os.environ.get("VERILATOR", "/usr/bin/verilator")


def verilator_available():
    return shutil.which(VERILATOR) is not None or os.path.exists(VERILATOR)


class _Top(Module):
    def __init__(self, core):
        self.submodules.core = core
        n, dw = core.num_ports, core.dw
        self.ios = []
        self.counters = []

        def io(name, width, target=None, out=False):
            s = Signal(width, name=name)
            if target is not None:
                self.comb += (s.eq(target) if out else target.eq(s))
            self.ios.append(s)
            return s

        io("policy", 1, core.policy)
        for i in range(n):
            sk, sr = core.sinks[i], core.sources[i]
            io(f"in{i}_valid", 1, sk.valid); io(f"in{i}_data", dw, sk.data); io(f"in{i}_last", 1, sk.last)
            io(f"in{i}_be", dw // 8, sk.last_be); io(f"in{i}_err", dw // 8, sk.error)
            io(f"in{i}_ready", 1, sk.ready, out=True)
            io(f"out{i}_valid", 1, sr.valid, out=True); io(f"out{i}_data", dw, sr.data, out=True)
            io(f"out{i}_last", 1, sr.last, out=True); io(f"out{i}_be", dw // 8, sr.last_be, out=True)
            io(f"out{i}_ready", 1, sr.ready)
            io(f"dst{i}", 48, core.dst_macs[i]); io(f"src{i}", 48, core.src_macs[i])
            io(f"fwd{i}", len(core.fwd_map[i]), core.fwd_map[i])
        names = [f"drop_{r}" for r, _ in DROP_REASONS]
        sigs = list(core.drops)
        for kind in ("rx_frames", "rx_drops", "fwd_frames", "tx_frames"):
            names += [f"{kind}{i}" for i in range(n)]
            sigs += getattr(core, kind)
        names += ["setups", "chunks"]
        sigs += [core.setups, core.chunks]
        for nm, sg in zip(names, sigs):
            io("c_" + nm, 32, sg, out=True)
            self.counters.append(nm)


_HARNESS = r"""
#include "Vtop.h"
#include "verilated.h"
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <deque>
#include <string>

struct Frame { uint64_t start; int err; std::vector<uint8_t> b; };
static uint64_t rng_state = 1;
static double rnd() { rng_state ^= rng_state << 13; rng_state ^= rng_state >> 7; rng_state ^= rng_state << 17;
                      return (rng_state >> 11) * (1.0 / 9007199254740992.0); }
static const int N = @N@, B = @B@;
@ACCESS@
int main(int argc, char** argv) {
  Verilated::commandArgs(argc, argv);
  FILE* in = fopen(argv[1], "r"); FILE* out = fopen(argv[2], "w");
  Vtop* t = new Vtop;
  std::deque<Frame> q[N];
  double ready_p[N]; for (int i = 0; i < N; i++) ready_p[i] = 1.0;
  uint64_t drain = 2000, max_cycles = 100000000ULL;
  char kw[32];
  t->policy = 0;
  while (fscanf(in, "%31s", kw) == 1) {
    if (!strcmp(kw, "policy")) { unsigned p; fscanf(in, "%u", &p); t->policy = p; }
    else if (!strcmp(kw, "port")) { unsigned i; unsigned long long d, s; unsigned f;
      fscanf(in, "%u %llx %llx %u", &i, &d, &s, &f); set_cfg(t, i, d, s, f); }
    else if (!strcmp(kw, "seed")) { fscanf(in, "%lu", &rng_state); if (!rng_state) rng_state = 1; }
    else if (!strcmp(kw, "ready")) { unsigned i; double p; fscanf(in, "%u %lf", &i, &p); ready_p[i] = p; }
    else if (!strcmp(kw, "drain")) { fscanf(in, "%lu", &drain); }
    else if (!strcmp(kw, "frame")) { unsigned i, e; unsigned long st; static char hex[20000];
      fscanf(in, "%u %lu %u %19999s", &i, &st, &e, hex); Frame f; f.start = st; f.err = e;
      for (size_t k = 0; hex[k] && hex[k+1]; k += 2) { unsigned v; sscanf(hex + k, "%2x", &v); f.b.push_back(v); }
      q[i].push_back(f); }
  }
  t->sys_rst = 1; t->sys_clk = 0; t->eval();
  for (int k = 0; k < 4; k++) { t->sys_clk = 1; t->eval(); t->sys_clk = 0; t->eval(); }
  t->sys_rst = 0;
  size_t pos[N] = {0}; std::vector<uint8_t> cur[N]; uint64_t first_cycle[N] = {0};
  uint64_t busy_cycles[N] = {0}, beats_in[N] = {0}, frame_no[N] = {0};
  uint64_t cyc = 0, idle = 0;
  for (; cyc < max_cycles; cyc++) {
    bool pending = false;
    for (int i = 0; i < N; i++) {
      bool v = !q[i].empty() && q[i].front().start <= cyc;
      pending |= !q[i].empty();
      uint64_t data = 0; int last = 0, be = 0, err = 0;
      if (v) { Frame& f = q[i].front();
        for (int k = 0; k < B && pos[i] + k < f.b.size(); k++) data |= (uint64_t)f.b[pos[i] + k] << (8 * k);
        if (pos[i] + B >= f.b.size()) { last = 1; be = 1 << (f.b.size() - pos[i] - 1); err = f.err; } }
      set_in(t, i, v, data, last, be, err);
      set_out_ready(t, i, rnd() < ready_p[i]);
    }
    t->eval();
    bool activity = false;
    for (int i = 0; i < N; i++) {
      int iv, ir, il; get_in(t, i, iv, ir, il);
      if (iv) busy_cycles[i]++;
      if (iv && ir) { beats_in[i]++; activity = true;
        pos[i] += B; if (il) { fprintf(out, "inlast %d %lu %lu\n", i, frame_no[i]++, cyc); pos[i] = 0; q[i].pop_front(); } }
      int ov, ordy, ol, obe; uint64_t od; get_out(t, i, ov, ordy, ol, obe, od);
      if (ov && ordy) { activity = true;
        if (cur[i].empty()) first_cycle[i] = cyc;
        int nb = B; if (ol && B > 1) { nb = 0; while (obe >> nb) nb++; }
        for (int k = 0; k < nb; k++) cur[i].push_back((od >> (8 * k)) & 0xff);
        if (ol) { fprintf(out, "out %d %lu %lu ", i, first_cycle[i], cyc);
          for (auto c : cur[i]) fprintf(out, "%02x", c); fprintf(out, "\n"); cur[i].clear(); } }
    }
    t->sys_clk = 1; t->eval(); t->sys_clk = 0; t->eval();
    if (activity || pending) idle = 0; else if (++idle >= drain) break;
  }
  fprintf(out, "cycles %lu\n", cyc);
  for (int i = 0; i < N; i++) fprintf(out, "beats %d %lu %lu\n", i, beats_in[i], busy_cycles[i]);
@COUNTERS@
  fclose(out); delete t; return 0;
}
"""


@dataclass
class VRun:
    outputs: list                      # per port: list of frames (bytes)
    out_cycles: list                   # per port: list of (first beat cycle, last beat cycle)
    in_last: list                      # per port: list of last-beat cycles of the input frames
    counters: dict
    cycles: int = 0
    beats: list = field(default_factory=list)   # per port: (accepted beats, cycles with valid)


class VerilatedMiniSharp:
    """Compiled Verilator model of MiniSharpCore(**params)."""
    def __init__(self, **params):
        if not verilator_available():
            raise RuntimeError(f"verilator not found at {VERILATOR}")
        core = MiniSharpCore(**params)
        self.num_ports, self.dw = core.num_ports, core.dw
        top = _Top(core)
        self.counter_names = top.counters
        verilog = str(convert(top, ios=set(top.ios), name="top"))
        h = hashlib.sha1(verilog.encode()).hexdigest()[:12]
        self.dir = os.path.join(ROOT, "build", "minisharp", "vsim_" + h)
        self.exe = os.path.join(self.dir, "obj_dir", "Vtop")
        if not os.path.exists(self.exe):
            os.makedirs(self.dir, exist_ok=True)
            with open(os.path.join(self.dir, "top.v"), "w") as f:
                f.write(verilog)
            with open(os.path.join(self.dir, "harness.cpp"), "w") as f:
                f.write(self._harness())
            subprocess.run([VERILATOR, "--cc", "--exe", "--build", "-O2", "-Wno-fatal", "-Wno-lint",
                            "-Wno-WIDTH", "-j", "1", "--top-module", "top", "top.v", "harness.cpp"],
                           cwd=self.dir, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _harness(self):
        n = self.num_ports
        acc = ["static void set_in(Vtop* t, int i, int v, uint64_t d, int l, int be, int e) { switch (i) {"]
        acc += [f"case {i}: t->in{i}_valid = v; t->in{i}_data = d; t->in{i}_last = l; t->in{i}_be = be; "
                f"t->in{i}_err = e ? 1 : 0; break;" for i in range(n)]
        acc += ["} }", "static void set_out_ready(Vtop* t, int i, int r) { switch (i) {"]
        acc += [f"case {i}: t->out{i}_ready = r; break;" for i in range(n)]
        acc += ["} }", "static void get_in(Vtop* t, int i, int& v, int& r, int& l) { switch (i) {"]
        acc += [f"case {i}: v = t->in{i}_valid; r = t->in{i}_ready; l = t->in{i}_last; break;" for i in range(n)]
        acc += ["} }", "static void get_out(Vtop* t, int i, int& v, int& r, int& l, int& be, uint64_t& d) {"
                " switch (i) {"]
        acc += [f"case {i}: v = t->out{i}_valid; r = t->out{i}_ready; l = t->out{i}_last; be = t->out{i}_be; "
                f"d = t->out{i}_data; break;" for i in range(n)]
        acc += ["} }", "static void set_cfg(Vtop* t, int i, uint64_t d, uint64_t s, int f) { switch (i) {"]
        acc += [f"case {i}: t->dst{i} = d; t->src{i} = s; t->fwd{i} = f; break;" for i in range(n)]
        acc += ["} }"]
        cnt = "\n".join(f'  fprintf(out, "cnt {c} %u\\n", (unsigned)t->c_{c});' for c in self.counter_names)
        return (_HARNESS.replace("@N@", str(n)).replace("@B@", str(self.dw // 8))
                .replace("@ACCESS@", "\n".join(acc)).replace("@COUNTERS@", cnt))

    def run(self, inputs, policy=0, macs=None, fwd_map=None, ready_p=1.0, seed=1, drain=2000, tag="run"):
        """inputs[i]: list of frames: bytes, (start_cycle, bytes) or (start_cycle, bytes, phy_error) for port i.
        macs[i] = (dst, src) ints; ready_p: probability of output ready, one value or one per port."""
        stim = os.path.join(self.dir, f"{tag}.stim")
        res = os.path.join(self.dir, f"{tag}.out")
        with open(stim, "w") as f:
            f.write(f"policy {policy}\nseed {seed}\ndrain {drain}\n")
            rp = ready_p if isinstance(ready_p, (list, tuple)) else [ready_p] * self.num_ports
            for i, p in enumerate(rp):
                f.write(f"ready {i} {p}\n")
            for i in range(self.num_ports):
                d, s = macs[i] if macs else (0, 0)
                fw = fwd_map[i] if fwd_map else (i + 1) % self.num_ports
                f.write(f"port {i} {d:x} {s:x} {fw}\n")
            for i, frames in enumerate(inputs):
                for fr in frames:
                    fr = fr if isinstance(fr, tuple) else (0, fr)
                    start, data, err = (fr + (0,))[:3]
                    f.write(f"frame {i} {start} {int(err)} {bytes(data).hex()}\n")
        subprocess.run([self.exe, stim, res], check=True, cwd=self.dir)
        n = self.num_ports
        r = VRun([[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)], {})
        r.beats = [None] * n
        with open(res) as f:
            for line in f:
                p = line.split()
                if p[0] == "out":
                    r.outputs[int(p[1])].append(bytes.fromhex(p[4]) if len(p) > 4 else b"")
                    r.out_cycles[int(p[1])].append((int(p[2]), int(p[3])))
                elif p[0] == "inlast":
                    r.in_last[int(p[1])].append(int(p[3]))
                elif p[0] == "cnt":
                    r.counters[p[1]] = int(p[2])
                elif p[0] == "cycles":
                    r.cycles = int(p[1])
                elif p[0] == "beats":
                    r.beats[int(p[1])] = (int(p[2]), int(p[3]))
        return r

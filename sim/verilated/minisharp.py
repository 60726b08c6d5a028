"""MiniSharpCore as a Verilated model (sim.verilated), for the long end-to-end tests and the benchmark.

    vm = VerilatedMiniSharp(num_ports=3, dw=8, chunk_elements=8)     # built once, cached by sim.verilated
    run = vm.run(inputs, macs=..., ready_p=0.5, seed=3)
    run.outputs, run.out_cycles, run.in_last, run.counters, run.cycles, run.beats

`run()` feeds frames to the ports (each frame no earlier than its start cycle, back to back otherwise),
drains the outputs with a seeded random ready, and returns the output frames, the cycle numbers needed for
throughput/latency figures, and every counter (`counters[name]` by the core's counter names). The Migen
simulator needs ~0.1 s a cycle for the whole core; this runs millions of cycles a minute.

A core with a management port (mgmt_mac) has one stream more, numbered num_ports: its inputs are the
management stack's frames (mgmt_sink), its outputs the frames delivered to it (mgmt_source).

Stimulus file, one item a line: `policy P`, `cfg ADMIN_PORTS MAC_FILTER MAC_HEX SLOT_TIMEOUT CTX_TIMEOUT`,
`mgmt PORTS SRC_FILTER SRC_MAC_HEX` (management cores), `seed S`, `drain CYCLES` (idle cycles that end the run), `ready
PORT P` (probability of output ready), `port I DST_HEX SRC_HEX FWD` (COL_RES MACs and forwarding map),
`frame PORT START PHY_ERROR HEX_BYTES`. Output file: `out PORT FIRST_CYCLE LAST_CYCLE HEX_BYTES` per output
frame, `inlast PORT N CYCLE` per input frame, `cycles N`, `beats PORT TAKEN VALID_CYCLES`, `cnt NAME VALUE`.
"""
import os
import tempfile
from dataclasses import dataclass, field

from cores.minisharp.common import DEFAULT_MAC, counters
from cores.minisharp.core import MiniSharpCore
from sim.verilated.build import Model
from sim.verilated.verilog import flat_ports

__all__ = ["VerilatedMiniSharp", "VRun", "core_ports", "CFG_DEFAULTS", "SMALL_CORE"]
# The small core of the end-to-end tests and of the MiniSharp bench's quick mode (one Verilator build for both):
# 3 x 8-bit ports, 8-element chunks, 8 ranks, 4 slots, idle-timeout ticks of 16 cycles.
SMALL_CORE = dict(num_ports=3, dw=8, chunk_elements=8, max_ranks=8, n_slots=4, tick_log2=4)
CFG_DEFAULTS = dict(admin_ports=None, mac_filter=0, mac=DEFAULT_MAC, slot_timeout=0, ctx_timeout=0)
MGMT_DEFAULTS = dict(mgmt_ports=1, mgmt_src_filter=0, mgmt_src_mac=0)


def core_ports(core):
    """Every port, configuration input and counter of a MiniSharpCore as plainly named ports (name ->
    (signal, is_input)); the counters as c_<counter name>; a management port as stream number num_ports."""
    ports = {"policy": (core.policy, True), "admin_ports": (core.admin_ports, True),
             "mac_filter": (core.mac_filter, True), "mac": (core.mac, True),
             "slot_timeout": (core.slot_timeout, True), "ctx_timeout": (core.ctx_timeout, True)}
    for i in range(core.num_ports):
        sk, sr = core.sinks[i], core.sources[i]
        ports.update({
            f"in{i}_valid": (sk.valid, True), f"in{i}_data": (sk.data, True), f"in{i}_last": (sk.last, True),
            f"in{i}_be": (sk.last_be, True), f"in{i}_err": (sk.error, True), f"in{i}_ready": (sk.ready, False),
            f"out{i}_valid": (sr.valid, False), f"out{i}_data": (sr.data, False), f"out{i}_last": (sr.last, False),
            f"out{i}_be": (sr.last_be, False), f"out{i}_ready": (sr.ready, True),
            f"dst{i}": (core.dst_macs[i], True), f"src{i}": (core.src_macs[i], True),
            f"fwd{i}": (core.fwd_map[i], True),
        })
    if core.with_mgmt:
        n, sk, sr = core.num_ports, core.mgmt_sink, core.mgmt_source
        ports.update({
            f"in{n}_valid": (sk.valid, True), f"in{n}_data": (sk.data, True), f"in{n}_last": (sk.last, True),
            f"in{n}_be": (sk.last_be, True), f"in{n}_err": (sk.error, True), f"in{n}_ready": (sk.ready, False),
            f"out{n}_valid": (sr.valid, False), f"out{n}_data": (sr.data, False), f"out{n}_last": (sr.last, False),
            f"out{n}_be": (sr.last_be, False), f"out{n}_ready": (sr.ready, True),
            "mgmt_ports": (core.mgmt_ports, True), "mgmt_src_filter": (core.mgmt_src_filter, True),
            "mgmt_src_mac": (core.mgmt_src_mac, True),
        })
    ports.update({f"c_{name}": (core.counters[name], False) for name, _ in counters(core.num_ports, core.with_mgmt)})
    return ports


_HARNESS = r"""
#include "Vtop.h"
#include "verilated.h"
#include <cstdio>
#include <cstdint>
#include <cstring>
#include <vector>
#include <deque>
#include <string>
#include <algorithm>

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
  uint64_t drain = 2000, max_cycles = 100000000ULL, repeat = 1;
  char kw[32];
  t->policy = 0; t->admin_ports = (1u << N) - 1; t->mac = @MAC@ULL;
  while (fscanf(in, "%31s", kw) == 1) {
    if (!strcmp(kw, "policy")) { unsigned p; fscanf(in, "%u", &p); t->policy = p; }
    else if (!strcmp(kw, "cfg")) { unsigned a, mf, st, ct; unsigned long long m;
      fscanf(in, "%u %u %llx %u %u", &a, &mf, &m, &st, &ct);
      t->admin_ports = a; t->mac_filter = mf; t->mac = m; t->slot_timeout = st; t->ctx_timeout = ct; }
    else if (!strcmp(kw, "mgmt")) { unsigned a, f; unsigned long long m;
      fscanf(in, "%u %u %llx", &a, &f, &m); set_mgmt(t, a, f, m); }
    else if (!strcmp(kw, "port")) { unsigned i; unsigned long long d, s; unsigned f;
      fscanf(in, "%u %llx %llx %u", &i, &d, &s, &f); set_cfg(t, i, d, s, f); }
    else if (!strcmp(kw, "seed")) { fscanf(in, "%lu", &rng_state); if (!rng_state) rng_state = 1; }
    else if (!strcmp(kw, "ready")) { unsigned i; double p; fscanf(in, "%u %lf", &i, &p); ready_p[i] = p; }
    else if (!strcmp(kw, "drain")) { fscanf(in, "%lu", &drain); }
    else if (!strcmp(kw, "repeat")) { fscanf(in, "%lu", &repeat); max_cycles *= repeat; }
    else if (!strcmp(kw, "frame")) { unsigned i, e; unsigned long st; static char hex[20000];
      fscanf(in, "%u %lu %u %19999s", &i, &st, &e, hex); Frame f; f.start = st; f.err = e;
      for (size_t k = 0; hex[k] && hex[k+1]; k += 2) { unsigned v; sscanf(hex + k, "%2x", &v); f.b.push_back(v); }
      q[i].push_back(f); }
  }
  // Epochs after the first send every frame again (starts relative to the epoch), once the core has been
  // idle for `drain` cycles; each port's output frames (in any order) must equal the first epoch's.
  std::vector<Frame> all[N]; std::vector<std::string> outs0[N], outs[N];
  for (int i = 0; i < N; i++) all[i].assign(q[i].begin(), q[i].end());
  uint64_t epoch = 0, mismatches = 0;
  t->rst = 1; t->clk = 0; t->eval();
  for (int k = 0; k < 4; k++) { t->clk = 1; t->eval(); t->clk = 0; t->eval(); }
  t->rst = 0;
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
        pos[i] += B; if (il) { if (!epoch) fprintf(out, "inlast %d %lu %lu\n", i, frame_no[i]++, cyc);
                               pos[i] = 0; q[i].pop_front(); } }
      int ov, ordy, ol, obe; uint64_t od; get_out(t, i, ov, ordy, ol, obe, od);
      if (ov && ordy) { activity = true;
        if (cur[i].empty()) first_cycle[i] = cyc;
        int nb = B; if (ol && B > 1) { nb = 0; while (obe >> nb) nb++; }
        for (int k = 0; k < nb; k++) cur[i].push_back((od >> (8 * k)) & 0xff);
        if (ol) { std::string hex; char h[3];
          for (auto c : cur[i]) { snprintf(h, sizeof h, "%02x", c); hex += h; }
          if (!epoch) { fprintf(out, "out %d %lu %lu %s\n", i, first_cycle[i], cyc, hex.c_str()); outs0[i].push_back(hex); }
          else outs[i].push_back(hex);
          cur[i].clear(); } }
    }
    t->clk = 1; t->eval(); t->clk = 0; t->eval();
    if (activity || pending) idle = 0;
    else if (++idle >= drain) {
      for (int i = 0; i < N; i++) {
        if (!epoch) { std::sort(outs0[i].begin(), outs0[i].end()); continue; }
        std::sort(outs[i].begin(), outs[i].end());
        size_t n = std::min(outs[i].size(), outs0[i].size());
        mismatches += std::max(outs[i].size(), outs0[i].size()) - n;
        for (size_t k = 0; k < n; k++) mismatches += outs[i][k] != outs0[i][k];
        outs[i].clear();
      }
      if (++epoch == repeat) break;
      for (int i = 0; i < N; i++) for (auto f : all[i]) { f.start += cyc + 1; q[i].push_back(f); }
      idle = 0;
    }
  }
  fprintf(out, "cycles %lu\n", cyc);
  fprintf(out, "epochs %lu %lu\n", epoch, mismatches);
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
    epochs: int = 1                    # times the inputs were sent (run(repeat=...))
    mismatches: int = 0                # output frames of the later epochs that differ from the first's


class VerilatedMiniSharp:
    """The Verilated model of MiniSharpCore(**params) (build=False: `model.digest` only, built on first run)."""
    def __init__(self, build=True, **params):
        core = MiniSharpCore(**params)
        self.num_ports, self.dw, self.with_mgmt = core.num_ports, core.dw, core.with_mgmt
        self.streams = core.num_ports + int(core.with_mgmt)
        self.counter_names = [name for name, _ in counters(core.num_ports, core.with_mgmt)]
        self.model = Model("minisharp", {"top.v": flat_ports(core, core_ports(core), "top")}, "top", self._harness(),
                           build=build)

    def _harness(self):
        n = self.streams
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
        acc += [f"case {i}: t->dst{i} = d; t->src{i} = s; t->fwd{i} = f; break;" for i in range(self.num_ports)]
        acc += ["} }", "static void set_mgmt(Vtop* t, unsigned a, unsigned f, uint64_t m) {"]
        if self.with_mgmt:
            acc += ["t->mgmt_ports = a; t->mgmt_src_filter = f; t->mgmt_src_mac = m;"]
        acc += ["}"]
        cnt = "\n".join(f'  fprintf(out, "cnt {c} %u\\n", (unsigned)t->c_{c});' for c in self.counter_names)
        return (_HARNESS.replace("@N@", str(n)).replace("@B@", str(self.dw // 8))
                .replace("@MAC@", hex(DEFAULT_MAC)).replace("@ACCESS@", "\n".join(acc)).replace("@COUNTERS@", cnt))

    def run(self, inputs, policy=0, macs=None, fwd_map=None, ready_p=1.0, seed=1, drain=2000, repeat=1, **cfg):
        """inputs[i]: list of frames: bytes, (start_cycle, bytes) or (start_cycle, bytes, phy_error) for port i
        (with a management port, inputs[num_ports]: the management stack's frames).
        macs[i] = (dst, src) ints; ready_p: probability of output ready, one value or one per stream.
        cfg: admin_ports, mac_filter, mac, slot_timeout, ctx_timeout, and with a management port
        mgmt_ports, mgmt_src_filter, mgmt_src_mac (the core's inputs; reset values if absent).
        repeat: send the inputs that many times, each time once the core was idle for `drain` cycles (a soak:
        outputs are the first epoch's, `mismatches` counts the later epochs' output frames that differ)."""
        with tempfile.TemporaryDirectory(dir=self.model.dir) as tmp:
            stim, res = os.path.join(tmp, "run.stim"), os.path.join(tmp, "run.out")
            with open(stim, "w") as f:
                f.write(self._stimulus(inputs, policy, macs, fwd_map, ready_p, seed, drain, cfg) + f"repeat {repeat}\n")
            self.model.run([stim, res])
            with open(res) as f:
                return self._parse(f)

    def _stimulus(self, inputs, policy, macs, fwd_map, ready_p, seed, drain, cfg):
        known = dict(CFG_DEFAULTS, **(MGMT_DEFAULTS if self.with_mgmt else {}))
        unknown = set(cfg) - set(known)
        if unknown:
            raise TypeError(f"unknown core inputs {sorted(unknown)}; known: {sorted(known)}")
        c = dict(known, admin_ports=2**self.num_ports - 1)
        c.update(cfg)
        lines = [f"policy {policy}", f"seed {seed}", f"drain {drain}",
                 f"cfg {c['admin_ports']} {int(c['mac_filter'])} {c['mac']:x} {c['slot_timeout']} {c['ctx_timeout']}"]
        if self.with_mgmt:
            lines.append(f"mgmt {c['mgmt_ports']} {int(c['mgmt_src_filter'])} {c['mgmt_src_mac']:x}")
        rp = ready_p if isinstance(ready_p, (list, tuple)) else [ready_p] * self.streams
        lines += [f"ready {i} {p}" for i, p in enumerate(rp)]
        for i in range(self.num_ports):
            d, s = macs[i] if macs else (0, 0)
            fw = fwd_map[i] if fwd_map else (i + 1) % self.num_ports
            lines.append(f"port {i} {d:x} {s:x} {fw}")
        for i, frames in enumerate(inputs):
            for fr in frames:
                fr = fr if isinstance(fr, tuple) else (0, fr)
                start, data, err = (fr + (0,))[:3]
                lines.append(f"frame {i} {start} {int(err)} {bytes(data).hex()}")
        return "\n".join(lines) + "\n"

    def _parse(self, lines):
        n = self.streams
        r = VRun([[] for _ in range(n)], [[] for _ in range(n)], [[] for _ in range(n)], {})
        r.beats = [None] * n
        for line in lines:
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
            elif p[0] == "epochs":
                r.epochs, r.mismatches = int(p[1]), int(p[2])
            elif p[0] == "beats":
                r.beats[int(p[1])] = (int(p[2]), int(p[3]))
        return r

"""A whole synchronizer grid as a Verilated model, for grids too large for Migen's simulator (16x16).

`GridSim(width, height, ...)` writes the Verilog of each distinct `SyncNode` configuration once (Migen
`convert`, marked no-inline so that Verilator compiles it once), a `sync_grid` top that instantiates one node
per participant and wires them exactly as `cores.sync.grid.grid_links` says (with the same hop_latency -
min_hop_latency register stages on every wire as `SyncGrid`), and a C++ harness, built by `sim.verilated`.

`GridSim.run(schedules, ...)` drives it like `tests/test_sync_grid.py` drives the Migen grid: every
participant works through its own schedule of triggers, and triggers the next round of an ident only after
it has presented its own completion of the previous round; `gap` idle cycles before each trigger,
`not_before` (a cycle) holds a trigger back, `raw` entries are sent without waiting and are not rounds (bad
input). Completion back-pressure: `source.ready` is 1 with probability `ready_prob` each cycle.
"""
import os
from collections import namedtuple

from cores.sync.common import (DEFAULT_HOP_LATENCY, DEFAULT_VALUE_WIDTH, DIR_NAMES, LINK_WIDTH, MAX_IDENTS, OPPOSITE,
                               min_hop_latency)
from cores.sync.grid import grid_nodes, grid_links
from cores.sync.node import SyncNode
from sim.verilated.build import Model
from sim.verilated.verilog import convert

Trigger = namedtuple("Trigger", "ident mode value gap not_before raw", defaults=(0, 0, False))

# Per-participant top-level ports: (name, node attribute path, direction).
_PORTS = [("sink_valid", ("sink", "valid"), "input"), ("sink_ready", ("sink", "ready"), "output"),
          ("sink_ident", ("sink", "ident"), "input"), ("sink_mode", ("sink", "mode"), "input"),
          ("sink_value", ("sink", "value"), "input"),
          ("source_valid", ("source", "valid"), "output"), ("source_ready", ("source", "ready"), "input"),
          ("source_ident", ("source", "ident"), "output"), ("source_mode", ("source", "mode"), "output"),
          ("source_error", ("source", "error"), "output"), ("source_value", ("source", "value"), "output"),
          ("ev_trigger_drop", ("ev_trigger_drop",), "output"), ("ev_rx_drop", ("ev_rx_drop",), "output"),
          ("ev_mismatch", ("ev_mismatch",), "output")]

HARNESS = r"""
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <vector>
#include <type_traits>
#include <utility>
#include "Vsync_grid.h"
#include "verilated.h"
#define T(port) std::remove_reference<decltype(t->p0_##port)>::type
struct Entry { int ident, mode; uint64_t value; int gap, not_before, raw; };
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    Vsync_grid *t = new Vsync_grid;
    const int N = %(n)d;
%(tables)s
    FILE *f = fopen(argv[1], "r");
    if (!f) return 2;
    long max_cycles, ready_pm, tail, repeat; unsigned long long seed;
    if (fscanf(f, "%%ld %%ld %%llu %%ld %%ld", &max_cycles, &ready_pm, &seed, &tail, &repeat) != 5) return 2;
    std::vector<std::vector<Entry>> sch(N);
    long expected = 0;
    for (int p = 0; p < N; p++) {
        int cnt; if (fscanf(f, "%%d", &cnt) != 1) return 2;
        for (int k = 0; k < cnt; k++) {
            Entry e; unsigned long long v;
            if (fscanf(f, "%%d %%d %%llu %%d %%d %%d", &e.ident, &e.mode, &v, &e.gap, &e.not_before, &e.raw) != 6)
                return 2;
            e.value = v; sch[p].push_back(e); expected += !e.raw;
        }
    }
    fclose(f);
    std::vector<int> idx(N, 0), gap(N, 0), driving(N, 0);
    std::vector<std::vector<int>> rounds(N, std::vector<int>(%(idents)d, 0)), seen(N, std::vector<int>(%(idents)d, 0));
    for (int p = 0; p < N; p++) if (!sch[p].empty()) gap[p] = sch[p][0].gap;
    // Epochs after the first run the schedules again once the last one's completions are in and its tail
    // passed; completions are printed in the first epoch and compared with its own rounds in the later ones.
    std::vector<std::vector<int>> per_epoch(N, std::vector<int>(%(idents)d, 0));
    for (int p = 0; p < N; p++) for (auto &e : sch[p]) per_epoch[p][e.ident] += !e.raw;
    typedef std::pair<unsigned long long, int> Done;         // value, mode * 2 + error
    std::vector<std::vector<std::vector<Done>>> first(N, std::vector<std::vector<Done>>(%(idents)d));
    long epoch = 0, mismatches = 0, epoch_expected = expected;
    uint64_t rs = seed * 0x9E3779B97F4A7C15ull + 1;
    long ncpl = 0, ev_td = 0, ev_rd = 0, ev_mm = 0, tail_end = -1, cycle;
    int issued = 0;
    for (int p = 0; p < N; p++) issued += sch[p].empty();
    t->sys_clk = 0; t->sys_rst = 1; t->eval(); t->sys_clk = 1; t->eval(); t->sys_clk = 0; t->eval();
    t->sys_rst = 0;
    for (cycle = 0; cycle < max_cycles; cycle++) {
        if (tail_end < 0 && issued == N && ncpl >= expected) tail_end = cycle + tail;
        if (tail_end >= 0 && cycle >= tail_end) {
            if (++epoch == repeat) break;
            issued = 0; tail_end = -1; expected += epoch_expected;
            for (int p = 0; p < N; p++) { idx[p] = 0; issued += sch[p].empty(); if (!sch[p].empty()) gap[p] = sch[p][0].gap; }
        }
        for (int p = 0; p < N; p++) {
            rs ^= rs << 13; rs ^= rs >> 7; rs ^= rs << 17;
            *src_ready[p] = (long)(rs %% 1000) < ready_pm;
            if (!driving[p] && idx[p] < (int)sch[p].size()) {
                const Entry &e = sch[p][idx[p]];
                bool go = (e.raw || seen[p][e.ident] >= rounds[p][e.ident]) && cycle >= e.not_before;
                if (go && gap[p] == 0) {
                    driving[p] = 1;
                    *snk_ident[p] = e.ident; *snk_mode[p] = e.mode; *snk_value[p] = e.value;
                } else if (go) gap[p]--;
            }
            *snk_valid[p] = driving[p];
        }
        t->eval();
        for (int p = 0; p < N; p++) {
            if (driving[p] && *snk_ready[p]) {
                const Entry &e = sch[p][idx[p]];
                if (!e.raw && !epoch) printf("A %%ld %%d %%d %%d\n", cycle, p, e.ident, rounds[p][e.ident]);
                if (!e.raw) rounds[p][e.ident]++;
                driving[p] = 0;
                if (++idx[p] == (int)sch[p].size()) issued++;
                else gap[p] = sch[p][idx[p]].gap;
            }
            if (*src_valid[p] && *src_ready[p]) {
                int id = *src_ident[p];
                // an error completion's mode and value depend on which contributions met first: its flag only
                Done key(*src_error[p] ? 0 : (unsigned long long)*src_value[p],
                         *src_error[p] ? 1 : (int)*src_mode[p] * 2);
                if (!epoch) {
                    printf("C %%ld %%d %%d %%d %%d %%llu\n", cycle, p, id, (int)*src_mode[p], (int)*src_error[p],
                           (unsigned long long)*src_value[p]);
                    first[p][id].push_back(key);
                } else {
                    size_t r = seen[p][id] - epoch * per_epoch[p][id];
                    mismatches += r >= first[p][id].size() || first[p][id][r] != key;
                }
                seen[p][id]++; ncpl++;
            }
            ev_td += *ev_trigger_drop[p]; ev_rd += *ev_rx_drop[p]; ev_mm += *ev_mismatch[p];
        }
        t->sys_clk = 1; t->eval(); t->sys_clk = 0;
    }
    printf("E %%ld %%ld %%ld\nEND %%ld\nEPOCHS %%ld %%ld\n", ev_td, ev_rd, ev_mm, cycle, epoch, mismatches);
    t->final();
    delete t;
    return 0;
}
"""

_CPP_NAMES = {"sink_valid": "snk_valid", "sink_ready": "snk_ready", "sink_ident": "snk_ident",
              "sink_mode": "snk_mode", "sink_value": "snk_value", "source_valid": "src_valid",
              "source_ready": "src_ready", "source_ident": "src_ident", "source_mode": "src_mode",
              "source_error": "src_error", "source_value": "src_value"}


def _get(node, path):
    obj = node
    for a in path:
        obj = getattr(obj, a)
    return obj


class GridSim:
    """A Verilator build of a width x height grid (+ lamlet) of `SyncNode`s; see the module docstring."""
    def __init__(self, width, height, n_idents=MAX_IDENTS, value_width=DEFAULT_VALUE_WIDTH,
                 hop_latency=DEFAULT_HOP_LATENCY, with_lamlet=True, build=True):
        if value_width > 64:
            raise ValueError("the harness handles values up to 64 bits")
        if hop_latency < min_hop_latency(value_width):
            raise ValueError(f"hop_latency {hop_latency} is below {min_hop_latency(value_width)}")
        self.width, self.height, self.with_lamlet = width, height, with_lamlet
        self.n_idents, self.value_width, self.hop_latency = n_idents, value_width, hop_latency
        self.name = f"{width}x{height}_i{n_idents}_v{value_width}_h{hop_latency}{'_lamlet' if with_lamlet else ''}"
        verilog, self.n_participants = self._verilog()
        self.model = Model(f"sync_grid_{self.name}", {"grid.v": verilog}, "sync_grid", self._cpp(self.n_participants),
                           build=build)
        self.build_seconds = self.model.build_seconds

    def _verilog(self):
        nodes = grid_nodes(self.width, self.height, self.with_lamlet)
        modules, mod_names, ports = [], {}, {}
        for cfg in dict.fromkeys(nodes):
            neighbours, fold = cfg
            name = "sync_node_" + "_".join(DIR_NAMES[d] for d in neighbours) + ("_fold" if fold is not None else "")
            node = SyncNode(neighbours, fold=fold, n_idents=self.n_idents, value_width=self.value_width)
            sigs = {pn: _get(node, path) for pn, path, _ in _PORTS}
            for d in neighbours:
                for kind in ("tx", "rx"):
                    for f in ("valid", "data"):
                        sigs[f"{kind}_{DIR_NAMES[d]}_{f}"] = getattr(getattr(node, kind)[d], f)
            v, ns = convert(node, ios=sigs.values(), name=name)
            head_end = v.index(");", v.index(f"module {name}(")) + 2
            modules.append(v[:head_end] + "\n/*verilator no_inline_module*/" + v[head_end:])
            mod_names[cfg] = name
            ports[cfg] = {pn: (ns.get_name(s), len(s)) for pn, s in sigs.items()}
        n = len(nodes)
        width_of = ports[nodes[0]]
        decl = ["input sys_clk", "input sys_rst"]
        for i in range(n):
            for pn, _, direction in _PORTS:
                w = width_of[pn][1]
                decl.append(f"{direction} {'[%d:0] ' % (w - 1) if w > 1 else ''}p{i}_{pn}")
        body = []
        rx_of = {}
        stages = self.hop_latency - min_hop_latency(self.value_width)
        for k, (src, d, dst) in enumerate(grid_links(self.width, self.height, self.with_lamlet)):
            body.append(f"wire l{k}_valid_0; wire [{LINK_WIDTH - 1}:0] l{k}_data_0;")
            for s in range(1, stages + 1):
                body.append(f"reg l{k}_valid_{s} = 1'd0; reg [{LINK_WIDTH - 1}:0] l{k}_data_{s} = {LINK_WIDTH}'d0;")
                body.append(f"always @(posedge sys_clk) begin l{k}_valid_{s} <= l{k}_valid_{s - 1}; "
                            f"l{k}_data_{s} <= l{k}_data_{s - 1}; end")
            rx_of[(dst, OPPOSITE[d])] = (f"l{k}_valid_{stages}", f"l{k}_data_{stages}")
            rx_of[("tx", src, d)] = (f"l{k}_valid_0", f"l{k}_data_0")
        for i, cfg in enumerate(nodes):
            p = ports[cfg]
            conns = [".sys_clk(sys_clk)", ".sys_rst(sys_rst)"]
            conns += [f".{p[pn][0]}(p{i}_{pn})" for pn, _, _ in _PORTS]
            for d in cfg[0]:
                tv, td = rx_of[("tx", i, d)]
                rv, rd = rx_of[(i, d)]
                conns += [f".{p['tx_%s_valid' % DIR_NAMES[d]][0]}({tv})", f".{p['tx_%s_data' % DIR_NAMES[d]][0]}({td})",
                          f".{p['rx_%s_valid' % DIR_NAMES[d]][0]}({rv})", f".{p['rx_%s_data' % DIR_NAMES[d]][0]}({rd})"]
            body.append(f"{mod_names[cfg]} n{i}(" + ", ".join(conns) + ");")
        top = "module sync_grid(\n\t" + ",\n\t".join(decl) + "\n);\n" + "\n".join(body) + "\nendmodule\n"
        return "\n".join(modules) + "\n" + top, n

    def _cpp(self, n):
        tables = []
        for pn, _, _ in _PORTS:
            var = _CPP_NAMES.get(pn, pn)
            tables.append(f"    T({pn}) *{var}[N] = {{" + ", ".join(f"&t->p{i}_{pn}" for i in range(n)) + "};")
        return HARNESS % {"n": n, "idents": MAX_IDENTS, "tables": "\n".join(tables)}

    def run(self, schedules, max_cycles, ready_prob=1.0, seed=1, tail=None, repeat=1):
        """schedules[p]: list of `Trigger`s (or tuples in its field order) of participant p. `repeat`: run the
        schedules that many times (a soak; `self.last_epochs` = (epochs run, completions of the later epochs
        that differ from the first epoch's same round: mode, error and value, the error flag alone for an error
        completion)); the completions returned are the first epoch's, the events and cycles the whole run's.
        Returns (accepts, completions, events, cycles): accepts[(p, ident, round)] = cycle the trigger was
        taken, completions[p] = [(cycle, ident, mode, error, value)], events = dict of the summed
        ev_trigger_drop / ev_rx_drop / ev_mismatch, cycles = cycles simulated."""
        if len(schedules) != self.n_participants:
            raise ValueError(f"{len(schedules)} schedules for {self.n_participants} participants")
        tail = max(self.width, self.height) * self.hop_latency + 10 if tail is None else tail
        lines = [f"{max_cycles} {round(ready_prob * 1000)} {seed} {tail} {repeat}"]
        for sch in schedules:
            es = [Trigger(*e) for e in sch]
            lines.append(" ".join([str(len(es))] + [f"{e.ident} {e.mode} {e.value} {e.gap} {e.not_before} "
                                                     f"{int(bool(e.raw))}" for e in es]))
        path = os.path.join(self.model.dir, f"in_{os.getpid()}_{id(self)}.txt")
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        try:
            out = self.model.run([path])
        finally:
            os.remove(path)
        accepts, completions, events, cycles = {}, {p: [] for p in range(self.n_participants)}, {}, None
        for line in out.splitlines():
            f = line.split()
            if f[0] == "A":
                accepts[(int(f[2]), int(f[3]), int(f[4]))] = int(f[1])
            elif f[0] == "C":
                completions[int(f[2])].append(tuple(int(x) for x in (f[1],) + tuple(f[3:])))
            elif f[0] == "E":
                events = dict(zip(("trigger_drop", "rx_drop", "mismatch"), (int(x) for x in f[1:])))
            elif f[0] == "END":
                cycles = int(f[1])
            elif f[0] == "EPOCHS":
                self.last_epochs = (int(f[1]), int(f[2]))
        return accepts, completions, events, cycles

"""RIFL network benchmark: the paper's evaluation method applied to the whole switch in RTL (make bench
BENCH=rifl_net). One n-port RIFLSwitchNode (finite VOQs, per-VOQ flow control over the links, iSLIP with k
iterations, Batcher-Banyan) with n RIFLHosts (L2 segmenter and reassembler on an L1 endpoint) over lossy
links, one Verilated model per (n, k) (sim/verilated/rifl_net.py).

Traffic: software.switch.traffic traces (uniform Bernoulli, bursty with geometric bursts of 1024 bytes a
port on average; fixed 256 k-byte or variable 64-2048-byte packets; a destination is never the input port).
A packet of c cells is offered by its source host at cycle CELL_SLOTS * (arrival cell time of its first
cell), as an upper-layer packet of 256 c - 2 bytes (its c segments full: the 2-byte length prefix takes
the rest); each host keeps a queue per destination without bound (the trace's sources: VOQs at the
source, NetModel.run(host_voqs=True)) and starts the oldest packet whose VOQ at the switch is not paused;
receivers are always ready. Bursty traffic with variable packets is the Bernoulli trace: its mean packet
(1056 bytes) already exceeds the 1024-byte burst mean, so a burst is one packet. A cell time is
CELL_SLOTS = 9 frame slots (a 262-byte Layer 2 packet in 30-byte frames at F = 256), and the fabric's cell
time is the same (RIFLNetwork's default: no speedup, as in the spec's evaluation; its 256-bit ports move a
cell in 8 of the 9 cycles) but for k = 4, whose decision needs 2 k + 2 = 10 cycles: a fabric slower than
its links.

Per point: utilisation = cells delivered to the receiving hosts during [T/4, T) per host per cell time;
latency of each packet whose first cell arrived in [T/4, T) = (delivery of its last byte - offer) / 9 cell
times, end to end through the RTL (links of LATENCY cycles both ways, L1 and L2 pipelines, the VOQs, the
fabric). References on the same trace: SAFC (output queueing, software.switch.reference.safc) and the RTL
iSLIP scheduler alone with unbounded VOQs (sim.verilated.switch), both with the spec's fixed 17 cell
times (software.switch.traffic.stats). Every point checks each packet: lost, duplicated, reordered (per
flow), corrupted (the harness compares every byte), and the channels' undetected-error counts.
Volume: FLOW_BYTES (2.5 MB) per flow at N = 8 for loads >= 0.5; lighter loads keep the cycles of the 0.5
run (their volume scaled by load / 0.5); N = 16 and 32 are scaled by SCALE[n]. The JSON's top-level
`points` lists every point.

Every point is a task of sim.bench.sweep (`measure`: every core or a Ray cluster; cached in build/bench/cache/
by its parameters and the digests of the two models it runs, so an interrupted sweep resumes).
"""
import functools
import json
import os
import time
from collections import Counter, defaultdict

import numpy as np

from cores.rifl.common import CHANNEL_RANDOM, SEGMENT_BYTES
from cores.rifl_net.line_card import cell_frames
from cores.rifl_net.network import net_contexts
from cores.switch.common import CELL_BYTES
from sim.bench.framework import BENCH_DIR, BenchResult, Table, bench_parser, plot_path, report, run_with
from sim.bench.sweep import sweep, sweep_stats, tasks
from sim.verilated.rifl_net import NetModel, Packet
from sim.verilated.switch import run_scheduler, scheduler
from software.argtypes import names
from software.rifl.demo import random_thresholds
from cores.rifl_net.topology import one_switch
from software.switch import reference, traffic

FRAME_BITS = 256
CELL_SLOTS = cell_frames(FRAME_BITS)
LATENCY = 8                     # channel latency each way, cycles (frame slots)
SCALE = {4: 1 / 64, 8: 1.0, 16: 1 / 8, 32: 1 / 16}
MIN_LOAD_VOLUME = 0.5           # loads under this keep the cycles of this load's run
LOADS = [0.1, 0.3, 0.5, 0.7, 0.9, 0.99]
BERS = [1e-7, 1e-6]
MAX_PACKET = 2048
RESULTS = os.path.join(BENCH_DIR, "rifl_net.json")   # the full run's points (--rerun updates them)


def net_kwargs(n, k):
    """RIFLNetwork keywords of the (n, k) model (reassembly contexts: the network's default, net_contexts)."""
    return dict(latency=LATENCY, iterations=k, max_packet=MAX_PACKET)


@functools.lru_cache(maxsize=None)
def _net(n, k, quick_build=False):
    """The (n, k) network's NetModel, converted once per process (the driver converts it for the digest, and
    forked workers inherit it). quick_build (the quick plan's points): sim.verilated's cheaper C++ build, the
    model of tests/harness/rifl_net.py's net_model for the same network (one build for both)."""
    return NetModel(one_switch(n), build=False, quick_build=quick_build, **net_kwargs(n, k))


def model_for(n, k, quick_build=False):
    """The (n, k) network's NetModel, its Verilated model built (once, then from the build cache)."""
    m = _net(n, k, quick_build)
    m.model.build()
    return m


def cell_times(n, load, size, scale):
    cells_per_input = (n - 1) * traffic.FLOW_BYTES * scale / traffic.mean_bytes(size) * traffic.mean_cells(size)
    return max(200, int(cells_per_input / max(load, MIN_LOAD_VOLUME)))


def trace_packets(tr):
    """The trace's packets as harness Packets (sorted per source by offer time) and, in the same order, their
    (trace packet id, first cell time, cells)."""
    first, cells = {}, Counter(tr["packet"].tolist())
    for i, p in enumerate(tr["packet"].tolist()):
        if p not in first:
            first[p] = i
    rows = sorted(((int(tr["src"][i]), int(tr["time"][i]), p, int(tr["dst"][i])) for p, i in first.items()))
    packets = [Packet(s, CELL_SLOTS * t, SEGMENT_BYTES * cells[p] - 2, d) for s, t, p, d in rows]
    info = [(p, t, cells[p]) for s, t, p, d in rows]
    return packets, info


def faults(packets, result):
    """(lost, duplicated, reordered, corrupted, delivery cycle per offered packet or -1)."""
    seq, keys = Counter(), []
    for p in packets:
        keys.append((p.src, seq[p.src]))
        seq[p.src] += 1
    index = {k: i for i, k in enumerate(keys)}
    got = Counter((d.src, d.seq) for d in result.delivered)
    when = np.full(len(packets), -1, np.int64)
    flows, corrupted = defaultdict(list), 0
    for d in result.delivered:
        i = index.get((d.src, d.seq))
        if i is None or d.host != packets[i].dst or not d.ok:
            corrupted += 1
            continue
        when[i] = d.cycle
        flows[(d.src, d.host)].append(d.seq)
    reordered = sum(int(np.count_nonzero(np.diff(s) < 0)) for s in flows.values())
    lost = sum(1 for k in keys if got[k] == 0)
    duplicated = sum(v - 1 for v in got.values() if v > 1)
    return lost, duplicated, reordered, corrupted, when


@functools.lru_cache(maxsize=None)
def _scheduler(n, k):
    return scheduler(n, k, build=False)


def _gateware(p):
    """The gateware digest of a point: the network's model and the scheduler's."""
    return f"{_net(p['n'], p['k'], p.get('quick_build', False)).model.digest}:{_scheduler(p['n'], p['k']).digest}"


def measure(n, k, load, pattern, size, ber, scale, seed=1, quick_build=False):
    """Task: one point: the whole switch RTL, the scheduler alone and SAFC on one trace (quick_build: the
    network's model built with sim.verilated's quick_build)."""
    T = cell_times(n, load, size, scale)
    warm = T // 4
    tr = traffic.generate(n, T, load, pattern, size, seed=seed, exclude_self=True)
    packets, info = trace_packets(tr)
    m = model_for(n, k, quick_build)
    events = []
    if ber:
        thr = random_thresholds(ber, FRAME_BITS)
        for c in range(len(m.channel_names)):
            events += [(0, c, "mode", CHANNEL_RANDOM)] + [(0, c, f"thr{j + 1}", v) for j, v in enumerate(thr)]
    r = m.run(packets, events, max_cycles=CELL_SLOTS * 4 * T + 20000, host_voqs=True)
    lost, dup, reord, corrupt, when = faults(packets, r)
    # Utilisation and latency of the RTL.
    done = when >= 0
    first_t = np.array([t for _, t, _ in info])
    ncells = np.array([c for _, _, c in info])
    dep_ct = when // CELL_SLOTS
    in_window = done & (dep_ct >= warm) & (dep_ct < T)
    util = float(ncells[in_window].sum()) / (n * (T - warm))
    measured = (first_t >= warm) & (first_t < T) & done
    lat = (when[measured] - CELL_SLOTS * first_t[measured]) / CELL_SLOTS
    q = np.percentile(lat, [50, 99, 99.9]) if len(lat) else [float("nan")] * 3
    safc = traffic.stats(tr, reference.safc(tr, n), n, T, warm)
    dep, _ = run_scheduler(_scheduler(n, k).build(), tr, 3 * T)
    sched = traffic.stats(tr, dep, n, T, warm)
    kc = r.counters
    return {
        "n": n, "k": k, "load": load, "traffic": f"{pattern}/{size}", "ber": ber,
        "utilisation": util, "safc_utilisation": safc["utilisation"], "scheduler_utilisation": sched["utilisation"],
        "offered": safc["offered"], "lost": lost, "duplicated": dup, "reordered": reord, "corrupted": corrupt,
        "undetected": sum(kc[f"c{c}_undetected"] for c in range(len(m.channel_names))),
        "channel_errors": sum(kc[f"c{c}_errors"] for c in range(len(m.channel_names))),
        "replays": kc["s0_replays"] + sum(kc[f"h{h}_replays"] for h in range(n)),
        "drop_full": kc["s0_drop_full"], "peak_voq": kc["s0_peak"], "voq_cells": m.voq_cells,
        "fc_voq_frames": kc["s0_fc_voq_sent"],
        "p50": float(q[0]), "p99": float(q[1]), "p999": float(q[2]),
        "safc_p50": safc["p50_latency"], "safc_p99": safc["p99_latency"], "safc_p999": safc["p999_latency"],
        "sched_p50": sched["p50_latency"], "sched_p99": sched["p99_latency"],
        "cell_times": T, "packets": len(packets), "cycles": r.cycles,
        "reassembly_contexts": net_contexts(n),
    }


def plan(quick):
    """measure()'s parameters of every point."""
    keys = ("n", "k", "load", "pattern", "size", "ber", "scale")
    if quick:
        pts = [(4, 2, 0.5, "bernoulli", CELL_BYTES, 0, SCALE[4]), (4, 2, 0.99, "bernoulli", CELL_BYTES, 1e-6, SCALE[4])]
        # quick_build: two points of ~10^4 cycles each, where the model's C++ build is the cost.
        return [dict(zip(keys, p), seed=1, quick_build=True) for p in pts]
    # The N = 32 model takes ~15 minutes to build: its first point goes first (one worker builds it while the
    # other runs the N = 8 points), the others last.
    pts = [(32, 3, 0.99, "bernoulli", CELL_BYTES, 0, SCALE[32])]
    pts += [(8, 3, load, "bernoulli", CELL_BYTES, 0, SCALE[8]) for load in LOADS]
    pts += [(8, k, 0.99, "bernoulli", CELL_BYTES, 0, SCALE[8]) for k in (1, 2, 4)]
    pts += [(8, 3, load, "bernoulli", CELL_BYTES, ber, SCALE[8]) for load in (0.5, 0.9, 0.99) for ber in BERS]
    kinds = [("bursty", CELL_BYTES), ("bernoulli", 2 * CELL_BYTES), ("bernoulli", 3 * CELL_BYTES),
             ("bernoulli", 4 * CELL_BYTES), ("bernoulli", "variable")]
    pts += [(8, 3, 0.99, p, s, 0, SCALE[8]) for p, s in kinds]
    pts += [(16, 3, load, "bernoulli", CELL_BYTES, ber, SCALE[16]) for load, ber in ((0.5, 0), (0.99, 0),
                                                                                      (0.99, 1e-7), (0.99, 1e-6))]
    pts += [(32, 3, 0.99, "bernoulli", CELL_BYTES, 1e-6, SCALE[32])]
    return [dict(zip(keys, p), seed=1) for p in pts]


def run(quick=False):
    """Every point of plan(quick) through the sweep (the points measured survive an interruption in the
    sweep's cache), tables and plots at the end."""
    t0 = time.time()
    return report(_with_walls(sweep("rifl_net", tasks(measure, plan(quick), _gateware))), t0)


def _with_walls(points):
    """The points with their tasks' wall times (wall_s) from the sweep just run."""
    return [dict(p, wall_s=round(w, 1)) for p, w in zip(points, sweep_stats().walls)]


def rerun(traffics):
    """Measure again the points of the full plan whose traffic is in `traffics` (e.g. after a change that
    only they see, which the cache key does not cover) and put them into build/bench/rifl_net.json in place
    of the old ones."""
    t0 = time.time()
    with open(RESULTS) as f:
        old = json.load(f)["points"]
    pts = [p for p in plan(False) if f"{p['pattern']}/{p['size']}" in traffics]
    new = _with_walls(sweep("rifl_net", tasks(measure, pts, _gateware), fresh=True))
    key = lambda q: (q["n"], q["k"], q["load"], q["traffic"], q["ber"])
    fresh = {key(q): q for q in new}
    points = [fresh.pop(key(q), q) for q in old] + list(fresh.values())
    return report(points, t0)


def report(points, t0):
    res = BenchResult("rifl_net")
    res.top["points"] = points
    cols = ["N", "k", "traffic", "load", "BER", "util", "sched util", "SAFC util", "util/sched", "util/SAFC",
            "p50", "p99", "p99.9", "SAFC p50", "SAFC p99", "lost", "dup", "reord", "corrupt", "undetected",
            "ch errors", "peak VOQ"]
    t = Table("Whole switch RTL (L1 links, finite VOQs, flow control, iSLIP, Batcher-Banyan) vs the RTL scheduler "
              "alone and SAFC on the same traces", cols,
              notes=f"Utilisation: cells delivered per host per cell time ({CELL_SLOTS} frame slots) after a warm-up "
                    f"quarter. Latency in cell times: the RTL's measured end to end (links of {LATENCY} cycles, "
                    "L1/L2 pipelines, VOQs, fabric); SAFC's with the spec's fixed 17. Fabric cell time = link cell "
                    "time, but 10 cycles for k = 4 (slower than the 9-slot links). Peak VOQ: the largest occupancy of any VOQ (cells; "
                    "capacity in the JSON).")
    for p in points:
        t.add(p["n"], p["k"], p["traffic"], p["load"], p["ber"], p["utilisation"], p["scheduler_utilisation"],
              p["safc_utilisation"], p["utilisation"] / p["scheduler_utilisation"],
              p["utilisation"] / p["safc_utilisation"], p["p50"], p["p99"], p["p999"], p["safc_p50"], p["safc_p99"],
              p["lost"], p["duplicated"], p["reordered"], p["corrupted"], p["undetected"], p["channel_errors"],
              p["peak_voq"])
    res.tables.append(t)
    goal = [p for p in points if (p["n"], p["k"], p["load"], p["traffic"], p["ber"]) ==
            (32, 3, 0.99, f"bernoulli/{CELL_BYTES}", 0)]
    if goal:
        g = goal[0]
        gt = Table("Goal: N = 32, k = 3, load 0.99, uniform", ["util", "sched util", "SAFC util",
                   "within 1 % of the scheduler", ">= 99 % of SAFC"])
        gt.add(g["utilisation"], g["scheduler_utilisation"], g["safc_utilisation"],
               abs(g["utilisation"] - g["scheduler_utilisation"]) <= 0.01 * g["scheduler_utilisation"],
               g["utilisation"] >= 0.99 * g["safc_utilisation"])
        res.tables.append(gt)
    res.data["faults"] = sum(p["lost"] + p["duplicated"] + p["reordered"] + p["corrupted"] for p in points)
    res.plots += plots(points)
    res.data["wall_s"] = round(time.time() - t0, 1)
    return res


def plots(points):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    uni = [p for p in points if p["traffic"] == f"bernoulli/{CELL_BYTES}" and p["ber"] == 0]
    configs = sorted({(p["n"], p["k"]) for p in uni})
    fig, (a, b) = plt.subplots(1, 2, figsize=(12, 4.5))
    for n, k in configs:
        pts = sorted((p for p in uni if (p["n"], p["k"]) == (n, k)), key=lambda p: p["load"])
        if len(pts) < 2:
            continue
        loads = [p["load"] for p in pts]
        line, = a.plot(loads, [p["utilisation"] for p in pts], "o-", label=f"RTL N={n} k={k}")
        a.plot(loads, [p["scheduler_utilisation"] for p in pts], "x--", color=line.get_color(), alpha=0.6)
        b.semilogy(loads, [p["p99"] for p in pts], "o-", color=line.get_color(), label=f"RTL N={n} k={k}")
        b.semilogy(loads, [p["safc_p99"] for p in pts], "x--", color=line.get_color(), alpha=0.6)
    a.set(xlabel="offered load", ylabel="utilisation", title="Whole switch (o) vs scheduler alone (x)")
    b.set(xlabel="offered load", ylabel="p99 packet latency (cell times)", title="Whole switch (o) vs SAFC + 17 (x)")
    for ax in (a, b):
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=7)
    fig.tight_layout()
    path = plot_path("rifl_net_uniform")
    fig.savefig(path, dpi=110)
    plt.close(fig)
    out.append(path)
    ber_pts = [p for p in points if p["k"] == 3 and p["traffic"] == f"bernoulli/{CELL_BYTES}" and p["load"] == 0.99]
    if ber_pts:
        fig, ax = plt.subplots(figsize=(6, 4))
        for n in sorted({p["n"] for p in ber_pts}):
            pts = sorted((p for p in ber_pts if p["n"] == n), key=lambda p: p["ber"])
            ax.plot([max(p["ber"], 1e-8) for p in pts], [p["p99"] for p in pts], "o-", label=f"N={n}")
        ax.set_xscale("log")
        ax.set(xlabel="bit error rate on every link (1e-8 = none)", ylabel="p99 latency (cell times)",
               title="Load 0.99, k = 3: latency under bit errors")
        ax.legend()
        fig.tight_layout()
        path = plot_path("rifl_net_ber")
        fig.savefig(path, dpi=110)
        plt.close(fig)
        out.append(path)
    return out


def ecp5_line_card():
    """ECP5 factory (sim.bench.ecp5.synth_point): one switch line card (L1 endpoint, L2 deframer and framer,
    F = 256, 256-bit cells, rtt 16)."""
    from cores.rifl_net.line_card import RIFLLineCard
    return line_card_ios(RIFLLineCard(256, 256, rtt=16))


def line_card_ios(m):
    """The ports of a RIFLLineCard `m` for an out-of-context run: (module, ios)."""
    return m, [m.tx_frame, m.rx_frame, m.link_up] + [s for ep in (m.cell_sink, m.cell_source, m.fc_sink, m.fc_source)
                                                     for s in ep.flatten()]


def ecp5_fc_gate():
    """ECP5 factory of a host's per-VOQ pause gate (F = 256, 4 ports)."""
    from cores.rifl.endpoint import RIFLFCGate
    m = RIFLFCGate(256, 4)
    return m, [s for ep in (m.sink, m.source, m.fc_sink) for s in ep.flatten()]


def ecp5_table():
    """Out-of-context ECP5 figures of the new gateware on the links: one switch line card and the per-VOQ
    pause gate of a host (two synth_point tasks)."""
    from sim.bench.ecp5 import point_digest, synth_point
    t = Table("ECP5 (LFE5U-25F, out of context, yosys + nextpnr-ecp5)",
              ["module", "LUT4", "FF", "DP16KD", "Fmax (MHz)", "line rate at Fmax (Gb/s)"],
              notes="Line rate: one 256-bit frame a cycle. Command: .venv/bin/python -m sim.bench.bench_rifl_net --ecp5")
    parts = [("RIFLLineCard F=256", "ecp5_line_card"), ("RIFLFCGate F=256, 4 ports", "ecp5_fc_gate")]
    params = [dict(factory=f"sim.bench.bench_rifl_net:{factory}", args={},
                   name=f"rifl_net_{name.split()[0].lower()}", device="LFE5U-25F", freq_mhz=100)
              for name, factory in parts]
    for (name, _), r in zip(parts, sweep("rifl_net", tasks(synth_point, params, point_digest))):
        if r["how"] != "placed and routed":
            raise RuntimeError(f"ECP5 run of {name}: {r['how']}")
        f = min(r["fmax_mhz"].values()) if r["fmax_mhz"] else float("nan")
        t.add(name, r["lut4"], r["ff"], r["bram_dp16kd"], f, f * 256 / 1000)
    return t


def main(argv=None):
    """`python -m sim.bench.bench_rifl_net`: the sweep, a new measurement of some traffics' points (--rerun) or
    the ECP5 table alone (--ecp5)."""
    traffics = sorted({f"{p['pattern']}/{p['size']}" for p in plan(False)})
    parser = bench_parser(run, __doc__)
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--rerun", metavar="TRAFFICS", type=names(traffics, "traffics", empty=False),
                      help="measure again the full plan's points of these traffics (comma-separated) and put them "
                           "into build/bench/rifl_net.json")
    mode.add_argument("--ecp5", action="store_true", help="only the ECP5 table (build/bench/rifl_net_ecp5.md)")
    args = parser.parse_args(argv)
    if args.rerun:
        if not os.path.exists(RESULTS):
            parser.error(f"--rerun updates {os.path.relpath(RESULTS)}, which is not there: run the full bench first")
        return report(rerun(args.rerun))
    if args.ecp5:
        return report(BenchResult("rifl_net_ecp5", tables=[ecp5_table()]))
    return report(run_with(run, args))


if __name__ == "__main__":
    raise SystemExit(main())

"""MiniSharp benchmark: line-rate acceptance, result latency, exactness vs float32, ECP5 figures.

Throughput and latency come from the Verilated model of the whole core (sim/verilated/minisharp.py) with
the ABI chunk size (256 FP32): every port offered back-to-back frames with no inter-frame gap. Accuracy
compares the RTL results with a float32 running sum (what a rounding switch computes) in the same run.
quick=True: only the accuracy table, from the small Verilated core of the tests (SMALL_CORE: 8-element chunks)
and a small vector (seconds once that model is built; the reference model in both rank orders where Verilator
is missing).
"""
import random
import struct
import time

import numpy as np

from cores.minisharp import common as ms
from cores.minisharp.accumulator import round_latency
from sim.bench.framework import BenchResult, Table
from software.minisharp import packets as P
from software.minisharp.reference import reduce_vectors

HOST, SW = ms.HOST_MAC, ms.DEFAULT_SRC_MAC   # frames from the host to the switch
CONFIGS = [("2 x 8-bit, 1 lane", dict(num_ports=2, dw=8)),
           ("4 x 64-bit, 2 lanes", dict(num_ports=4, dw=64)),
           ("4 x 64-bit, 8 lanes", dict(num_ports=4, dw=64, lanes=8))]


def vectors(ranks, n, seed):
    """Mixed magnitudes (1e-3 .. 1e8): float32 summation order then changes the rounded result."""
    rng = random.Random(seed)
    return [[struct.unpack(">I", struct.pack(">f", rng.choice([1e-3, 1.0, 1e4, 1e8]) * rng.uniform(-1, 1)))[0]
             for _ in range(n)] for _ in range(ranks)]


def float32_running_sum(vecs, order):
    acc = np.zeros(len(vecs[0]), dtype=np.float32)
    for k in order:
        acc = acc + np.array(vecs[k], dtype=np.uint32).view(np.float32)
    return acc.view(np.uint32).tolist()


def differs(values, reference):
    """The share of elements where `values` and `reference` differ, as a percentage string, over the longer of
    the two: an element missing from either (past its end, or None) differs; "-" when both are empty."""
    n = max(len(values), len(reference))
    if not n:
        return "-"
    def at(xs, i):
        return xs[i] if i < len(xs) else None
    return f"{sum(at(values, i) is None or at(values, i) != at(reference, i) for i in range(n)) / n:.2%}"


def accuracy_table(vecs, rtl=None, rtl_reversed=None):
    """rtl / rtl_reversed: the core's results with the ranks' frames in rank order and in reverse order
    (None: the rows compare the reference model with itself in the two orders)."""
    exact = reduce_vectors(vecs)
    r = len(vecs)
    a = float32_running_sum(vecs, list(range(r)))
    b = float32_running_sum(vecs, list(reversed(range(r))))
    n = len(exact)
    t = Table("Exactness: MiniSharp vs a float32 running sum (reference computed in the same run)",
              ["summation", "elements", "ranks", "differs from exact sum", "differs between two rank orders"],
              notes="A result the core did not deliver counts as differing.")
    t.add("float32 running sum (rounding switch)", n, r, differs(a, exact), differs(a, b))
    name = "MiniSharp RTL (MS_ACC_EXACT_FP32_MAG277)"
    if rtl is None:
        name, rtl, rtl_reversed = "MiniSharp reference model (exact, rounded once)", exact, reduce_vectors(vecs[::-1])
    t.add(name, n, r, differs(rtl, exact), differs(rtl, rtl_reversed) if rtl_reversed is not None else "-")
    return t, exact


def rank_orders(vm, vecs, chunk_elements):
    """The core's results for `vecs` as two collectives, one with the frames in rank order, one in reverse
    rank order (chunk-major, one port); returns the two result vectors."""
    n, r = len(vecs[0]), len(vecs)
    inputs = [[] for _ in range(vm.num_ports)]
    for cid in (1, 2):
        inputs[0].append((0, P.setup_frame(SW, HOST, cid, P.setup_record(n, r, 0, 0))))
    for c in range(ms.num_chunks(n, chunk_elements)):
        for cid, order in ((1, range(r)), (2, reversed(range(r)))):
            for k in order:
                vals = vecs[k][c * chunk_elements:(c + 1) * chunk_elements]
                inputs[0].append((100, P.data_frame(SW, HOST, cid, k, c, vals)))
    run = vm.run(inputs)
    res = {1: {}, 2: {}}
    for f in run.outputs[0]:
        p = P.parse(f, n, chunk_elements)
        res[p["collective_id"]][p["chunk_index"]] = p["values"]
    chunks = range(ms.num_chunks(n, chunk_elements))
    width = [len(vecs[0][c * chunk_elements:(c + 1) * chunk_elements]) for c in chunks]
    return [[v for c in chunks for v in res[cid].get(c, [None] * width[c])] for cid in (1, 2)]


def throughput(vm, ranks, n_chunks, seed=1):
    """All ports busy with back-to-back COL_DATA frames; returns (figures, result vector)."""
    ce = ms.MS_CHUNK_ELEMENTS
    n = ranks * 0 + n_chunks * ce
    vecs = vectors(ranks, n, seed)
    frames = [dict(P.chunk_frames(SW, HOST, 1, k, vecs[k], ce)) for k in range(ranks)]
    ports = vm.num_ports
    inputs = [[] for _ in range(ports)]
    setup = P.setup_frame(SW, HOST, 1, P.setup_record(n, ranks, 0, ports - 1))
    inputs[0].append((0, setup))
    for c in range(n_chunks):
        for k in range(ranks):
            inputs[k % ports].append((200, frames[k][c]))
    run = vm.run(inputs, ready_p=1.0, drain=5000)
    res = {}
    for f in run.outputs[0]:
        p = P.parse(f, n)
        res[p["chunk_index"]] = p["values"]
    vector = [v for c in range(n_chunks) for v in res.get(c, [None] * ce)]
    data_beats = sum(run.beats[i][0] for i in range(ports)) - -(-len(setup) // (vm.dw // 8))
    first = 200
    last = max(max(x) for x in run.in_last if x)
    drops = sum(v for k, v in run.counters.items() if k.startswith("drop_"))
    fig = {
        "ports": ports, "dw": vm.dw, "frames": ranks * n_chunks + 1, "drops": drops,
        "drop_reasons": {k[5:]: v for k, v in run.counters.items() if k.startswith("drop_") and v},
        "beats_per_cycle_per_port": data_beats / ports / (last - first + 1),
        "chunks_done": run.counters["chunks"], "chunks": n_chunks,
        "processed": 1 - drops / (ranks * n_chunks),
        "last_result_cycle": max(c[1] for c in run.out_cycles[0]) if run.out_cycles[0] else None,
        "input_end_cycle": last,
    }
    return fig, vector, vecs


def latency(vm, elements):
    """Cycles from the last beat of the completing contribution to the first beat of the result frame."""
    vecs = vectors(2, elements, 7)
    setup = P.setup_frame(SW, HOST, 2, P.setup_record(elements, 2, 0, 0))
    f0 = P.data_frame(SW, HOST, 2, 0, 0, vecs[0])
    f1 = P.data_frame(SW, HOST, 2, 1, 0, vecs[1])
    inputs = [[(0, setup), (500, f0)]] + [[(4000, f1)]] + [[] for _ in range(vm.num_ports - 2)]
    run = vm.run(inputs, drain=3000)
    return run.out_cycles[0][0][0] - run.in_last[1][0], len(f1)


def run(quick=False, ecp5=True):
    """quick: accuracy table only (seconds). Otherwise the Verilated model's tables (about 3 minutes); ecp5: also
    synthesise ECP5_BUILDS (2 x 8-bit and 4 x 64-bit on both devices; 5-10 minutes each for 2 x 8-bit,
    about an hour for the 4 x 64-bit place and route on the 85F)."""
    from sim.verilated import available
    from sim.verilated.minisharp import SMALL_CORE, VerilatedMiniSharp
    res = BenchResult("minisharp")
    if quick or not available():
        vecs = vectors(8, 64, 3)
        rtl = rank_orders(VerilatedMiniSharp(**SMALL_CORE), vecs, SMALL_CORE["chunk_elements"]) if available() \
            else (None, None)
        t, _ = accuracy_table(vecs, *rtl)
        res.tables.append(t)
        return res

    tt = Table("Line rate: every port offered back-to-back 1048-byte COL_DATA frames (256 FP32), no gap",
               ["build", "ports", "port width", "frames offered", "input beats taken / cycle / port",
                "data frames kept (ratio to offered)", "beats of kept frames / cycle / port", "drops by reason",
                "chunks completed", "Verilator build+run s"],
               notes="Ports never stall (ready=1, as a PHY), so every offered beat is taken; line rate means no "
                     "frame is dropped (a frame the engine cannot take in time overflows its port's 2-chunk "
                     "buffer and is dropped as `overflow`). 8 ranks, chunk-major order, no resends (a dropped "
                     "contribution leaves its chunk incomplete and its slot busy); results broadcast to every port. "
                     "Reference: the offered load, 1.0. 2 lanes x 32 bits have the bandwidth of one 64-bit port, "
                     "so that build cannot keep 4 ports.")
    lt = Table("Latency: last beat of the completing contribution -> first beat of the COL_RES frame",
               ["build", "chunk elements", "cycles", "contribution frame beats", "ratio to frame time"],
               notes="A contribution is validated as a whole frame (store and forward); the completing one is "
                     "added one word (lanes FP32) per cycle and each word's exact sums leave the rounding pipeline "
                     f"({round_latency(1)} stages at 1 lane, {round_latency(2)} with more lanes) at once; the COL_RES "
                     "frame starts with its first value. Reference: the frame time of the contribution (its beats).")
    rtl_vec, vecs_for_acc = None, None
    for name, params in CONFIGS:
        t0 = time.time()
        vm = VerilatedMiniSharp(**params)
        fig, vec, vecs = throughput(vm, ranks=8, n_chunks=8 if vm.num_ports == 2 else 32)
        res.data[f"throughput {name}"] = fig
        tt.add(name, fig["ports"], fig["dw"], fig["frames"] - 1, round(fig["beats_per_cycle_per_port"], 4),
               round(fig["processed"], 4), round(fig["beats_per_cycle_per_port"] * fig["processed"], 4),
               ", ".join(f"{k} {v}" for k, v in fig["drop_reasons"].items()) or "none",
               f"{fig['chunks_done']}/{fig['chunks']}", round(time.time() - t0, 1))
        if rtl_vec is None:
            rtl_vec, vecs_for_acc = vec, vecs
        for el in (ms.MS_CHUNK_ELEMENTS, 1):
            cyc, flen = latency(vm, el)
            beats = -(-max(flen, ms.ETH_MIN_FRAME) // (vm.dw // 8))
            lt.add(name, el, cyc, beats, round(cyc / beats, 3))
            res.data[f"latency {name} {el}"] = cyc
    acc, _ = accuracy_table(vecs_for_acc, rtl_vec, None)
    res.tables += [tt, lt, acc]
    if ecp5:
        res.tables.append(ecp5_table(ECP5_BUILDS))
    return res


# (name, core parameters, device, nextpnr target MHz). The 4 x 64-bit build routes on the 85F only with a
# target it does not fight for (at 125 and 50 MHz the timing-driven routers did not converge); the achieved
# Fmax is what the table reports, whatever the target.
ECP5_BUILDS = [("2 x 8-bit, 1 lane", dict(num_ports=2, dw=8, lanes=1), "LFE5U-25F", 125),
               ("2 x 8-bit, 1 lane", dict(num_ports=2, dw=8, lanes=1), "LFE5U-85F", 125),
               ("4 x 64-bit, 8 lanes", dict(num_ports=4, dw=64, lanes=8), "LFE5U-25F", 125),
               ("4 x 64-bit, 8 lanes", dict(num_ports=4, dw=64, lanes=8), "LFE5U-85F", 25)]


def ecp5_core(params):
    """ECP5 factory (sim.bench.ecp5.synth_point): MiniSharpCore(**params), every port, configuration input and
    counter an I/O, its block RAMs on DP16KD primitives."""
    from cores.lib.block_ram import ecp5_special_overrides
    from cores.minisharp.core import MiniSharpCore
    from sim.verilated.minisharp import core_ports
    core = MiniSharpCore(**params)
    return core, [sig for sig, _ in core_ports(core).values()], ecp5_special_overrides


def ecp5_table(builds=ECP5_BUILDS):
    """One synth_point task per build (sim.bench.sweep: the builds run side by side); a run that fails
    (the design does not fit, or routing does not converge within the 3-hour timeout) reports what nextpnr
    logged."""
    from sim.bench.ecp5 import point_digest, synth_point
    from sim.bench.sweep import sweep, sweep_stats, tasks
    t = Table("ECP5 out-of-context (yosys + nextpnr-ecp5)",
              ["build", "device", "target MHz", "LUT4", "FF", "DP16KD", "LUTRAM", "Fmax MHz", "synth s"],
              notes="MiniSharpCore with the ABI chunk (256 FP32), 4 chunk slots, 8 contexts, max 64 ranks; "
                    "all ports, configuration inputs and counters are I/Os.")
    params = [dict(factory="sim.bench.bench_minisharp:ecp5_core", args=dict(params=p), device=dev, freq_mhz=target,
                   name=f"minisharp_{p['num_ports']}x{p['dw']}_{p['lanes']}l", timeout=3 * 3600)
              for _, p, dev, target in builds]
    results = sweep("minisharp", tasks(synth_point, params, point_digest))
    for (name, _, dev, target), r, wall in zip(builds, results, sweep_stats().walls):
        if r["how"] == "placed and routed":
            fmax = min(r["fmax_mhz"].values()) if r["fmax_mhz"] else "n/a"
            t.add(name, dev, target, r["lut4"], r["ff"], r["bram_dp16kd"], r["lutram"], fmax, round(wall))
        else:
            t.add(name, dev, target, *failed_report(r, target), round(wall))
    return t


def failed_report(r, target=125):
    """LUT4/FF/DP16KD/LUTRAM/Fmax of a failed nextpnr run (synth_point's failure figures): from report.json
    when it placed and routed (125 MHz missed), else from the utilisation nextpnr logged before it gave up
    (used/available) and its post-placement Fmax estimate if it got that far."""
    io_bits = r["io_bits"]
    if r["report"]:
        u = r["report"].get("utilization", {})
        fmax = min((v["achieved"] for v in r["report"].get("fmax", {}).values()), default=0)
        ff = u.get("TRELLIS_FF", {}).get("used")
        return [u.get("TRELLIS_COMB", {}).get("used", "-"), ff - io_bits if ff is not None else "-",
                u.get("DP16KD", {}).get("used", "-"), u.get("TRELLIS_RAMW", {}).get("used", "-"),
                f"{fmax:.1f} (< {target})"]
    use = r["logged"]
    if not use and not r["estimate"]:
        return ["-", "-", "-", "-", "did not place"]
    over = [f"{k} {u}/{a}" for k, (u, a) in use.items() if u > a]
    if over:
        fmax = "does not fit: " + ", ".join(over)
    elif r["estimate"]:
        fmax = f"not routed; post-placement estimate {list(r['estimate'].values())[-1]:.1f}"
    else:
        fmax = "did not place"
    ff = use.get("TRELLIS_FF", (None,))[0]
    return [use.get("TRELLIS_COMB", ("-",))[0], ff - io_bits if ff is not None else "-",
            use.get("DP16KD", ("-",))[0], use.get("TRELLIS_RAMW", ("-",))[0], fmax]


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

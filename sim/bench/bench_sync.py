"""Sync benchmark: completion latency versus grid size (2x2 .. 16x16) against the analytic hop model, random
synchronizations checked against the reference model, all idents at once, and ECP5 area / Fmax.

Everything runs in Verilator (`sim.verilated.sync.GridSim`: the same `SyncNode` RTL, wired like `SyncGrid`),
one build per grid with the full 8 idents and 32-bit values.

Latency run: every participant except one triggers at cycle 0; once everything that can propagate has
(settle), the last one triggers; latency = cycle a node presents its completion - cycle the last trigger was
taken. Two cases: the lamlet triggers last (the farthest participant: one hop more than corner (0, 0)),
and grid corner (W-1, H-1) triggers last. Analytic reference, computed in the same run: a node k Chebyshev
hops from the last trigger completes k * hop_latency cycles after the cycle the trigger is taken (a
completion is presented in the cycle its last contribution is merged); the lamlet is one hop beyond (0, 0),
and when it triggers last its own completion needs the 2 hops to (0, 0) and back.

Random run: every participant works through 2 rounds of all 8 idents in its own random order with random
gaps, random modes and values (and corner values) and completion back-pressure (ready 70% of cycles);
`software.sync.reference.check_completions` checks every completion against the reference model.
"""
import random
import time

from cores.sync.common import CPL_LATENCY, DEFAULT_HOP_LATENCY, MODE_UMAX, DIRS, MAX_IDENTS
from cores.sync.grid import SyncGrid
from cores.sync.node import SyncNode
from sim.bench.framework import BenchResult, Table
from software.sync.reference import LAMLET, participants, random_schedules, check_completions
from sim.verilated.sync import GridSim, Trigger

VALUE_WIDTH = 32
FMAX_TARGET_MHZ = 100          # synthesis goal (nextpnr reports the achieved Fmax when it is missed)
QUICK_GRID = (4, 3)            # quick mode's grid (tests/test_sync_vsim.py uses the same build)


def hops(a, b):
    """Chebyshev hops between participants; the lamlet sits beyond (0, 0) (one extra hop)."""
    pa = (-1, -1) if a == LAMLET else a
    pb = (-1, -1) if b == LAMLET else b
    if LAMLET in (a, b) and a != b:
        other = pb if a == LAMLET else pa
        return 1 + max(other)
    return max(abs(pa[0] - pb[0]), abs(pa[1] - pb[1]))


def analytic(w, h, last, hop):
    names = participants(w, h)
    return {n: (2 if n == last == LAMLET else hops(last, n)) * hop + CPL_LATENCY for n in names}


def measure(sim, last):
    """Latency (cycles) of every participant when `last` triggers last, after the others have settled."""
    w, h, hop = sim.width, sim.height, sim.hop_latency
    names = participants(w, h)
    li = names.index(last)
    settle = (max(w, h) + 2) * hop + 4
    sch = [[Trigger(0, MODE_UMAX, i, 0, settle if i == li else 0)] for i in range(len(names))]
    accepts, completions, events, _ = sim.run(sch, 3 * settle + 20, tail=0)
    t_last = accepts[(li, 0, 0)]
    if t_last != settle or any(accepts[(i, 0, 0)] >= settle for i in range(len(names)) if i != li):
        raise RuntimeError(f"{w}x{h}: triggers not taken when offered")
    out = {}
    for i, cpl in completions.items():
        if len(cpl) != 1 or cpl[0][4] != len(names) - 1 or cpl[0][0] < t_last:
            raise RuntimeError(f"{w}x{h}: participant {names[i]} completions {cpl}")
        out[names[i]] = cpl[0][0] - t_last
    if events != {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}:
        raise RuntimeError(f"{w}x{h}: events {events}")
    return out


def random_check(sim, rounds=2, seed=1):
    """Random synchronizations checked against the model; returns (completions checked, cycles)."""
    rng = random.Random(seed)
    n = sim.n_participants
    schedules, contrib = random_schedules(rng, n, sim.n_idents, rounds, sim.value_width)
    schedules = [[Trigger(*e, gap=rng.randint(0, 3)) for e in sch] for sch in schedules]
    max_cycles = 400 + rounds * (sim.n_idents * 40 + max(sim.width, sim.height) * sim.hop_latency * 4)
    accepts, completions, events, cycles = sim.run(schedules, max_cycles, ready_prob=0.7, seed=seed)
    check_completions(n, accepts, completions, contrib, rounds, sim.value_width)
    if events != {"trigger_drop": 0, "rx_drop": 0, "mismatch": 0}:
        raise RuntimeError(f"random run: events {events}")
    return sum(len(c) for c in completions.values()), cycles


def burst(sim, seed=1):
    """Every participant triggers all idents back to back, each in its own random order, from cycle 0.
    Returns (cycle of the last trigger taken, cycle of the last completion)."""
    rng = random.Random(seed)
    n = sim.n_participants
    sch = [[Trigger(i, MODE_UMAX, p) for i in rng.sample(range(sim.n_idents), sim.n_idents)] for p in range(n)]
    accepts, completions, events, _ = sim.run(sch, 3000, tail=0)
    contrib = {(i, 0): [(MODE_UMAX, p) for p in range(n)] for i in range(sim.n_idents)}
    check_completions(n, accepts, completions, contrib, 1, sim.value_width)
    return max(accepts.values()), max(c[0] for cpl in completions.values() for c in cpl)


def node_ios(node):
    ios = [node.sink.valid, node.sink.ready, node.sink.ident, node.sink.mode, node.sink.value,
           node.source.valid, node.source.ready, node.source.ident, node.source.mode, node.source.error,
           node.source.value, node.ev_trigger_drop, node.ev_rx_drop, node.ev_mismatch]
    for d in node.neighbours:
        ios += [node.tx[d].valid, node.tx[d].data, node.rx[d].valid, node.rx[d].data]
    return ios


def grid_ios(grid):
    """The grid's trigger / completion / event ports (the links are internal)."""
    return [s for p in grid.participants for s in node_ios(p)[:14]]


def run(quick=False):
    """quick: the QUICK_GRID build only (shared with tests/test_sync_vsim.py), no synthesis.

    Full: the latency sweep and a 1-ident random run on 1-ident builds of every size (the logic per ident is
    the same, so latency does not depend on n_idents; 1-ident builds compile in a fraction of the time), and
    all 8 idents on QUICK_GRID and 4x4 (random run, everything at once)."""
    hop = DEFAULT_HOP_LATENCY
    res = BenchResult("sync")
    lat = Table(f"Completion latency after the last trigger (cycles), {hop} cycles a hop, 32-bit values",
                ["grid", "participants", "diameter (hops)", "last trigger", "idents", "max", "mean",
                 "analytic max", "analytic mean", "max / analytic", "max / diameter"],
                notes="Analytic: hops x hop_latency, hops = Chebyshev distance from the last trigger "
                      "(the lamlet is one hop beyond node (0, 0)); diameter = max(W, H) hops including the "
                      "lamlet. Verilator.")
    rnd = Table("Random synchronizations against the reference model (Verilator)",
                ["grid", "participants", "idents x rounds", "completions checked", "cycles", "result",
                 "build s"],
                notes="Random per-node ident order, gaps 0-3, modes, values (incl. 0, all-ones, sign bit), "
                      "completion ready 70%; every completion's value, mode and error and its cycle (not "
                      "before the last trigger of its round) are checked. build s: Verilator build, 0 = cached.")
    res.data["latency"], res.data["random"] = [], []
    if quick:
        builds = [(QUICK_GRID, MAX_IDENTS, 2)]
    else:
        builds = [((w, h), 1, 3) for w, h in [(2, 2), (3, 3), (4, 4), (6, 6), (8, 8), (12, 12), (16, 16), (4, 2),
                                               (16, 4)]]
        builds += [(QUICK_GRID, MAX_IDENTS, 2), ((4, 4), MAX_IDENTS, 2)]
    sims = {}
    for (w, h), n_idents, rounds in builds:
        t0 = time.monotonic()
        sim = sims[(w, h, n_idents)] = GridSim(w, h, n_idents=n_idents, value_width=VALUE_WIDTH, hop_latency=hop)
        build = time.monotonic() - t0
        for last in [LAMLET, (w - 1, h - 1)]:
            m = measure(sim, last)
            a = analytic(w, h, last, hop)
            mx, mean = max(m.values()), sum(m.values()) / len(m)
            amx, amean = max(a.values()), sum(a.values()) / len(a)
            lat.add(f"{w}x{h}", len(m), max(w, h), str(last), n_idents, mx, mean, amx, amean, mx / amx,
                    mx / max(w, h))
            res.data["latency"].append({"grid": [w, h], "idents": n_idents, "last": str(last),
                                        "measured": {str(k): v for k, v in m.items()},
                                        "analytic": {str(k): v for k, v in a.items()}})
            print(lat.rows[-1], flush=True)
        checked, cycles = random_check(sim, rounds=rounds, seed=w * 100 + h)
        rnd.add(f"{w}x{h}", sim.n_participants, f"{n_idents} x {rounds}", checked, cycles, "all match",
                round(build) if sim.build_seconds else 0)
        res.data["random"].append({"grid": [w, h], "idents": n_idents, "checked": checked, "cycles": cycles})
        print(rnd.rows[-1], flush=True)
    res.tables += [lat, rnd]
    if not quick:
        bt = Table("All idents at once: every participant triggers 8 idents back to back",
                   ["grid", "idents", "last trigger taken (cycle)", "last completion (cycle)",
                    "after last trigger", "one ident alone (analytic worst)", "ratio"],
                   notes="Links carry one 4-flit packet at a time and each node merges one event a cycle, "
                         "so simultaneous idents queue behind each other.")
        for w, h in [(4, 4)]:
            t_last, t_done = burst(sims[(w, h, MAX_IDENTS)])
            single = max(analytic(w, h, LAMLET, hop).values())
            bt.add(f"{w}x{h}", MAX_IDENTS, t_last, t_done, t_done - t_last, single, (t_done - t_last) / single)
            res.data[f"burst_{w}x{h}"] = {"last_trigger": t_last, "done": t_done}
            print(bt.rows[-1], flush=True)
        res.tables.append(bt)
        res.tables.append(ecp5_table(hop))
    res.write()
    return res


def ecp5_node(n_idents):
    """ECP5 factory (sim.bench.ecp5.synth_point): one node, 8 links, 32-bit values."""
    node = SyncNode(DIRS, n_idents=n_idents, value_width=VALUE_WIDTH)
    return node, node_ios(node)


def ecp5_grid(hop):
    """ECP5 factory: a 2x2 grid with its lamlet, MAX_IDENTS idents, 32-bit values."""
    grid = SyncGrid(2, 2, n_idents=MAX_IDENTS, value_width=VALUE_WIDTH, hop_latency=hop)
    return grid, grid_ios(grid)


def ecp5_table(hop):
    """The nodes (MAX_IDENTS and 1 ident) and the 2x2 grid as synth_point tasks of one sweep."""
    from sim.bench.ecp5 import point_digest, synth_point
    from sim.bench.sweep import sweep, tasks
    area = Table(f"ECP5 resources (out of context, yowasp yosys + nextpnr, target {FMAX_TARGET_MHZ} MHz)",
                 ["design", "device", "LUT4", "FF", "BRAM", "LUTRAM", "Fmax MHz", "LUT4 / node", "FF / node"])
    params = [dict(factory="sim.bench.bench_sync:ecp5_node", args=dict(n_idents=n), name=f"sync_node_i{n}",
                   device="LFE5U-25F", freq_mhz=FMAX_TARGET_MHZ) for n in (MAX_IDENTS, 1)]
    params.append(dict(factory="sim.bench.bench_sync:ecp5_grid", args=dict(hop=hop), name="sync_grid_2x2",
                       device="LFE5U-45F", freq_mhz=FMAX_TARGET_MHZ))
    results = sweep("sync", tasks(synth_point, params, point_digest))
    for r in results:
        if r["how"] != "placed and routed":
            raise RuntimeError(f"ECP5 run of {r}: {r['how']}")
    for n_idents, r in zip((MAX_IDENTS, 1), results):
        area.add(f"node, 8 links, {n_idents} idents, 32-bit", r["device"], r["lut4"], r["ff"], r["bram_dp16kd"],
                 r["lutram"], r["fmax_mhz"].get("sys_clk"), r["lut4"], r["ff"])
    r = results[2]
    n = len(participants(2, 2))
    area.add("2x2 grid + lamlet, 8 idents, 32-bit", r["device"], r["lut4"], r["ff"], r["bram_dp16kd"],
             r["lutram"], r["fmax_mhz"].get("sys_clk"), round(r["lut4"] / n), round(r["ff"] / n))
    return area


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

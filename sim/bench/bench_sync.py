"""Sync benchmark: completion latency versus grid size against the analytic hop model, plus ECP5 area.

Latency run (Migen simulation, one ident: the logic per ident is identical, so latency does not depend on
n_idents): every participant except one triggers at cycle 0; once everything that can propagate has
(settle), the last one triggers; latency = cycle a node presents its completion - cycle the last trigger was
taken. Two cases: the lamlet triggers last (the farthest participant: one hop more than corner (0, 0)),
and grid corner (W-1, H-1) triggers last. Analytic reference, computed in the same run: a node k Chebyshev
hops from the last trigger completes k * hop_latency cycles after the cycle the trigger is taken (a
completion is presented in the cycle its last contribution is merged); the lamlet is one hop beyond (0, 0),
and when it triggers last its own completion needs the 2 hops to (0, 0) and back.
"""
import argparse
import sys

from migen import run_simulation

from cores.sync.common import DEFAULT_HOP_LATENCY, MODE_UMAX, DIRS
from cores.sync.grid import SyncGrid
from cores.sync.node import SyncNode
from sim.bench.framework import BenchResult, Table
from software.sync.model import LAMLET, participants


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
    return {n: (2 if n == last == LAMLET else hops(last, n)) * hop for n in names}


def measure(w, h, last, hop=DEFAULT_HOP_LATENCY, value_width=32):
    """Latency (cycles) of every participant when `last` triggers last, after the others have settled."""
    grid = SyncGrid(w, h, n_idents=1, value_width=value_width, hop_latency=hop)
    names = participants(w, h)
    parts = grid.participants
    li = names.index(last)
    settle = (max(w, h) + 2) * hop + 4
    expect = max(i & ((1 << value_width) - 1) for i in range(len(parts)))      # umax of the values below
    out = {}

    def gen():
        for p in parts:
            yield p.source.ready.eq(1)
            yield p.sink.mode.eq(MODE_UMAX)
        for i, p in enumerate(parts):
            yield p.sink.valid.eq(i != li)
            yield p.sink.value.eq(i & ((1 << value_width) - 1))
        yield
        for i, p in enumerate(parts):
            yield p.sink.valid.eq(0)
        for _ in range(settle):
            yield
        for p in parts:
            assert not (yield p.source.valid), "completed before the last trigger"
        yield parts[li].sink.valid.eq(1)
        for cycle in range(settle + 2 * hop + 8):
            yield
            if cycle == 0:                          # the last trigger is taken in cycle 0
                assert (yield parts[li].sink.ready)
                yield parts[li].sink.valid.eq(0)
            for i, p in enumerate(parts):
                if i not in out and (yield p.source.valid):
                    assert (yield p.source.value) == expect
                    out[i] = cycle
            if len(out) == len(parts):
                break

    run_simulation(grid, gen())
    if len(out) != len(parts):
        raise RuntimeError(f"{w}x{h}: only {len(out)} of {len(parts)} participants completed")
    return {names[i]: v for i, v in out.items()}


def measure_burst(w, h, n_idents=8, hop=DEFAULT_HOP_LATENCY, value_width=32, seed=1):
    """Every participant triggers all n_idents idents, one a cycle in its own random order, from cycle 0.
    Returns (cycle of the last trigger taken, cycle of the last completion)."""
    import random
    rng = random.Random(seed)
    grid = SyncGrid(w, h, n_idents=n_idents, value_width=value_width, hop_latency=hop)
    parts = grid.participants
    orders = [rng.sample(range(n_idents), n_idents) for _ in parts]
    out = {"last_trigger": 0, "done": 0}

    def gen():
        idx = [0] * len(parts)
        left = len(parts) * n_idents
        for p in parts:
            yield p.source.ready.eq(1)
            yield p.sink.mode.eq(MODE_UMAX)
        for cycle in range(2000):
            for i, p in enumerate(parts):
                if idx[i] < n_idents:
                    yield p.sink.valid.eq(1)
                    yield p.sink.ident.eq(orders[i][idx[i]])
                    yield p.sink.value.eq(i)
                else:
                    yield p.sink.valid.eq(0)
            yield
            for i, p in enumerate(parts):
                if idx[i] < n_idents and (yield p.sink.ready):
                    idx[i] += 1
                    out["last_trigger"] = cycle
                if (yield p.source.valid):
                    assert (yield p.source.value) == len(parts) - 1
                    left -= 1
            if left == 0:
                out["done"] = cycle
                return
        raise RuntimeError("burst did not complete")

    run_simulation(grid, gen())
    return out["last_trigger"], out["done"]


def node_ios(node):
    ios = [node.sink.valid, node.sink.ready, node.sink.ident, node.sink.mode, node.sink.value,
           node.source.valid, node.source.ready, node.source.ident, node.source.mode, node.source.error,
           node.source.value, node.ev_trigger_drop, node.ev_rx_drop, node.ev_mismatch]
    for d in node.neighbours:
        ios += [node.tx[d].valid, node.tx[d].data, node.rx[d].valid, node.rx[d].data]
    return ios


def run(quick=False, large=False):
    """quick: 2x2 only, no synthesis. large: also 12x12 and 16x16 (lamlet last), about 10 and 30 minutes of
    Migen simulation on this machine."""
    hop = DEFAULT_HOP_LATENCY
    sizes = [(2, 2)] if quick else [(2, 2), (3, 3), (4, 4), (6, 6), (8, 8), (4, 2)]
    if large:
        sizes += [(12, 12), (16, 16)]
    res = BenchResult("sync")
    lat = Table("Completion latency after the last trigger (cycles), 5 cycles a hop, 32-bit values",
                ["grid", "participants", "diameter (hops)", "last trigger", "max", "mean", "analytic max",
                 "analytic mean", "max / analytic", "max <= 20 cycles"],
                notes="Analytic: hops x hop_latency, hops = Chebyshev distance from the last trigger "
                      "(the lamlet is one hop beyond node (0, 0)). Measured in Migen simulation.")
    res.data["latency"] = []
    for w, h in sizes:
        cases = [LAMLET, (w - 1, h - 1)] if (w * h <= 64 or quick) else [LAMLET]
        for last in cases:
            m = measure(w, h, last, hop)
            a = analytic(w, h, last, hop)
            mx, mean = max(m.values()), sum(m.values()) / len(m)
            amx, amean = max(a.values()), sum(a.values()) / len(a)
            lat.add(f"{w}x{h}", len(m), max(w, h) - 1, str(last), mx, mean, amx, amean, mx / amx,
                    "yes" if mx <= 20 else "no")
            res.data["latency"].append({"grid": [w, h], "last": str(last), "measured": {str(k): v for k, v in
                                        m.items()}, "analytic": {str(k): v for k, v in a.items()}})
            print(lat.rows[-1], flush=True)
    res.tables.append(lat)
    if not quick:
        burst = Table("All idents at once: every participant triggers 8 idents back to back (4x4 + lamlet)",
                      ["grid", "idents", "last trigger taken (cycle)", "last completion (cycle)",
                       "after last trigger", "one ident alone (analytic worst)", "ratio"],
                      notes="Links carry one 4-flit packet at a time and each node merges one event a cycle, "
                            "so simultaneous idents queue behind each other.")
        t_last, t_done = measure_burst(4, 4)
        single = max(analytic(4, 4, LAMLET, hop).values())
        burst.add("4x4", 8, t_last, t_done, t_done - t_last, single, (t_done - t_last) / single)
        res.data["burst_4x4"] = {"last_trigger": t_last, "done": t_done}
        print(burst.rows[-1], flush=True)
        res.tables.append(burst)
        from sim.bench.ecp5 import synth_ecp5
        area = Table("ECP5 resources (out of context, yowasp yosys + nextpnr)",
                     ["design", "device", "LUT4", "FF", "BRAM", "LUTRAM", "Fmax MHz", "LUT4 / node", "FF / node"])
        node = SyncNode(DIRS, n_idents=8, value_width=32)
        r = synth_ecp5(node, node_ios(node), "sync_node", device="LFE5U-25F", freq_mhz=20)
        area.add("node, 8 links, 8 idents, 32-bit", r["device"], r["lut4"], r["ff"], r["bram_dp16kd"], r["lutram"],
                 str(r["fmax_mhz"]), r["lut4"], r["ff"])
        res.data["ecp5_node"] = r
        print(area.rows[-1], flush=True)
        grid = SyncGrid(2, 2, n_idents=8, value_width=32, hop_latency=hop)
        ios = [s for p in grid.participants for s in node_ios(p)
               if not any(s is getattr(p.tx.get(d), "valid", None) or s is getattr(p.tx.get(d), "data", None)
                          or s is getattr(p.rx.get(d), "valid", None) or s is getattr(p.rx.get(d), "data", None)
                          for d in p.neighbours)]
        r = synth_ecp5(grid, ios, "sync_grid_2x2", device="LFE5U-45F", freq_mhz=20)
        n = len(grid.participants)
        area.add("2x2 grid + lamlet, 8 idents, 32-bit", r["device"], r["lut4"], r["ff"], r["bram_dp16kd"],
                 r["lutram"], str(r["fmax_mhz"]), round(r["lut4"] / n), round(r["ff"] / n))
        res.data["ecp5_grid_2x2"] = r
        print(area.rows[-1], flush=True)
        res.tables.append(area)
    res.write()
    return res


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--large", action="store_true", help="also 12x12 and 16x16 (long)")
    args = ap.parse_args()
    print(run(quick=args.quick, large=args.large).markdown())
    sys.exit(0)

"""MiniSharp network benchmark: allreduce over simulated MiniSharp FPGAs, per-level latency, link traffic.

* Wall time of a 1M-element FP32 allreduce of 4 ranks (separate host processes) through the 2-leaf + spine
  network of litex_sim SoCs (sim.allreduce), against the same run on one switch and against a
  host-only reduction of the same vectors (the exact Fraction reference, and numpy's float32 sum), all in
  one run; with exact partials and with FP32 partials.
* Per-level latency in cycles on the cycle-accurate model (the cluster's switch build, Verilated): from the
  last contribution's last beat to the first beat of what the level sends on (leaf: the partial up; spine: the
  COL_RES down; leaf on the way down: the COL_RES to its hosts), and the total at a host with the frames'
  times on the links between them.
* The frames on each link (the switches' port counters) and the uplink bytes of the exact partial format
  against FP32 partials.
quick=True: 300 elements on the spine-leaf network only, the latency of the tests' small core (the litex_sim
test, tests/test_minisharp_net_sim.py, checks that run).
"""
import time

import numpy as np

from cores.minisharp import common as ms
from sim import allreduce
from sim.bench.framework import BenchResult, Table
from software.minisharp import packets as P
from software.minisharp.reference import encode_partial, partial_of
from software.minisharp.topology import TOPOLOGIES

HOST = 0x020000000101
LEAF, SPINE = 0x024D53000200, 0x024D53000100


def latency(vm, chunk_elements, exact=True):
    """{level: cycles} on one Verilated switch (ports 0, 1: below; port 2: up), and the frames' beats."""
    ce = ms.v02_chunk_elements(chunk_elements)
    rng = np.random.default_rng(3)
    vecs = [[int(x) for x in rng.integers(0x3F000000, 0x40000000, ce)] for _ in range(2)]
    fmt = ms.MS_FMT_EXACT if exact else ms.MS_FMT_FP32
    coll = 7
    leaf_macs = [(HOST, LEAF), (HOST + 1, LEAF + 1), (ms.GROUP_MAC, LEAF + 2)]
    spine_macs = [(ms.GROUP_MAC, SPINE + p) for p in range(3)]      # its COL_RES go to the leaves
    kw = dict(mac_filter=1, drain=3000)

    def setup(mac, **rec):
        return P.setup_frame(mac, HOST, coll, P.setup_record_v02(ce, 2, 0, 1, collective=ms.MS_COL_ALLREDUCE, **rec))
    # leaf, up: the second rank's frame completes the chunk; the partial leaves on port 2
    data = [P.data_frame(LEAF, HOST, coll, k, 0, vecs[k], minor=2) for k in range(2)]
    leaf = setup(LEAF, role=ms.MS_ROLE_CHILD, uplink_port=2, parent_mac=SPINE, output_fmt=fmt)
    run = vm.run([[(0, leaf), (300, data[0])], [(3000, data[1])], []], mac=LEAF, macs=leaf_macs, **kw)
    up = run.out_cycles[2][0][0] - run.in_last[1][0]
    partial = run.outputs[2][0]
    # spine: two partials (or FP32 sums) from the leaves, the COL_RES on ports 0 and 1
    pf = [P.pdata_frame(SPINE, LEAF, coll, k, 0, [encode_partial(partial_of([v])) for v in vecs[k]]) if exact
          else P.data_frame(SPINE, LEAF, coll, k, 0, vecs[k], minor=2) for k in range(2)]
    spine = setup(SPINE, role=ms.MS_ROLE_ROOT, input_fmt=fmt)
    run = vm.run([[(0, spine), (300, pf[0])], [(4000, pf[1])], []], mac=SPINE, macs=spine_macs, **kw)
    top = run.out_cycles[0][0][0] - run.in_last[1][0]
    res = run.outputs[0][0]
    # leaf, down: the COL_RES from above to the hosts
    run = vm.run([[(0, leaf)], [], [(1000, res)]], mac=LEAF, macs=leaf_macs, **kw)
    if P.parse(run.outputs[0][0])["src_mac"] != LEAF:
        raise RuntimeError("the leaf forwarded the COL_RES instead of sending it down")
    down = run.out_cycles[0][0][0] - run.in_last[2][0]
    beats = lambda f: max(len(f), ms.ETH_MIN_FRAME) // (vm.dw // 8)
    return dict(leaf_up=up, spine=top, leaf_down=down, partial_beats=beats(partial), res_beats=beats(res),
                partial_bytes=len(partial))


def net_runs(elements, quick, log):
    """The allreduces of the wall-time table; in each, host h1 also sends a teardown and a setup that the
    admin mask must refuse."""
    runs = {}
    cases = [("spine-leaf", True)] if quick else [("spine-leaf", True), ("spine-leaf", False), ("one-switch", True)]
    for topo, exact in cases:
        log(f"allreduce {topo} {'exact' if exact else 'fp32'} partials, {elements} elements")
        r = allreduce.run(topo, ranks=4, elements=elements, exact=exact, seed=11, timeout=7200, rogue="h1", log=log)
        if not r["ok"] and exact:
            raise RuntimeError(f"{topo}: not bit-exact: {r['mismatches'][:3]}")
        runs[(topo, exact)] = r
    return runs


def host_only(elements):
    vecs = allreduce.vectors(4, elements, 11)
    t0 = time.monotonic()
    from software.minisharp.reference import reduce_vectors
    exact = reduce_vectors([v.tolist() for v in vecs])
    t_exact = time.monotonic() - t0
    t0 = time.monotonic()
    acc = np.zeros(elements, dtype=np.float32)
    with np.errstate(over="ignore", invalid="ignore"):     # the traps overflow in float32
        for v in vecs:
            acc += v.view(np.float32)
    t_f32 = time.monotonic() - t0
    return t_exact, t_f32, float32_differs(exact, acc)


def float32_differs(exact, acc):
    """How many elements of the float32 sum `acc` differ from the exact result `exact` (FP32 bit patterns),
    the same in NaN's sign and payload as the exact reference."""
    return int(np.count_nonzero(np.asarray(exact, dtype=np.uint32) != acc.view(np.uint32)))


def run(quick=False):
    from sim.verilated.minisharp import SMALL_CORE, VerilatedMiniSharp
    res = BenchResult("minisharp_net")
    elements = 300 if quick else 1_000_000
    log = print if not quick else (lambda *_: None)
    runs = net_runs(elements, quick, log)
    t_exact, t_f32, f32_wrong = host_only(elements)
    ref = runs[("spine-leaf", True)]["seconds"]
    wt = Table(f"Allreduce wall time: 4 ranks x {elements:,} FP32 (separate host processes, litex_sim SoCs)",
               ["run", "seconds", "ratio to spine-leaf exact", "bit-exact", "rank resends", "drops"],
               notes="Seconds from the AM's setup to the last rank holding the whole result (switch start-up "
                     "not included). Host-only: the same 4 vectors reduced on this host, in this run. The "
                     "simulated switches run as fast as Verilator goes (3 SoCs on 2 cores), not at a clock.")
    for (topo, exact), r in runs.items():
        drops = sum(v for c in r["counters"].values() for k, v in c.items() if k.startswith("drop_"))
        wt.add(f"{topo}, {'exact' if exact else 'FP32'} partials", round(r["seconds"], 1),
               round(r["seconds"] / ref, 3), "yes" if r["ok"] else "no", sum(x["resends"] for x in r["ranks"]), drops)
        res.data[f"{topo} {'exact' if exact else 'fp32'}"] = {k: r[k] for k in ("seconds", "wall", "ok", "counters",
                                                                                 "ranks", "ns", "mismatches")}
    wt.add("host only: exact Fraction reference (Python)", round(t_exact, 2), round(t_exact / ref, 3),
           "the reference", "-", "-")
    wt.add("host only: numpy float32 sum", round(t_f32, 4), round(t_f32 / ref, 5),
           "yes" if not f32_wrong else f"no ({f32_wrong:,} of {elements:,} differ)", "-", "-")
    res.tables.append(wt)

    lt = Table("Per-level latency (cycles, cycle-accurate model of one switch)",
               ["partials", "leaf: last contribution -> partial up", "spine: last partial -> COL_RES",
                "leaf: COL_RES in -> to the hosts", "at a host (with the frames on the links)", "partial frame bytes"],
               notes="Each level is the first beat out minus the last beat of the completing frame in (store and "
                     "forward: a frame is validated whole). At a host: the three levels plus the partial's and "
                     "the COL_RES's frame times on the two links (8-bit ports: a byte a cycle).")
    params = dict(SMALL_CORE) if quick else dict(num_ports=3, dw=8, chunk_elements=32, n_slots=16, max_ranks=64)
    vm = VerilatedMiniSharp(**params)
    for exact in (True, False):
        L = latency(vm, params["chunk_elements"], exact)
        total = L["leaf_up"] + L["partial_beats"] + L["spine"] + L["res_beats"] + L["leaf_down"]
        lt.add("exact" if exact else "FP32", L["leaf_up"], L["spine"], L["leaf_down"], total, L["partial_bytes"])
        res.data[f"latency {'exact' if exact else 'fp32'}"] = L
    res.tables.append(lt)

    ft = Table("Frames and bytes on each link (spine-leaf run, the switches' port counters)",
               ["partials", "link", "frames up (leaf tx)", "frames down (spine tx)", "bytes up",
                "bytes up / FP32 partials' bytes up"],
               notes="Frames: every frame the port sent, the AM's setups and teardowns forwarded to the other "
                     "switches included. Bytes up: the partials (one frame a chunk) x their size (COL_PDATA: 24 + "
                     "40 x 32 bytes; COL_DATA: 24 + 4 x 32); the ratio is the price of exactness on the uplink.")
    ce = ms.v02_chunk_elements(TOPOLOGIES["spine-leaf"].chunk_elements)
    nch = ms.num_chunks(elements, ce)
    size = {True: ms.MS_HEADER_BYTES + ms.PARTIAL_ELEMENT_BYTES * ce, False: ms.MS_HEADER_BYTES + 4 * ce}
    for (topo, exact), r in runs.items():
        if topo != "spine-leaf":
            continue
        c = r["counters"]
        for leaf, sp in (("leaf0", 0), ("leaf1", 1)):
            up = c[leaf]["port2_tx_frames"]
            down = c["spine"][f"port{sp}_tx_frames"]
            ft.add("exact" if exact else "FP32", f"{leaf} - spine", up, down, c[leaf]["chunks"] * size[exact],
                   round(size[exact] / size[False], 2))
    res.data["chunks"] = nch
    res.tables.append(ft)
    return res


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

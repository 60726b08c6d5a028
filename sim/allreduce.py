"""`make allreduce`: an FP32 allreduce from separate host processes through a simulated MiniSharp network.

    python -m sim.allreduce --topology spine-leaf --ranks 4 --elements 100000
    python -m sim.allreduce --topology my_net.yaml --ranks 8      # a topology file (software.minisharp.topofile)

Builds the switches' simulators if missing, starts the topology (sim.cluster: every SoC, TAP and bridge in
one private namespace), configures every switch over Etherbone, installs the contexts from the AM, runs one
rank process per rank, checks every rank's result bit for bit against the flat exact sum (the Fraction
reference) and removes everything. Prints `bit-exact` and exits 0 only when every rank holds the exact
result; otherwise prints the first mismatches and exits 1 (2 when the run itself failed).
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

import numpy as np

from cores.minisharp import common as ms
from sim import ROOT
from sim.cluster import SimCluster
from sim.runner import SimulationFailed, handle_interrupts
from software.argtypes import int_in, positive_float, positive_int
from software.minisharp.reference import TRAPS, reduce_vectors
from software.minisharp.topofile import resolve, topology_arg

NET = [sys.executable, "-m", "software.minisharp.net"]
def vectors(ranks, elements, seed):
    """Wide-range random FP32 bit patterns (every exponent, both signs), reference.TRAPS first."""
    rng = np.random.default_rng(seed)
    out = []
    for k in range(ranks):
        v = rng.integers(0, 2**32, elements, dtype=np.uint64).astype(np.uint32)
        v[(v >> 23 & 0xFF) == 0xFF] &= 0xBFFFFFFF         # no NaN/Inf in the random part
        for i, col in enumerate(TRAPS[:elements]):
            v[i] = col[k] if k < len(col) else 0
        out.append(v)
    return out


def run(topology="spine-leaf", ranks=4, elements=100_000, exact=True, seed=1, timeout=3600.0, rogue=None,
        log=print):
    """One allreduce; returns a dict: ok, mismatches (first ones: (element, rank, got, want)), seconds
    (setup to the last rank's result), wall (everything), counters, ranks (each process's report), ns (the
    namespace it ran in, gone by then). rogue: a host that also sends a teardown and a setup of the
    collective before the ranks start (refused under the admin mask)."""
    if os.path.exists(topology):
        topology = os.path.abspath(topology)           # the rank processes get the same file
    topo = resolve(topology)
    t_wall = time.monotonic()
    vecs = vectors(ranks, elements, seed)
    work = tempfile.mkdtemp(prefix="allreduce-", dir=os.path.join(ROOT, "build"))
    try:
        for k, v in enumerate(vecs):
            np.save(os.path.join(work, f"r{k}.npy"), v)
        with SimCluster(topo) as cl:
            log(f"{topo.name or topology}: {len(topo.switches)} simulated switches up ({time.monotonic() - t_wall:.0f} s)")
            top = ["--topology", topology, "--ranks", str(ranks)]
            cl.run(NET + ["configure"] + top, timeout=300)
            t0 = time.monotonic()
            cl.run(NET + ["setup"] + top + ["--elements", str(elements)] + ([] if exact else ["--fp32-partials"]),
                   timeout=60)
            if rogue:
                cl.run(NET + ["rogue"] + top + ["--host", rogue, "--elements", str(elements)], timeout=60)
            ns = cl.ns
            procs = [cl.popen(NET + ["rank"] + top + ["--host", h, "--vector", os.path.join(work, f"r{k}.npy"),
                                                    "--out", os.path.join(work, f"r{k}.out.npy"),
                                                    "--timeout", str(timeout)], stdout=subprocess.PIPE, text=True)
                     for k, h in enumerate(topo.ranks(ranks))]
            reports = []
            for p in procs:
                out, _ = p.communicate(timeout=timeout + 60)
                if p.returncode:
                    raise SimulationFailed(f"a rank process failed (exit {p.returncode}): {out}")
                reports.append(json.loads(out.strip().splitlines()[-1]))
            seconds = time.monotonic() - t0
            cl.run(NET + ["teardown"] + top, timeout=60)
            time.sleep(0.5)
            counters = json.loads(cl.run(NET + ["counters"] + top, capture=True, timeout=120).stdout)
        want = np.array(reduce_vectors([v.tolist() for v in vecs]), dtype=np.uint32)
        mismatches = []
        for k in range(ranks):
            got = np.load(os.path.join(work, f"r{k}.out.npy"))
            bad = np.nonzero(got != want)[0] if len(got) == len(want) else np.arange(len(want))
            mismatches += [(int(i), k, int(got[i]) if i < len(got) else None, int(want[i])) for i in bad[:5]]
        return dict(ok=not mismatches, mismatches=mismatches, seconds=seconds, wall=time.monotonic() - t_wall,
                    counters=counters, ranks=reports, elements=elements, topology=topology, ns=ns)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def max_elements(topo):
    """The longest vector a collective of `topo`'s switches carries: 2^16 chunks (the v0.2 chunk index)."""
    return (1 << 16) * ms.v02_chunk_elements(topo.chunk_elements)


def main(argv=None):
    ap = argparse.ArgumentParser(description="FP32 allreduce through a simulated MiniSharp network.")
    ap.add_argument("--topology", default="spine-leaf", type=topology_arg,
                    help="a built-in topology (spine-leaf, one-switch) or a topology file (.yaml/.json)")
    ap.add_argument("--ranks", type=positive_int, default=4, help="rank processes (at most the topology's hosts)")
    ap.add_argument("--elements", type=positive_int, default=100_000,
                    help="FP32 elements of each rank's vector (at most 2^16 chunks)")
    ap.add_argument("--fp32-partials", action="store_true", help="partials rounded to FP32 at each level")
    ap.add_argument("--seed", type=int_in(0), default=1)
    ap.add_argument("--timeout", type=positive_float, default=3600.0, help="seconds a rank may take")
    a = ap.parse_args(argv)
    topo = resolve(a.topology)
    if a.ranks > len(topo.hosts):
        ap.error(f"argument --ranks: {a.topology} has {len(topo.hosts)} hosts, {a.ranks} ranks asked for")
    most = max_elements(topo)
    if a.elements > most:
        ap.error(f"argument --elements: at most {most} (2^16 chunks of {ms.v02_chunk_elements(topo.chunk_elements)}), "
                 f"{a.elements} asked for")
    handle_interrupts()
    try:
        r = run(a.topology, a.ranks, a.elements, exact=not a.fp32_partials, seed=a.seed, timeout=a.timeout)
    except (SimulationFailed, subprocess.TimeoutExpired, OSError) as e:
        print(f"allreduce failed: {e}", file=sys.stderr)
        return 2
    drops = {sw: {k: v for k, v in c.items() if k.startswith("drop_") and v} for sw, c in r["counters"].items()}
    print(f"{a.ranks} ranks x {a.elements} FP32 over {a.topology}: {r['seconds']:.1f} s "
          f"(resends {sum(x['resends'] for x in r['ranks'])}; drops {drops})")
    if r["ok"]:
        print("bit-exact")
        return 0
    for i, k, got, want in r["mismatches"][:10]:
        print(f"mismatch: element {i} at rank {k}: {got:#010x} != {want:#010x}" if got is not None
              else f"mismatch: rank {k} has {i}: missing")
    return 1


if __name__ == "__main__":
    sys.exit(main())

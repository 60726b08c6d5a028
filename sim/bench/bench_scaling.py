"""Scaling of the sweeps (make bench BENCH=scaling): how much a second worker and a Ray cluster buy on this
machine, measured in one run.

* Wall time of two sweeps (sim.bench.sweep, every point recomputed: fresh) with 1 worker (in this process)
  and with 2 local worker processes, and on a Ray cluster with 2 workers; the ratio 1 / 2 workers; whether
  every result is identical on the three executors. The sweeps: the switch bench's quick sweep
  (bench_switch.Plan(quick=True): the RTL iSLIP, SAFC/FIFO and the cross-check, N = 8) and the RIFL BER
  sweep (bench_rifl.ber_plan: F = 256 and 1024, BER 1e-7 to 1e-4 and the error-free references, the
  Verilated model; the full bench's 1e-8 and 1e-9 points take 1-10 minutes each and are left out). The
  Verilator models are built before the timed runs; each timed run starts cold, as `make bench` does: the
  driver converts each model's Verilog for its gateware digest (forked workers inherit the converted model,
  Ray workers convert their own), then the sweep runs.
* Ray's overhead per task: TRIVIAL_TASKS tasks that return at once as one sweep (best of 3), in this process, through the
  local pool and through the Ray cluster (wall time per task: the sweep's own cost, cache writes included, is
  the in-process row); one Ray task at a time (submit, wait: the round trip); the cluster's start or
  connection time. The machine's load average is given with the figures (the cores are shared).

Ray: `cluster` (make bench's CLUSTER, else `local`: a private Ray on this machine's loopback with 2 CPUs,
started and stopped here). quick: the switch quick sweep, three short RIFL points (F = 64, the longest
round trip) and 20 trivial tasks.
"""
import os
import time

from cores.rifl.common import MAX_RTT_CYCLES
from sim.bench import bench_rifl, bench_switch, sweep
from sim.bench.framework import BenchResult, Table
from software.rifl.demo import frame_error_threshold

TRIVIAL_TASKS = 200
RIFL_BERS = [1e-7, 1e-6, 1e-5, 1e-4]
RIFL_FRAME_BITS = [256, 1024]


def trivial(i):
    """Task: nothing (the executor's cost per task)."""
    return {"i": i}


def _cold():
    """Forget the per-process model handles (the Verilated executables stay cached on disk)."""
    for f in (bench_switch._model, bench_rifl._loopback):
        f.cache_clear()


def _timed(name, make_points, workers=1, cluster=None):
    """One cold run with `workers` local processes or on `cluster`: (seconds making the points (their
    digests), seconds sweeping them, the sum of the tasks' own times, the results)."""
    sweep.configure(workers=workers, cluster=cluster)
    _cold()
    t0 = time.monotonic()
    points = make_points()
    t1 = time.monotonic()
    results = sweep.sweep(f"scaling_{name}", points, fresh=True)
    return t1 - t0, time.monotonic() - t1, sum(sweep.sweep_stats().walls), results


def _rifl_points(quick):
    if quick:
        latency = MAX_RTT_CYCLES // 2           # the Verilated model the RIFL link tests build too
        plan = [(64, latency, ber, dict(frame_bits=64, latency=latency, cycles=20000,
                                        threshold=frame_error_threshold(ber, 64) if ber else 0, quick=False))
                for ber in (None, 1e-4, 1e-3)]
    else:
        plan = bench_rifl.ber_plan(False, RIFL_FRAME_BITS, RIFL_BERS)
    return sweep.tasks(bench_rifl.ber_point, [plan[i][3] for i in bench_rifl.ber_order(plan)],
                       bench_rifl._ber_gateware)


def sweeps(quick):
    """(name, function making the points) of the measured sweeps."""
    name = "RIFL BER points (quick: F = 64, 20000 cycles)" if quick else "RIFL BER sweep, BER >= 1e-7"
    return [("switch quick sweep", lambda: bench_switch.Plan(quick=True).points),
            (name, lambda: _rifl_points(quick))]


def run(quick=False, cluster=None):
    """The tables above; `cluster`: the Ray cluster (default: make bench's CLUSTER / $RAY_ADDRESS, else
    `local`)."""
    cluster = cluster or sweep.SETTINGS.cluster or os.environ.get("RAY_ADDRESS") or "local"
    old = sweep.configure(workers=1, cluster=None)
    res = BenchResult("scaling")
    load_before = os.getloadavg()
    try:
        measured = sweeps(quick)
        # Build every Verilator model the sweeps use before timing them.
        for p in (p for _, make in measured for p in make()):
            if p.task is bench_switch.islip_point or p.task is bench_switch.crosscheck:
                bench_switch._model(p.params["n"], p.params["k"]).build()
            elif p.task is bench_rifl.ber_point and not p.params["quick"]:
                bench_rifl._loopback(p.params["frame_bits"], p.params["latency"]).build()
        runs = {name: [("1 worker (in-process)", *_timed(name, make, workers=1)),
                       ("2 local processes", *_timed(name, make, workers=2))] for name, make in measured}
        t0 = time.monotonic()
        sweep.configure(cluster=cluster, workers=2)
        sweep.executor()
        connect = time.monotonic() - t0
        for name, make in measured:
            runs[name].append((f"Ray ({cluster}), 2 workers", *_timed(name, make, workers=2, cluster=cluster)))
        n_trivial = 20 if quick else TRIVIAL_TASKS
        trivial_points = lambda: sweep.tasks(trivial, [dict(i=i) for i in range(n_trivial)])
        best = lambda **kw: min(sum(_timed("trivial", trivial_points, **kw)[:2]) for _ in range(3))
        ray_trivial = best(workers=2, cluster=cluster)
        ray = sweep.executor()
        t0 = time.monotonic()
        for i in range(n_trivial // 4):
            ray.ray.get(ray.remote.remote(trivial, {"i": i}))
        round_trip = (time.monotonic() - t0) / (n_trivial // 4)
        sweep.shutdown()
        local_trivial = best(workers=1)
        pool_trivial = best(workers=2)
    finally:
        sweep.shutdown()
        sweep.configure(**old)

    t = Table("Sweep wall time: 1 worker (in-process), 2 local processes, Ray (2 workers); every point computed",
              ["sweep", "points", "executor", "digests (s)", "sweep (s)", "total (s)", "speed-up (total)",
               "speed-up (sweep)", "tasks' own time (s)", "tasks at once", "same results as 1 worker"],
              notes="digests: the driver converts each model's Verilog for its gateware digest (serial, before the "
                    "sweep); sweep: sim.bench.sweep.sweep() with fresh=True; speed-ups against the 1-worker run; "
                    "tasks' own time: the sum of the points' task times (more than the 1-worker sweep when the "
                    "workers share the cores); tasks at once: tasks' own time / sweep. The Verilator models were built beforehand; forked workers inherit "
                    f"the driver's converted models, Ray's ({cluster}) import the project and convert the models "
                    "they use on their first task. Ran on this 2-core machine.")
    rows_same = []
    for name, rs in runs.items():
        _, d1, s1, _, r1 = rs[0]
        for executor, d, w, own, r in rs:
            rows_same.append(r == r1)
            t.add(name, len(r), executor, round(d, 2), round(w, 2), round(d + w, 2), (d1 + s1) / (d + w), s1 / w,
                  round(own, 2), own / w, r == r1)
        res.data[name] = {executor: {"digests_s": d, "sweep_s": w, "tasks_s": own} for executor, d, w, own, _ in rs}
    o = Table(f"Per-task overhead: {n_trivial} trivial tasks (return at once), best of 3 sweeps",
              ["executor", "wall (s)", "per task (ms)", "overhead vs in-process (ms/task)"],
              notes=f"Ray cluster start or connection: {connect:.1f} s (once per `make bench`); one Ray task at "
                    f"a time (submit, wait for its result): {1000 * round_trip:.1f} ms a task.")
    for name, wall in (("in-process", local_trivial), ("2 local processes", pool_trivial),
                       (f"Ray ({cluster}, 2 workers)", ray_trivial)):
        o.add(name, round(wall, 3), 1000 * wall / n_trivial, 1000 * (wall - local_trivial) / n_trivial)
    res.data.update(ray_task_overhead_ms=1000 * (ray_trivial - local_trivial) / n_trivial,
                    ray_round_trip_ms=1000 * round_trip, ray_connect_s=connect,
                    load_average=[load_before, os.getloadavg()])
    t.notes += (f" Load average (1, 5, 15 min) before: {', '.join(f'{x:.1f}' for x in load_before)}; after: "
                f"{', '.join(f'{x:.1f}' for x in os.getloadavg())} (other jobs on the 2 cores slow both runs).")
    res.tables += [t, o]
    if not all(rows_same):
        raise RuntimeError("a sweep gave different results on the executors")
    return res


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

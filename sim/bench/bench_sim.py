"""Simulation-layer benchmark: litex_sim build time and run speed of the base and the whole SoC, the project's
build against LiteX's default build of the same gateware and against the wave-1 SoC, and `make sim` wall time.

Builds compared, for the base SoC (no cores) and the whole SoC (every core, as `make sim` builds it):
  * innet (threads 2 / 1): `sim.verilated.build_litex_sim` (the pinned Verilator, no tracer, the C++
    optimisation of sim.verilated reaching the model, `threads` Verilator threads), the 32-bit TAP management
    port polled every 8 cycles;
  * LiteX default: LiteX 2024.12's own build script for the same gateware folder (its Makefile: Debian's
    Verilator, --trace and the tracer, -O0 user code, OPT_FAST=-Os, one thread);
  * wave 1: the SoC of commit WAVE1_COMMIT (before this layer: LiteX's build, the 8-bit `ethernet` TAP
    module read every 1000 ticks), checked out as a git worktree and built by its own `sim.target`.
Each build runs in its own network namespace; `sim.bench.soc_host` measures simulated cycles/s (idle) and
Etherbone CSR reads/s (one client, single reads). `make sim` wall time: `python -m sim.demo` with the SoC's
build folder removed (cold) and again (warm), for this tree (1 thread, the default, and 2) and for wave 1.

Quick mode (the smoke test, run beside other tests): the base SoC's 1-thread innet build only, short windows.
A 2-thread model needs both cores to itself: with the host busy (as in `make sim`) or another job running it runs
slower than a 1-thread one.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import time

from sim import ROOT, target, verilated
from sim.bench.framework import BENCH_DIR, BenchResult, Table
from sim.demo import available_cores
from sim.runner import SimSession

WORK = os.path.join(ROOT, "build", "bench", "sim")
WAVE1_COMMIT = "2fe33a2"          # the last commit before the simulation layer
SYSTEM_TOOLS = "/usr/bin"          # LiteX's default build takes Verilator from PATH: Debian's 5.006
# LiteX's sim Makefile runs `make -j$(JOBS)`: with JOBS unset, one compiler per C++ file at once (182 for the
# whole SoC), and the kernel's OOM killer ends the build. Its builds here run one job a core (or $JOBS).
BUILD_ENV = {"JOBS": os.environ.get("JOBS") or str(os.cpu_count() or 1)}
GOALS = {"speedup": 2.5, "reads_per_s": 400.0, "compile_ratio": 0.5}


def measure(gateware, seconds):
    """Run the simulated SoC of `gateware` and return soc_host's measurements."""
    with SimSession(gateware, boot_timeout=600) as sim:
        r = sim.run([sys.executable, "-m", "sim.bench.soc_host", str(seconds)], timeout=1800, capture=True)
    if r.returncode != 0:
        raise RuntimeError(f"soc_host failed on {gateware}:\n{r.stdout}\n{r.stderr}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def innet_build(cores, threads):
    """A cold build (forced) with the project's flags; returns (gateware folder, compile s, total s)."""
    t0 = time.monotonic()
    gateware = target.build(cores, threads=threads, force=True)
    return gateware, _compile_seconds(gateware), time.monotonic() - t0


def _compile_seconds(gateware):
    """Seconds the last compile of this gateware folder took (build_litex_sim records them)."""
    with open(os.path.join(gateware, "obj_dir", ".innet_seconds")) as f:
        return float(f.read())


def litex_default_build(gateware, dest):
    """LiteX's own build script (build_sim.sh) run on a copy of `gateware`; returns (folder, compile s)."""
    shutil.rmtree(dest, ignore_errors=True)
    shutil.copytree(gateware, dest, ignore=shutil.ignore_patterns("obj_dir", "modules"))
    script = os.path.join(dest, "build_sim.sh")
    with open(script) as f:
        text = f.read().replace(gateware, dest)
    with open(script, "w") as f:
        f.write(text)
    env = dict(os.environ, PATH=SYSTEM_TOOLS + os.pathsep + os.environ["PATH"], **BUILD_ENV)
    env.pop("VERILATOR_ROOT", None)
    t0 = time.monotonic()
    r = subprocess.run(["bash", "build_sim.sh"], cwd=dest, env=env, capture_output=True, text=True)
    if r.returncode != 0 or not os.path.exists(os.path.join(dest, "obj_dir", "Vsim")):
        raise RuntimeError(f"LiteX's build of {dest} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")
    return dest, time.monotonic() - t0


def wave1_tree():
    """A git worktree of WAVE1_COMMIT under build/bench/sim/wave1 (None when the history lacks it)."""
    tree = os.path.join(WORK, "wave1")
    if os.path.exists(os.path.join(tree, "sim", "target.py")):
        return tree
    r = subprocess.run(["git", "-C", ROOT, "worktree", "add", "--detach", "--force", tree, WAVE1_COMMIT],
                       capture_output=True, text=True)
    return tree if r.returncode == 0 else None


def _in_tree(tree, args, timeout=7200):
    """Run `python args` in another source tree (its modules first on the path); returns (stdout, seconds)."""
    env = dict(os.environ, PYTHONPATH=tree, **BUILD_ENV)
    env.pop("VERILATOR_ROOT", None)
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, *args], cwd=tree, env=env, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"`{' '.join(args)}` failed in {tree}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r.stdout, time.monotonic() - t0


def make_sim(tree, cores, threads=None):
    """`python -m sim.demo` in `tree` (with `--threads threads` if given): cold (its build folder for `cores`
    removed) and warm. Returns (cold s, warm s, gateware folder)."""
    args = ["--threads", str(threads)] if threads else []
    name = target.config_name(cores, threads=threads or target.SIM_THREADS)
    shutil.rmtree(os.path.join(tree, "build", "sim", name), ignore_errors=True)
    out, cold = _in_tree(tree, ["-m", "sim.demo", *args])
    _, warm = _in_tree(tree, ["-m", "sim.demo", *args])
    gateware = re.search(r"gateware: (\S+)", out).group(1)
    return cold, warm, gateware


def run(quick=False, wave1=True):
    """quick: the base SoC's innet build only. wave1: include the wave-1 SoC (its make sim takes ~35 min)."""
    os.makedirs(WORK, exist_ok=True)
    seconds = 1.0 if quick else 5.0
    socs = {"base_soc": ()} if quick else {"base_soc": (), "full_soc": tuple(available_cores())}
    res = BenchResult("sim", data={"tool": verilated.version(), "quick": quick})
    rows = []
    for key, cores in socs.items():
        entry = {}
        if quick:
            t0 = time.monotonic()
            gateware = target.build(cores, threads=1)
            variants = [("innet, 1 thread", gateware, _compile_seconds(gateware), time.monotonic() - t0)]
        else:
            g2, c2, t2 = innet_build(cores, 2)
            g1, c1, t1 = innet_build(cores, 1)
            gl, cl = litex_default_build(g2, os.path.join(WORK, "litex_default", key))
            variants = [("innet, 2 threads", g2, c2, t2), ("innet, 1 thread", g1, c1, t1),
                        ("LiteX default", gl, cl, None)]
        for name, gateware, compile_s, total_s in variants:
            m = measure(gateware, seconds)
            rows.append((key, name, compile_s, total_s, m))
        innet = rows[-len(variants)][4]
        entry.update(cycles_per_s=innet["cycles_per_s"], etherbone_reads_per_s=innet["csr_reads_per_s"],
                     compile_s=variants[0][2])
        if not quick:
            litex = rows[-1][4]
            entry.update(baseline_cycles_per_s=litex["cycles_per_s"],
                         baseline_etherbone_reads_per_s=litex["csr_reads_per_s"], baseline_compile_s=variants[2][2],
                         threads1_cycles_per_s=rows[-2][4]["cycles_per_s"], threads1_compile_s=variants[1][2])
        res.data[key] = entry
    if not quick:
        cold, warm, _ = make_sim(ROOT, socs["full_soc"])
        res.data["full_soc"].update(make_sim_cold_s=cold, make_sim_warm_s=warm)
        cold, warm, _ = make_sim(ROOT, socs["full_soc"], threads=2)
        res.data["full_soc"].update(threads2_make_sim_cold_s=cold, threads2_make_sim_warm_s=warm)
        tree = wave1_tree() if wave1 else None
        if tree:
            w_cold, w_warm, w_gateware = make_sim(tree, socs["full_soc"])
            m = measure(w_gateware, seconds)
            rows.append(("full_soc", f"wave 1 ({WAVE1_COMMIT})", None, None, m))
            res.data["full_soc"].update(wave1_cycles_per_s=m["cycles_per_s"],
                                        wave1_etherbone_reads_per_s=m["csr_reads_per_s"],
                                        wave1_make_sim_cold_s=w_cold, wave1_make_sim_warm_s=w_warm)
            b_out, b_total = _in_tree(tree, ["-m", "sim.target"])
            m = measure(b_out.strip().splitlines()[-1], seconds)
            rows.append(("base_soc", f"wave 1 ({WAVE1_COMMIT})", None, b_total, m))
            res.data["base_soc"].update(wave1_cycles_per_s=m["cycles_per_s"],
                                        wave1_etherbone_reads_per_s=m["csr_reads_per_s"])
    res.tables.append(_speed_table(rows, seconds))
    if not quick:
        res.tables.append(_goal_table(res.data))
    os.makedirs(BENCH_DIR, exist_ok=True)
    with open(os.path.join(BENCH_DIR, "sim.json"), "w") as f:
        json.dump({k: v for k, v in res.data.items() if k in socs}, f, indent=1)
    return res


def _speed_table(rows, seconds):
    t = Table("litex_sim builds: compile time and run speed",
              ["SoC", "build", "compile (s)", "build total (s)", "simulated cycles/s", "CSR reads/s",
               "16-word burst reads/s", "write+read pairs/s", "cycles/s vs LiteX default"],
              notes=f"Each figure from one run on this machine ({seconds:g} s windows, an otherwise idle "
                    "machine is assumed). compile = Verilator + C++ of the model; build total adds the gateware "
                    "generation (wave 1: its whole `sim.target` run). The innet builds are cold (forced).")
    ref = {soc: m["cycles_per_s"] for soc, name, _, _, m in rows if name == "LiteX default"}
    for soc, name, compile_s, total_s, m in rows:
        ratio = m["cycles_per_s"] / ref[soc] if soc in ref else ""
        t.add(soc, name, "" if compile_s is None else round(compile_s, 1), "" if total_s is None else round(total_s, 1),
              round(m["cycles_per_s"]), round(m["csr_reads_per_s"]), round(m["burst_reads_per_s"]),
              round(m["write_read_pairs_per_s"]), ratio)
    return t


def _goal_table(data):
    full = data["full_soc"]
    t = Table("Goals (whole SoC)", ["goal", "measured", "target", "met"])
    speed = full["cycles_per_s"] / full["baseline_cycles_per_s"]
    t.add("cycles/s vs LiteX default build", round(speed, 2), f">= {GOALS['speedup']}", speed >= GOALS["speedup"])
    reads = full["etherbone_reads_per_s"]
    t.add("Etherbone CSR reads/s", round(reads), f">= {GOALS['reads_per_s']:.0f}", reads >= GOALS["reads_per_s"])
    if "threads1_cycles_per_s" in full:
        t.add("cycles/s vs LiteX default, 1 thread (the default)",
              round(full["threads1_cycles_per_s"] / full["baseline_cycles_per_s"], 2), "", "")
    comp = full["compile_s"] / full["baseline_compile_s"]
    t.add("cold compile time vs LiteX default", round(comp, 2), f"<= {GOALS['compile_ratio']}",
          comp <= GOALS["compile_ratio"])
    for k in ("make_sim_cold_s", "make_sim_warm_s", "threads2_make_sim_cold_s", "threads2_make_sim_warm_s",
              "wave1_make_sim_cold_s", "wave1_make_sim_warm_s"):
        if k in full:
            t.add(k.replace("_", " "), round(full[k]), "", "")
    return t


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

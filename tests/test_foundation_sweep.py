"""Sweeps (sim/bench/sweep.py): the process pool and a local Ray cluster (2 workers, loopback only, started and
stopped here) give the same numbers, a cached rerun simulates nothing and a changed gateware digest recomputes,
progress only on a terminal, an unreachable cluster's error, a failing point reported with its parameters while
the others complete, a worker that dies has its point rerun; ECP5 runs (nextpnr with a timeout) as tasks; the
scaling bench's quick mode."""
import fcntl
import io
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import termios
import time

import pytest

from sim import ROOT
from sim.bench import bench_switch
from sim.bench import sweep as sw
from sim.progress import Stages

pytestmark = pytest.mark.long        # the whole file: tens of seconds or more


# Tasks of these tests (module level: the pool's workers find them by name, Ray gets them by value) ---------

def square(x, seed):
    if x == 2:
        raise ValueError(f"no square for x={x}")
    sw.progress(1, 2)
    return {"y": x * x, "seed": seed}


def die_once(x, marker):
    """Kills its own worker process the first time it runs x = 1 (the marker file says it did)."""
    if x == 1 and not os.path.exists(marker):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return {"x": x}


@pytest.fixture
def sweeps(tmp_path, monkeypatch):
    """An empty cache of our own; the settings conftest gave back afterwards."""
    monkeypatch.setattr(sw, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    old = sw.configure(workers=1, cluster=None, fresh=False)
    yield tmp_path
    sw.shutdown()
    sw.configure(**old)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    """`ray start --head` on 127.0.0.1 with 2 CPUs and no token (loopback only), its Ray Client address;
    stopped (SIGTERM to the process we started, which stops its own children) also when a test fails."""
    import ray.cloudpickle
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    tmp = tmp_path_factory.mktemp("ray")
    gcs, client = _free_port(), _free_port()
    # Loopback only (Ray takes 127.0.0.1 as given only outside a "cluster"), no token, and time for the Ray
    # Client's per-driver server to start on a loaded machine (30 s by default).
    env = dict(os.environ, RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER="0", RAY_AUTH_MODE="disabled",
               RAY_USAGE_STATS_ENABLED="0", RAY_CLIENT_SERVER_CHECK_CHANNEL_TIMEOUT_S="120")
    log = open(tmp / "ray.log", "w")
    proc = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "ray"), "start", "--head", "--block",
                             "--node-ip-address=127.0.0.1", f"--port={gcs}", f"--ray-client-server-port={client}",
                             "--num-cpus=2", "--include-dashboard=false", "--disable-usage-stats",
                             "--object-store-memory=100000000", f"--temp-dir={tmp}"],
                            env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    old_mode = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                socket.create_connection(("127.0.0.1", client), timeout=1).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the test's Ray cluster did not start:\n" + open(tmp / "ray.log").read()[-3000:])
                time.sleep(0.5)
        yield f"ray://127.0.0.1:{client}"
    finally:
        sw.shutdown()
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        if old_mode is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = old_mode


def _switch_points():
    """A small sweep of the switch bench: the RTL iSLIP (N = 8, k = 2) at two loads and two seeds."""
    params = [dict(n=8, k=2, load=load, pattern="bernoulli", size=256, scale=1 / 512, seed=seed)
              for load in (0.5, 0.95) for seed in (1, 2)]
    return sw.tasks(bench_switch.islip_point, params, bench_switch._gateware)


def test_pool_and_ray_agree_and_the_cache_skips_them(sweeps, ray_cluster, monkeypatch):
    points = _switch_points()
    sw.configure(workers=2)
    pool = sw.sweep("t_switch", points)
    assert sw.last_stats.computed == 4 and sw.last_stats.executor == "2 local processes"
    assert len({json.dumps(r, sort_keys=True) for r in pool}) == 4      # the seeds and loads differ
    assert all(0 < r["islip"]["utilisation"] <= 1 for r in pool)

    sw.configure(cluster=ray_cluster)
    on_ray = sw.sweep("t_switch", points, fresh=True)
    assert sw.last_stats.computed == 4 and sw.last_stats.executor == f"Ray at {ray_cluster}"
    assert on_ray == pool

    # A rerun finds every point in the cache: no simulation (the simulator would fail here).
    sw.configure(cluster=None, workers=1)
    def no_simulation(*args):
        raise AssertionError("simulated a cached point")
    monkeypatch.setattr(bench_switch, "run_scheduler", no_simulation)
    assert sw.sweep("t_switch", points) == pool
    assert (sw.last_stats.computed, sw.last_stats.cached) == (0, 4)
    assert len(os.listdir(sweeps / "cache" / "t_switch")) == 4

    # Other gateware (a new digest) is simulated again.
    changed = [sw.Point(p.task, p.params, p.gateware + "-changed") for p in points[:1]] + points[1:]
    out = sw.sweep("t_switch", changed, strict=False)
    assert isinstance(out[0], sw.Failure) and "simulated a cached point" in out[0].error
    assert out[1:] == pool[1:] and sw.last_stats.cached == 3


@pytest.mark.parametrize("where", ["pool", "ray"])
def test_a_failing_point_is_reported_and_the_others_complete(sweeps, where, request):
    if where == "ray":
        sw.configure(cluster=request.getfixturevalue("ray_cluster"))
    else:
        sw.configure(workers=2)
    points = sw.tasks(square, [dict(x=x, seed=7) for x in range(5)])
    with pytest.raises(sw.SweepError) as e:
        sw.sweep("t_fail", points)
    message = str(e.value)
    assert "1 of 5 points failed" in message and "square(x=2, seed=7)" in message
    assert "ValueError: no square for x=2" in message
    assert e.value.results == [{"y": 0, "seed": 7}, {"y": 1, "seed": 7}, None, {"y": 9, "seed": 7},
                               {"y": 16, "seed": 7}]
    out = sw.sweep("t_fail", points, strict=False)          # the points that completed were cached
    assert sw.last_stats.cached == 4 and sw.last_stats.failed == 1 and isinstance(out[2], sw.Failure)


@pytest.mark.parametrize("where", ["pool", "ray"])
def test_a_worker_that_dies_has_its_point_rerun(sweeps, where, request):
    if where == "ray":
        sw.configure(cluster=request.getfixturevalue("ray_cluster"))
    else:
        sw.configure(workers=2)
    marker = str(sweeps / f"died_{where}")
    out = sw.sweep("t_die", sw.tasks(die_once, [dict(x=x, marker=marker) for x in range(4)]))
    assert os.path.exists(marker)                           # a worker did die
    assert out == [{"x": x} for x in range(4)]


def test_unreachable_cluster_fails_fast_naming_it(sweeps):
    address = f"ray://127.0.0.1:{_free_port()}"             # nothing listens there
    sw.configure(cluster=address, connect_timeout=2)
    t0 = time.monotonic()
    with pytest.raises(sw.ClusterUnreachable, match=re.escape(address)):
        sw.sweep("t_unreachable", sw.tasks(square, [dict(x=1, seed=1)]))
    assert time.monotonic() - t0 < 10


def test_unreachable_cluster_from_make_bench():
    """The command line's error: exit status 2 and the address, nothing run."""
    address = f"ray://127.0.0.1:{_free_port()}"
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    r = subprocess.run([sys.executable, "-m", "sim.bench", "switch", "--quick", "--fresh", "--cluster", address,
                        "--connect-timeout", "1"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr[-2000:]
    assert f"the Ray cluster at {address} does not answer" in r.stderr


def _drain(fd, quiet=0.5):
    """Everything written to the pseudo-terminal so far: the kernel hands a pty's output over in pieces, later
    on a loaded machine (one read got only the bar's first line)."""
    out = b""
    while select.select([fd], [], [], quiet)[0]:
        out += os.read(fd, 1 << 16)
    return out


def test_progress_on_a_terminal_only(sweeps, monkeypatch):
    points = sw.tasks(square, [dict(x=x, seed=1) for x in (0, 1, 3)])
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 160, 0, 0))     # a terminal's size
    tty = os.fdopen(slave, "w")
    monkeypatch.setattr(sys, "stderr", tty)
    sw.sweep("t_progress", points)
    tty.flush()
    shown = _drain(master).decode(errors="replace")
    tty.close()
    os.close(master)
    assert "t_progress" in shown and "3/3" in shown and "point" in shown
    assert "square(x=" in shown and "50 %" in shown          # a task's own progress beside the bar

    log = io.StringIO()                                     # a CI log: not a terminal
    monkeypatch.setattr(sys, "stderr", log)
    sw.sweep("t_progress", points, fresh=True)
    assert sw.last_stats.computed == 3 and log.getvalue() == ""


def test_stages_follow_a_tool_log(tmp_path):
    """Board builds and ECP5 runs: the stage reached, read from the tool's log as it grows."""
    log = tmp_path / "nextpnr.log"
    seen = []
    stages = [("packing", r"^Info: Packing"), ("placement", r"^Info: Creating initial"),
              ("routing", r"^Info: Routing")]
    with Stages([str(log)], stages, "t", on_stage=seen.append, interval=0.05) as s:
        log.write_text("Info: Packing IOs..\n")
        time.sleep(0.3)
        assert s.stage == "packing"
        with open(log, "a") as f:
            f.write("Info: Creating initial analytic placement\nInfo: Routing..\n")
    assert s.stage == "routing" and [x.split()[0] for x in seen] == ["packing", "placement", "routing"]


def test_bench_scaling_quick(sweeps, ray_cluster, tmp_path):
    """Quick mode of `make bench BENCH=scaling` on the test's cluster: every executor gives the same results."""
    from sim.bench import bench_scaling
    res = bench_scaling.run(quick=True, cluster=ray_cluster)
    sweep_table, overhead = res.tables
    assert [row[0] for row in sweep_table.rows][::3] == ["switch quick sweep", "RIFL BER points (quick: F = 64, "
                                                         "20000 cycles)"]
    assert [row[2] for row in sweep_table.rows][:3] == ["1 worker (in-process)", "2 local processes",
                                                        f"Ray ({ray_cluster}), 2 workers"]
    assert all(row[-1] is True for row in sweep_table.rows)
    assert all(row[4] > 0 and row[5] >= row[4] and row[9] > 0 for row in sweep_table.rows)
    assert [row[0] for row in overhead.rows][:2] == ["in-process", "2 local processes"]
    assert res.data["ray_round_trip_ms"] > 0
    md = res.write(str(tmp_path))
    index = open(tmp_path / "index.html").read()
    assert "scaling.json" in index and "Per-task overhead" in index and os.path.exists(md)


def test_ecp5_runs_as_tasks(sweeps, tmp_path, monkeypatch):
    """nextpnr runs as sweep points: two seeds of one module share yosys's netlist, each places and routes in
    its own folder; a run over its timeout returns its failure figures instead of stopping the sweep."""
    from sim.bench import ecp5
    monkeypatch.setattr(ecp5, "BUILD", str(tmp_path / "build"))
    sw.configure(workers=2)
    params = [dict(factory="sim.bench.bench_switch:ecp5_scheduler", args=dict(n=4, k=1), name="t_islip4",
                   device="LFE5U-25F", freq_mhz=80, seed=seed) for seed in (1, 2)]
    params.append(dict(params[0], name="t_islip4_short", timeout=0.01))
    seed1, seed2, short = sw.sweep("t_ecp5", sw.tasks(ecp5.synth_point, params, ecp5.point_digest))
    assert seed1["how"] == seed2["how"] == "placed and routed"
    assert seed1["lut4"] == seed2["lut4"] > 0 and seed1["fmax_mhz"]["sys_clk"] > 0 and seed1["seed"] == 1
    for seed in (1, 2):
        assert os.path.exists(os.path.join(ecp5.seed_dir("t_islip4", "LFE5U-25F", seed), "report.json"))
    assert short["how"].startswith("failed:") and "over 0.01 s" in short["how"]
    assert short["report"] is None and short["io_bits"] == seed1["io_bits"] > 0

"""Allreduce in litex_sim (issue 16): the 2-leaf + 1-spine network of simulated MiniSharp SoCs, driven by 4
separate rank processes on their own TAPs; every host receives the identical, exact result. A rank host's
teardown and setup are refused by the admin mask. Afterwards no process, TAP, bridge or namespace remains."""
import os
import signal
import subprocess
import sys
import time

import pytest

from sim import ROOT
from sim.verilated import available

NS_PREFIX = "innet-"
pytestmark = [pytest.mark.extended,
              pytest.mark.skipif(not available() or os.geteuid() != 0, reason="needs Verilator and root")]


def leftovers(ns):
    """Namespaces and processes a run may have left: the namespace itself, any process working in its run
    folder."""
    left = [line for line in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()
            if line.split()[:1] == [ns]]
    run_dir = os.path.join(ROOT, "build", "sim", "cluster", ns)
    for pid in os.listdir("/proc"):
        try:
            if pid.isdigit() and os.readlink(f"/proc/{pid}/cwd").startswith(run_dir):
                left.append(f"pid {pid}")
        except OSError:
            pass
    return left + ([run_dir] if os.path.exists(run_dir) else [])


@pytest.mark.long
def test_spine_leaf_allreduce_from_four_host_processes():
    """Through the MiniSharp network bench in quick mode (one cluster run serves both): 300 elements, 4 rank
    processes, host h1 also sending a teardown and a setup."""
    from sim.bench import bench_minisharp_net
    res = bench_minisharp_net.run(quick=True)
    assert len(res.tables) == 3 and all(t.rows for t in res.tables)
    f32 = next(row for row in res.tables[0].rows if row[0] == "host only: numpy float32 sum")
    assert f32[3].startswith("no (")                         # measured in the run: the traps round in float32
    r = res.data["spine-leaf exact"]
    assert r["ok"], r["mismatches"]
    assert len(r["ranks"]) == 4
    c = r["counters"]
    assert c["leaf0"]["drop_not_admin"] == 2                 # the rogue host's teardown and setup
    assert c["spine"]["chunks"] == -(-300 // 32)
    # A leaf (a CHILD context, no window) reduces a chunk again when its ranks resend it (their 1 s timer runs
    # out on a loaded machine), the spine drops the partial as a duplicate: without resends, equal counts.
    resends = sum(x["resends"] for x in r["ranks"])
    for sw in c:
        assert c[sw]["setups"] == 1 and c[sw]["teardowns"] == 1, sw
        assert c["spine"]["chunks"] <= c[sw]["chunks"] <= c["spine"]["chunks"] + resends, (sw, resends)
    assert leftovers(r["ns"]) == []
    lat = res.data["latency exact"]
    assert 0 < lat["leaf_up"] < 200 and 0 < lat["spine"] < 400 and 0 < lat["leaf_down"] < 200


@pytest.mark.long
def test_three_level_tree_from_a_topology_file(tmp_path):
    """`make allreduce TOPOLOGY=<file>`'s path with a file the generator wrote: a root over 2 spines over a leaf
    each (5 simulated SoCs of 3 ports, the spine-leaf build), 4 rank processes, 200 elements: bit-exact at every
    rank, every switch set up and torn down once, and nothing left behind."""
    from sim import allreduce
    from software.minisharp.topofile import main as topofile
    path = tmp_path / "tree3.yaml"
    assert topofile(["tree3", "--spines", "2", "--leaves-per-spine", "1", "--hosts-per-leaf", "2",
                     "-o", str(path)]) == 0
    r = allreduce.run(str(path), ranks=4, elements=200, seed=5, timeout=3600, log=lambda *_: None)
    assert r["ok"], r["mismatches"]
    assert sorted(r["counters"]) == ["leaf0_0", "leaf1_0", "root", "spine0", "spine1"]
    for sw, c in r["counters"].items():
        assert c["setups"] == 1 and c["teardowns"] == 1, sw
    assert leftovers(r["ns"]) == []


def _is_rank(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"\0rank\0" in f.read()
    except OSError:
        return False


def _deaf_to_ctrl_c():
    # As a parent may leave it (a shell's background job, some test runners): SIGINT ignored and blocked,
    # both inherited across exec. The driver must take Ctrl-C back (sim.runner.handle_interrupts): in the
    # full suite it once never saw the signal and left its four ranks running.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})


def test_ctrl_c_during_an_allreduce_removes_everything(tmp_path):
    """Ctrl-C while the ranks run: every simulator, host process, TAP, bridge and the namespace go away, and
    the driver exits non-zero (SIGTERM takes the same path: sim.runner turns it into KeyboardInterrupt). The
    driver's output goes to a file: a pipe nobody reads while the ranks run fills and blocks the driver."""
    log = open(str(tmp_path / "allreduce.log"), "w+")
    p = subprocess.Popen([sys.executable, "-m", "sim.allreduce", "--elements", "400000"], cwd=ROOT,
                         stdout=log, stderr=subprocess.STDOUT, text=True, preexec_fn=_deaf_to_ctrl_c)

    def output():
        log.seek(0)
        return log.read()[-4000:]
    ns, deadline = None, time.monotonic() + 300
    while time.monotonic() < deadline and p.poll() is None:
        names = [line.split()[0] for line in
                 subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.splitlines()]
        mine = [n for n in names if n.startswith(f"{NS_PREFIX}{p.pid}-")]
        if mine:
            pids = subprocess.run(["ip", "netns", "pids", mine[0]], capture_output=True, text=True).stdout.split()
            if sum(_is_rank(pid) for pid in pids) == 4:      # the 4 rank processes run (not an earlier phase)
                ns = mine[0]
                break
        time.sleep(0.5)
    assert ns, output() if p.poll() is not None else "the ranks never started"
    p.send_signal(signal.SIGINT)
    try:
        p.wait(timeout=120)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError(f"the driver did not exit within 120 s of Ctrl-C; still running: {holders(log.name)}\n"
                             + output())
    assert p.returncode != 0, output()
    assert leftovers(ns) == []
    assert holders(log.name) == [], output()          # every process the driver started (they inherit its stdout)


def holders(path):
    """Processes that hold `path` open."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        if int(pid) == os.getpid():
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}") == path:
                    found.append(f"pid {pid}: " + open(f"/proc/{pid}/cmdline", "rb").read().replace(b"\0", b" ").decode())
                    break
            except OSError:
                pass
    return found

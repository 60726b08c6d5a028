"""Simulated SoC end to end: build, run in a private namespace, drive over Etherbone, clean up."""
import os
import random
import subprocess
import sys
import time

import pytest

from sim import ROOT, target
from sim.runner import SimSession, SimulationFailed

pytestmark = [pytest.mark.sim, pytest.mark.long]

HOST_SCRIPT = r'''
import os, random, sys
from software.client import InnetClient
bus = InnetClient(os.environ["INNET_SOC_IP"], csr_csv=os.environ["INNET_CSR_CSV"], timeout=5).open()
assert bus.ident() == "innet SoC (litex_sim)", bus.ident()
rng = random.Random(2024)
bad = 0
for _ in range(1000):
    v = rng.getrandbits(32)
    bus.regs.ctrl_scratch.write(v)
    bad += bus.regs.ctrl_scratch.read() != v
print("pairs=1000 mismatches=%d" % bad)
sys.exit(1 if bad else 0)
'''


def _namespaces():
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def _own_namespaces():
    """This process's session namespaces (other pytest workers run sessions of their own meanwhile)."""
    return {ns for ns in _namespaces() if ns.startswith(f"innet-{os.getpid()}-")}


def _processes(pattern):
    r = subprocess.run(["pgrep", "-f", pattern], capture_output=True, text=True)
    return set(r.stdout.split())


@pytest.fixture(scope="module")
def gateware():
    return target.build(())


def test_identifier_and_1000_scratch_pairs(gateware, tmp_path):
    script = tmp_path / "host.py"
    script.write_text(HOST_SCRIPT)
    ns_before = _own_namespaces()
    with SimSession(gateware) as sim:
        assert sim.ident == "innet SoC (litex_sim)"
        vsim_pid = sim.proc.pid
        ns = sim.ns
        assert ns in _namespaces()
        r = sim.run([sys.executable, str(script)], timeout=300, capture=True)
        assert r.returncode == 0, r.stdout + r.stderr
        assert "pairs=1000 mismatches=0" in r.stdout
    assert ns not in _namespaces()
    assert _own_namespaces() == ns_before
    with pytest.raises(ProcessLookupError):
        os.kill(vsim_pid, 0)


def test_failing_host_command_is_reported_and_cleaned_up(gateware):
    with SimSession(gateware) as sim:
        r = sim.run([sys.executable, "-c", "import sys; sys.exit(5)"])
        assert r.returncode == 5
        ns, pid = sim.ns, sim.proc.pid
    assert ns not in _namespaces()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_command_timeout_kills_it_and_cleans_up(gateware):
    with pytest.raises(SimulationFailed, match="timed out"):
        with SimSession(gateware) as sim:
            ns = sim.ns
            sim.run(["sleep", "600"], timeout=2)
    assert ns not in _namespaces()
    assert not _processes(f"ip netns exec {ns}")


def _fake_gateware(tmp_path, script):
    gw = tmp_path / "fake" / "gateware"
    (gw / "obj_dir").mkdir(parents=True)
    vsim = gw / "obj_dir" / "Vsim"
    vsim.write_text("#!/bin/sh\n" + script)
    vsim.chmod(0o755)
    return str(gw)


def test_simulator_that_never_answers_fails_within_timeout(tmp_path):
    gw = _fake_gateware(tmp_path, "exec sleep 600\n")
    t0 = time.monotonic()
    with pytest.raises(SimulationFailed, match="did not answer"):
        with SimSession(gw, boot_timeout=5):
            pass
    assert time.monotonic() - t0 < 30
    assert not _processes("sleep 600")
    assert not _own_namespaces()


def test_simulator_that_crashes_is_a_failure(tmp_path):
    gw = _fake_gateware(tmp_path, "echo 'boom: cannot open tap'; exit 7\n")
    with pytest.raises(SimulationFailed, match="exited with code 7") as e:
        with SimSession(gw, boot_timeout=20):
            pass
    assert "boom" in str(e.value)
    assert not _own_namespaces()


def test_two_sessions_at_once(gateware):
    with SimSession(gateware) as a, SimSession(gateware) as b:
        assert a.ns != b.ns
        for sim in (a, b):
            r = sim.run([sys.executable, "-m", "software.cli", "--csr-csv", sim.csr_csv, "write", "ctrl_scratch",
                         str(id(sim) & 0xffff)], timeout=60)
            assert r.returncode == 0
        for sim in (a, b):
            r = sim.run([sys.executable, "-m", "software.cli", "--csr-csv", sim.csr_csv, "read", "ctrl_scratch"],
                        timeout=60, capture=True)
            assert int(r.stdout, 16) == id(sim) & 0xffff


OWNER_SCRIPT = r'''
import sys, time
sys.path.insert(0, sys.argv[2])
from sim.runner import SimSession
sim = SimSession(sys.argv[1])
sim.start()
print(sim.ns, sim.proc.pid, flush=True)
time.sleep(600)
'''


def test_owner_killed_takes_the_simulator_and_its_namespace_with_it(gateware, tmp_path):
    """A session whose owner dies by SIGKILL (no cleanup runs): its simulator dies with it, and the next
    session deletes the namespace it left behind."""
    script = tmp_path / "owner.py"
    script.write_text(OWNER_SCRIPT)
    owner = subprocess.Popen([sys.executable, str(script), gateware, ROOT], stdout=subprocess.PIPE, text=True)
    ns, vsim_pid = owner.stdout.readline().split()
    assert ns in _namespaces()
    owner.kill()
    owner.wait()
    for _ in range(50):
        try:
            os.kill(int(vsim_pid), 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the simulator outlived its owner")
    with SimSession(gateware):                      # (a session of another pytest worker may come first)
        assert ns not in _namespaces()


def test_a_cpu_build_leaves_the_next_socs_memory_map_alone():
    """LiteX merges a CPU's memory map into the SoC's in place; a VexRiscv SoC (the boards' Sparsr with XMEM in
    DRAM) built first in a process once moved every later CPU-less SoC's CSRs to 0xf0000000, and that sim
    never answered over Etherbone (the suite failed whenever a board build ran before a sim test)."""
    from litex.soc.integration.soc_core import SoCCore
    before = dict(SoCCore.mem_map)
    assert target.SimInnetSoC(cpu_type="vexriscv").mem_map["csr"] == 0xf0000000
    assert target.SimInnetSoC().mem_map["csr"] == 0x00000000
    assert SoCCore.mem_map == before

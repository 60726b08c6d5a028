"""Run a simulated innet SoC inside a private network namespace and drive it from host tools.

    with SimSession(gateware_dir) as sim:        # namespace + Vsim, waits until Etherbone answers
        sim.run([sys.executable, "my_script.py"])  # runs inside the same namespace

The TAP device that litex_sim creates exists only inside the namespace, so no simulated traffic can leave
it. On exit (normal, exception, timeout, Ctrl-C or SIGTERM) every process started is killed by pid/process
group and the namespace is deleted. Should the owning process die without cleaning up (SIGKILL, or a script
that leaves SIGTERM at its default), the simulator is killed with it (parent-death signal), and the next
session removes the namespace it left behind (namespaces are named after their owner's pid). A simulator that dies is reported as SimulationFailed with its log tail.
Several sessions can run at once: each has its own namespace and log.

CLI: python -m sim.runner [--cores sync,...] [--timeout S] -- COMMAND...   (COMMAND gets INNET_CSR_CSV,
INNET_SOC_IP in its environment; the exit code is COMMAND's, or 3 when the simulation itself failed).
"""
import argparse
import ctypes
import os
import re
import secrets
import signal
import subprocess
import sys
import time

from sim import ROOT, target
from soc.common import CORE_NAMES, SOC_IP_ADDRESS
from software.argtypes import names, positive_float


class SimulationFailed(RuntimeError):
    """The simulator could not be started, stopped early, or never answered."""


def _ip(*args, check=True):
    r = subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise SimulationFailed(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


NS_PREFIX = "innet-"
# The simulator, its output line-buffered so that a failure's log tail shows what it printed.
VSIM_COMMAND = ["stdbuf", "-oL", "-eL", "obj_dir/Vsim"]
_PR_SET_PDEATHSIG = 1


def die_with_parent():
    """preexec_fn: SIGKILL this process when the process that started it dies."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def remove_stale_namespaces():
    """Delete the namespaces (and kill their processes) of sessions whose owner no longer runs."""
    for line in _ip("netns", "list", check=False).stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        m = re.fullmatch(NS_PREFIX + r"(\d+)-[0-9a-f]+", name)
        if m and not _pid_alive(int(m.group(1))):
            _delete_namespace(name)


def _delete_namespace(ns):
    for pid in _ip("netns", "pids", ns, check=False).stdout.split():
        try:
            os.kill(int(pid), signal.SIGKILL)
        except (ProcessLookupError, ValueError):
            pass
    for _ in range(50):
        if _ip("netns", "del", ns, check=False).returncode == 0:
            return
        time.sleep(0.1)


def kill_group(proc, grace=3.0):
    if proc is None or proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


class NamespaceSession:
    """A private network namespace and the host processes started in it (`popen`, `run`); on exit every
    process is killed by process group and the namespace deleted with what it holds. Subclasses start
    their simulators in `start()` (after `create_namespace()`) and stop them in `stop()`."""
    def __init__(self):
        self.ns = f"{NS_PREFIX}{os.getpid()}-{secrets.token_hex(3)}"
        self.hosts = []
        self._ns_created = False

    def __enter__(self):
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc):
        self.stop()

    def start(self):
        self.create_namespace()

    def stop(self):
        self.delete_namespace()

    def create_namespace(self):
        remove_stale_namespaces()
        _ip("netns", "add", self.ns)
        self._ns_created = True
        _ip("-n", self.ns, "link", "set", "lo", "up")

    def delete_namespace(self):
        for p in self.hosts:
            kill_group(p, grace=1.0)
        self.hosts = []
        if self._ns_created:
            _delete_namespace(self.ns)
            self._ns_created = False

    def check_alive(self):
        """Raise SimulationFailed when a simulator died (subclasses)."""

    def env(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
        return env

    def popen(self, cmd, **kwargs):
        """Start a host process inside the namespace (killed on exit if still running)."""
        p = subprocess.Popen(["ip", "netns", "exec", self.ns, *cmd], cwd=ROOT, env=self.env(),
                             stdin=subprocess.DEVNULL, start_new_session=True, preexec_fn=die_with_parent, **kwargs)
        self.hosts.append(p)
        return p

    def run(self, cmd, timeout=600, check=True, capture=False):
        """Run `cmd` inside the namespace; kills it (by process group) on timeout. Returns CompletedProcess."""
        p = self.popen(cmd, stdout=subprocess.PIPE if capture else None, stderr=subprocess.PIPE if capture else None,
                       text=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            kill_group(p, grace=1.0)
            raise SimulationFailed(f"`{' '.join(cmd)}` timed out after {timeout} s") from None
        except BaseException:
            kill_group(p, grace=1.0)
            raise
        self.hosts.remove(p)
        if check:
            self.check_alive()
        return subprocess.CompletedProcess(cmd, p.returncode, out, err)


class SimSession(NamespaceSession):
    """A running simulated SoC. gateware_dir: from sim.target.build(); boot_timeout: seconds to wait
    for the first Etherbone answer."""
    def __init__(self, gateware_dir, boot_timeout=90.0):
        vsim = os.path.join(gateware_dir, "obj_dir", "Vsim")
        if not os.path.exists(vsim):
            raise SimulationFailed(f"{vsim} does not exist: build it first (sim.target.build)")
        if os.geteuid() != 0:
            raise SimulationFailed("network namespaces need root (run as root or through sudo)")
        NamespaceSession.__init__(self)
        self.gateware_dir = gateware_dir
        self.csr_csv = os.path.join(gateware_dir, "csr.csv")
        self.soc_ip = SOC_IP_ADDRESS
        self.boot_timeout = boot_timeout
        runs = os.path.join(os.path.dirname(gateware_dir), "runs")
        os.makedirs(runs, exist_ok=True)
        self.log_path = os.path.join(runs, f"{self.ns}.log")
        self.proc = None
        self.started_at = None

    # Lifecycle ------------------------------------------------------------------------------------
    def start(self):
        self.create_namespace()
        # Under the build's lock until the SoC answers: another process rebuilding this configuration (its
        # Verilog differs in the order of its statements) would remove obj_dir/Vsim before the launch.
        with target.build_lock(os.path.dirname(self.gateware_dir)):
            log = open(self.log_path, "w")
            self.proc = subprocess.Popen(["ip", "netns", "exec", self.ns, *VSIM_COMMAND], cwd=self.gateware_dir,
                                         stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                         start_new_session=True, preexec_fn=die_with_parent)
            log.close()
            self.started_at = time.monotonic()
            self._wait_ready()

    def _wait_ready(self):
        deadline = time.monotonic() + self.boot_timeout
        while time.monotonic() < deadline:
            self.check_alive()
            probe = self.run([sys.executable, "-m", "software.cli", "--host", self.soc_ip, "--timeout", "1",
                              "--csr-csv", self.csr_csv, "ident"], timeout=10, check=False, capture=True)
            if probe.returncode == 0:
                self.ident = probe.stdout.strip()
                return
            time.sleep(0.5)
        raise SimulationFailed(f"the simulated SoC did not answer over Etherbone within {self.boot_timeout:.0f} s "
                               f"(log {self.log_path}):\n{self.log_tail()}")

    def check_alive(self):
        if self.proc is None:
            raise SimulationFailed("simulation not started")
        if self.proc.poll() is not None:
            raise SimulationFailed(f"the simulator exited with code {self.proc.returncode} "
                                   f"(log {self.log_path}):\n{self.log_tail()}")

    def log_tail(self, n=2000):
        try:
            return open(self.log_path, errors="replace").read()[-n:]
        except OSError:
            return ""

    def stop(self):
        """Kill everything started (Vsim and any command still running in the namespace), delete the namespace."""
        kill_group(self.proc)
        self.delete_namespace()

    def __exit__(self, exc_type, *exc):
        self.stop()
        if exc_type is None and os.path.exists(self.log_path):
            os.remove(self.log_path)        # kept when the session failed

    # Host commands --------------------------------------------------------------------------------
    def env(self):
        env = NamespaceSession.env(self)
        env["INNET_CSR_CSV"] = self.csr_csv
        env["INNET_SOC_IP"] = self.soc_ip
        return env


def _raise_on_sigterm(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def handle_interrupts():
    """For a command-line entry point that owns simulations: Ctrl-C (SIGINT) and SIGTERM raise
    KeyboardInterrupt, so that the sessions' cleanup runs, even if the parent left SIGINT ignored or either
    signal blocked (both are inherited across exec; a process started under such a parent would otherwise
    keep running with everything it started)."""
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _raise_on_sigterm)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Run the simulated SoC in a private network namespace.")
    parser.add_argument("--cores", type=names(CORE_NAMES, "cores"), default=[],
                        help=f"comma-separated cores to include, of {', '.join(CORE_NAMES)}")
    parser.add_argument("--cpu-type", default=None, choices=["vexriscv"], help="add a CPU (default: none)")
    parser.add_argument("--timeout", type=positive_float, default=600, help="seconds the command may run")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="command to run inside the namespace")
    args = parser.parse_args(argv)
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command to run, e.g. -- python -m software.cli ident")
    handle_interrupts()
    gateware = target.build(args.cores, cpu_type=args.cpu_type)
    try:
        with SimSession(gateware) as sim:
            return sim.run(command, timeout=args.timeout).returncode
    except SimulationFailed as e:
        print(f"simulation failed: {e}", file=sys.stderr)
        return 3


if __name__ == "__main__":
    sys.exit(main())

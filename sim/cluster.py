"""Several simulated SoCs at once, wired as a network inside one private network namespace.

    with SimCluster(topology) as cl:              # builds what is missing, starts every SoC, waits for them
        cl.run([sys.executable, "-m", "tool"])      # a host command inside the namespace
        p = cl.popen([...])                          # a host process (killed on exit if still running)

Every switch of a `software.minisharp.topology.Topology` is one litex_sim SoC with MiniSharp on its data
ports (one build per port count: the management IP and MAC come from the sim configuration). Inside the
namespace, data port p of switch s is the TAP `tap_name(s, p)`; the two TAPs of each link are joined by a
Linux bridge; every management TAP is on the bridge `br-mgmt`, which holds the host tools' address
(topology.MGMT_HOST_IP), and each SoC answers Etherbone at topology.mgmt_ip(s). Host processes use the
TAPs of the host ports directly (raw sockets).

Everything started (every Vsim, host process, TAP and bridge, the namespace) is removed on exit: normal,
exception, timeout, Ctrl-C or SIGTERM (sim.runner's rules: processes by process group, parent-death
signal, the namespace deleted with what it holds, stale namespaces of dead owners removed first).
"""
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time

from sim import ROOT, target, verilated
from sim.runner import VSIM_COMMAND, NamespaceSession, SimulationFailed, die_with_parent, kill_group
from software.minisharp.topology import MGMT_HOST_IP, mgmt_tap, tap_name

MGMT_BRIDGE = "br-mgmt"


def soc_options(topology):
    """MiniSharpSoCBlock options of the topology's switches."""
    return dict(chunk_elements=topology.chunk_elements, n_slots=topology.n_slots)


# What a switch's simulator is made from: a build whose stamp matches is reused without generating its
# gateware again (sim.target.build compares the generated Verilog, 10-20 s a configuration).
_SOURCES = ["cores", "soc", "sim/target.py", "sim/models", "sim/litex_sim", "sim/verilated/build.py",
            "sim/verilated/litex_sim.py"]


def _stamp(ports, options):
    from importlib.metadata import version
    pkgs = [version(p) for p in ("litex", "liteeth", "migen")]
    h = hashlib.sha256(json.dumps([ports, sorted(options.items()), target.SIM_THREADS, pkgs,
                                   verilated.version()]).encode())
    for top in _SOURCES:
        path = os.path.join(ROOT, top)
        files = [path] if os.path.isfile(path) else sorted(
            os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith((".py", ".c", ".cpp", ".h")))
        for f in files:
            h.update(f[len(ROOT):].encode())
            with open(f, "rb") as fh:
                h.update(fh.read())
    return h.hexdigest()


def build(topology, quiet=True):
    """{ports: gateware folder} for every port count of the topology (each built once, then reused)."""
    out = {}
    for n in sorted(set(topology.switches.values())):
        opts = soc_options(topology)
        gw = os.path.join(ROOT, "build", "sim", target.config_name(["minisharp"], minisharp_ports=n, minisharp=opts),
                          "gateware")
        stamp, path = _stamp(n, opts), os.path.join(gw, "cluster.stamp")
        if os.path.exists(os.path.join(gw, "obj_dir", "Vsim")) and os.path.exists(path) and open(path).read() == stamp:
            out[n] = gw
            continue
        out[n] = target.build(["minisharp"], minisharp_ports=n, minisharp=opts, quiet=quiet)
        with open(os.path.join(out[n], "cluster.stamp"), "w") as f:
            f.write(stamp)
    return out


class SimCluster(NamespaceSession):
    """The running network of `topology`. boot_timeout: seconds for every SoC to answer Etherbone."""
    def __init__(self, topology, boot_timeout=120.0, quiet=True):
        if os.geteuid() != 0:
            raise SimulationFailed("network namespaces need root (run as root or through sudo)")
        NamespaceSession.__init__(self)
        self.topology = topology
        self.boot_timeout = boot_timeout
        self.quiet = quiet
        self.dir = os.path.join(ROOT, "build", "sim", "cluster", self.ns)
        self.procs = {}          # switch -> Vsim Popen
        self.gateware = {}

    # Lifecycle ------------------------------------------------------------------------------------
    def start(self):
        self.gateware = build(self.topology, self.quiet)
        self.create_namespace()
        self._ns("sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
        for sw, ports in self.topology.switches.items():
            self._start_switch(sw, ports)
        self._wait_taps()
        self._bridge(MGMT_BRIDGE, [mgmt_tap(sw) for sw in self.topology.switches], address=f"{MGMT_HOST_IP}/24")
        for k, ((a, pa), (b, pb)) in enumerate(self.topology.links):
            self._bridge(f"br-l{k}", [tap_name(a, pa), tap_name(b, pb)])
        self._wait_ready()

    def _ns(self, *cmd):
        r = subprocess.run(["ip", "netns", "exec", self.ns, *cmd], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
        if r.returncode:
            raise SimulationFailed(f"`{' '.join(cmd)}` failed in {self.ns}: {r.stderr.strip()}")
        return r.stdout

    def _start_switch(self, sw, ports):
        topo, gw = self.topology, self.gateware[ports]
        run = os.path.join(self.dir, sw)
        os.makedirs(run, exist_ok=True)
        for name in ("obj_dir", "modules"):
            os.symlink(os.path.join(gw, name), os.path.join(run, name))
        config = target.sim_config(["minisharp"], minisharp_ports=ports,
                                   data_interfaces=[tap_name(sw, p) for p in range(ports)], tap=mgmt_tap(sw),
                                   tap_ip="", soc_ip=topo.mgmt_ip(sw), soc_mac=topo.mgmt_mac(sw))
        with open(os.path.join(run, "sim_config.js"), "w") as f:
            f.write(config.get_json())
        log = open(os.path.join(run, "vsim.log"), "w")
        self.procs[sw] = subprocess.Popen(["ip", "netns", "exec", self.ns, *VSIM_COMMAND], cwd=run,
                                          stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                          start_new_session=True, preexec_fn=die_with_parent)
        log.close()

    def _links(self):
        return {line.split(":")[1].strip().split("@")[0] for line in self._ns("ip", "-o", "link").splitlines()}

    def _wait_taps(self):
        want = {mgmt_tap(sw) for sw in self.topology.switches}
        want |= {tap_name(sw, p) for sw, n in self.topology.switches.items() for p in range(n)}
        deadline = time.monotonic() + self.boot_timeout
        while not want <= self._links():
            self.check_alive()
            if time.monotonic() > deadline:
                raise SimulationFailed(f"TAPs missing after {self.boot_timeout:.0f} s: {sorted(want - self._links())}")
            time.sleep(0.2)

    def _bridge(self, name, members, address=None):
        self._ns("ip", "link", "add", name, "type", "bridge", "stp_state", "0", "mcast_snooping", "0")
        for m in members:
            self._ns("ip", "addr", "flush", "dev", m)
            self._ns("ip", "link", "set", m, "master", name)
        if address:
            self._ns("ip", "addr", "add", address, "dev", name)
        self._ns("ip", "link", "set", name, "up")

    def _wait_ready(self):
        deadline = time.monotonic() + self.boot_timeout
        for sw in self.topology.switches:
            while True:
                self.check_alive()
                probe = self.run([sys.executable, "-m", "software.cli", "--host", self.topology.mgmt_ip(sw),
                                  "--timeout", "1", "--csr-csv", self.csr_csv(sw), "ident"],
                                 timeout=10, check=False, capture=True)
                if probe.returncode == 0:
                    break
                if time.monotonic() > deadline:
                    raise SimulationFailed(f"switch {sw} did not answer over Etherbone within "
                                           f"{self.boot_timeout:.0f} s:\n{self.log_tail(sw)}")
                time.sleep(0.5)

    def csr_csv(self, switch):
        return os.path.join(self.gateware[self.topology.switches[switch]], "csr.csv")

    def check_alive(self):
        for sw, p in self.procs.items():
            if p.poll() is not None:
                raise SimulationFailed(f"the simulator of {sw} exited with code {p.returncode}:\n{self.log_tail(sw)}")

    def log_tail(self, switch, n=2000):
        try:
            return open(os.path.join(self.dir, switch, "vsim.log"), errors="replace").read()[-n:]
        except OSError:
            return ""

    def stop(self):
        """Kill every host process and simulator, delete the namespace (TAPs and bridges with it), remove
        the run folders."""
        for p in self.procs.values():
            kill_group(p)
        self.delete_namespace()
        shutil.rmtree(self.dir, ignore_errors=True)

    def env(self):
        env = NamespaceSession.env(self)
        env["INNET_CLUSTER"] = json.dumps({sw: {"ip": self.topology.mgmt_ip(sw), "csr_csv": self.csr_csv(sw)}
                                           for sw in self.topology.switches})
        return env

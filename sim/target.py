"""litex_sim target: InnetSoC on LiteX's SimPlatform with an Etherbone port on a TAP device.

`build(cores=(), ...)` generates the gateware into build/sim/<config>/ and compiles it with Verilator, reusing
the compiled simulator when the generated Verilog and sim configuration did not change. It never runs the
simulation (LiteX would start it through sudo and swallow its failures); `sim.runner` does that inside a
private network namespace.
"""
import argparse
import fcntl
import hashlib
import json
import logging
import os
import re
import subprocess
import sys


from litex.build.generic_platform import Pins, Subsignal
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.soc.integration.builder import Builder
from migen.genlib.io import CRG as SimCRG

from litex.gen import LiteXModule
from liteeth.mac.core import LiteEthMACCore
from liteeth.phy.gmii import LiteEthPHYGMIIRX, LiteEthPHYGMIITX
from liteeth.phy.model import LiteEthPHYModel
from migen import ClockDomainsRenamer

from soc.innet_soc import InnetSoC

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIM_CLK_FREQ = int(1e6)        # nominal; Verilator runs as fast as it can
TAP_INTERFACE = "tap0"         # lives in the runner's namespace only
HOST_IP = "192.168.1.100"      # the TAP's address, inside the namespace
SOC_IP = "192.168.1.50"
MAX_DATA_PORTS = 4
MINISHARP_PORTS = 2            # data ports of the simulated MiniSharp, TAPs ms0.. in the namespace


def data_port_interface(i):
    return f"ms{i}"


class _GMIIDataPort(LiteXModule):
    """One simulated Ethernet data port: GMII model pads (gmii_ethernet sim module, one TAP each) and a LiteEth
    MAC core (preamble, FCS, padding) in the sys domain. `sink`/`source`: frames without preamble/FCS."""
    def __init__(self, pads):
        phy = LiteXModule()
        phy.dw = 8
        phy.tx = LiteEthPHYGMIITX(pads)
        phy.rx = LiteEthPHYGMIIRX(pads)
        phy.sink, phy.source = phy.tx.sink, phy.rx.source
        self.phy = phy
        self.mac = ClockDomainsRenamer({"eth_tx": "sys", "eth_rx": "sys"})(
            LiteEthMACCore(phy, dw=8, with_preamble_crc=True, with_padding=True))
        self.sink, self.source = self.mac.sink, self.mac.source


def _stream_pads(name):
    """8-bit valid/ready byte-stream pads, as LiteX's serial2console and ethernet sim modules expect."""
    return (name, 0, *[Subsignal(f"{d}_{s}", Pins(w)) for d in ("source", "sink")
                       for s, w in (("valid", 1), ("ready", 1), ("data", 8))])


_io = [
    ("sys_clk", 0, Pins(1)),
    ("sys_rst", 0, Pins(1)),
    _stream_pads("serial"),
    *[("gmii_eth", i,
        Subsignal("rx_data", Pins(8)),
        Subsignal("rx_dv",   Pins(1)),
        Subsignal("rx_er",   Pins(1)),
        Subsignal("tx_data", Pins(8)),
        Subsignal("tx_en",   Pins(1)),
        Subsignal("tx_er",   Pins(1)),
    ) for i in range(MAX_DATA_PORTS)],
    ("eth_clocks", 0,
        Subsignal("tx", Pins(1)),
        Subsignal("rx", Pins(1)),
    ),
    _stream_pads("eth"),
]


class SimInnetSoC(InnetSoC):
    """InnetSoC in litex_sim with the management Etherbone port on the `ethernet` sim module."""
    def __init__(self, cores=(), cpu_type=None, **kwargs):
        platform = SimPlatform("SIM", _io)
        self.crg = SimCRG(platform.request("sys_clk"))
        if cpu_type is not None:
            kwargs.update(with_uart=True, uart_name="sim")
        InnetSoC.__init__(self, platform, SIM_CLK_FREQ, ident="innet SoC (litex_sim)", cpu_type=cpu_type, **kwargs)
        self.ethphy = LiteEthPHYModel(platform.request("eth", 0))
        self.add_management_etherbone(self.ethphy, ip_address=SOC_IP)
        for core in cores:
            adder = getattr(self, f"add_{core}", None)
            if adder is None:
                raise ValueError(f"unknown core {core!r}")
            if core == "minisharp":
                ports = []
                for i in range(MINISHARP_PORTS):
                    port = _GMIIDataPort(platform.request("gmii_eth", i))
                    setattr(self, f"data_port{i}", port)
                    ports.append(port)
                adder(phys=[(p.sink, p.source) for p in ports])
            else:
                adder()


def sim_config(cores=(), cpu_type=None):
    config = SimConfig()
    config.add_clocker("sys_clk", freq_hz=SIM_CLK_FREQ)
    if "minisharp" in cores:
        # gmii_ethernet keeps its clock-edge state per instance (the `ethernet` module does not), so it can
        # serve several ports; each port is a TAP inside the runner's namespace.
        for i in range(MINISHARP_PORTS):
            config.add_module("gmii_ethernet", [("gmii_eth", i)],
                              args={"interface": data_port_interface(i), "ip": f"192.168.{10 + i}.100"})
    if cpu_type is not None:
        config.add_module("serial2console", "serial")
    config.add_module("ethernet", "eth", args={"interface": TAP_INTERFACE, "ip": HOST_IP})
    return config


def config_name(cores, cpu_type=None):
    return "soc" + ("_" + "_".join(sorted(cores)) if cores else "") + (f"_{cpu_type}" if cpu_type else "")


_DATE_STAMP = re.compile(rb"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")


def _digest(paths):
    h = hashlib.sha256()
    for p in sorted(paths):
        with open(p, "rb") as f:
            # LiteX stamps generated files with the date: leave those lines out of the digest.
            body = b"".join(line for line in f if not _DATE_STAMP.search(line))
        h.update(os.path.basename(p).encode() + b"\0" + body)
    return h.hexdigest()


def build(cores=(), cpu_type=None, build_root=None, force=False, quiet=True):
    """Generate and compile the simulated SoC; returns its gateware folder (holding obj_dir/Vsim, csr.csv).
    cpu_type="vexriscv" adds the CPU with its BIOS on the simulated UART (compiled with the RISC-V GCC)."""
    cores = tuple(sorted(cores))
    # Tools installed in the venv (meson/ninja for the BIOS) live beside this Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    build_root = build_root or os.path.join(ROOT, "build", "sim")
    output_dir = os.path.join(build_root, config_name(cores, cpu_type))
    gateware_dir = os.path.join(output_dir, "gateware")
    os.makedirs(output_dir, exist_ok=True)
    # One build at a time per configuration; runs of an existing build need no lock.
    with open(os.path.join(output_dir, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if quiet:
            logging.disable(logging.INFO)  # LiteX logs the whole SoC hierarchy at INFO
        soc = SimInnetSoC(cores=cores, cpu_type=cpu_type)
        builder = Builder(soc, output_dir=output_dir, compile_software=cpu_type is not None, compile_gateware=False,
                          csr_csv=os.path.join(gateware_dir, "csr.csv"),
                          csr_json=os.path.join(gateware_dir, "csr.json"))
        builder.build(sim_config=sim_config(cores, cpu_type), run=False, build=True, interactive=False,
                      jobs=os.cpu_count())
        sources = [os.path.join(gateware_dir, f) for f in os.listdir(gateware_dir)
                   if f.endswith((".v", ".sv", ".init", ".js", ".h", ".cpp"))]
        digest = _digest(sources)
        stamp = os.path.join(gateware_dir, "obj_dir", ".innet_digest")
        vsim = os.path.join(gateware_dir, "obj_dir", "Vsim")
        up_to_date = os.path.exists(vsim) and os.path.exists(stamp) and open(stamp).read() == digest
        if force or not up_to_date:
            log = os.path.join(gateware_dir, "verilator_build.log")
            with open(log, "w") as f:
                r = subprocess.run(["bash", "build_sim.sh"], cwd=gateware_dir, stdout=f, stderr=subprocess.STDOUT)
            if r.returncode != 0 or not os.path.exists(vsim):
                tail = open(log).read()[-3000:]
                raise RuntimeError(f"Verilator build of {gateware_dir} failed (log {log}):\n{tail}")
            with open(stamp, "w") as f:
                f.write(digest)
        elif not quiet:
            print(f"Reusing {vsim} (gateware unchanged)")
    logging.disable(logging.NOTSET)
    with open(os.path.join(output_dir, "config.json"), "w") as f:
        json.dump({"cores": list(cores), "soc_ip": SOC_IP, "host_ip": HOST_IP}, f)
    return gateware_dir


def main():
    parser = argparse.ArgumentParser(description="Build the simulated innet SoC (litex_sim + Verilator).")
    parser.add_argument("--cores", default="", help="comma-separated cores to include")
    parser.add_argument("--cpu-type", default=None, choices=["vexriscv"], help="add a CPU (default: none)")
    parser.add_argument("--force", action="store_true", help="recompile even if the gateware did not change")
    args = parser.parse_args()
    cores = [c for c in args.cores.split(",") if c]
    print(build(cores, cpu_type=args.cpu_type, force=args.force, quiet=False))


if __name__ == "__main__":
    main()

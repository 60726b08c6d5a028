"""litex_sim target: InnetSoC on LiteX's SimPlatform with an Etherbone port on a TAP device.

`build(cores=(), ...)` generates the gateware into build/sim/<config>/ and compiles it with Verilator, reusing
the compiled simulator when the generated Verilog and sim configuration did not change. It never runs the
simulation (LiteX would start it through sudo and swallow its failures); `sim.runner` does that inside a
private network namespace.
"""
import argparse
import json
import logging
import os
import shutil
import sys

from litex.build.generic_platform import Pins, Subsignal
from litex.build.sim import SimPlatform
from litex.build.sim.config import SimConfig
from litex.soc.integration.builder import Builder
from migen.genlib.io import CRG as SimCRG

from sim import ROOT, verilated
from sim.models.tap import GMIIDataPort, TapPHY, TAP_POLL_CYCLES, gmii_pads, tap_pads
from soc.common import SOC_IP_ADDRESS
from soc.innet_soc import InnetSoC

SIM_CLK_FREQ = int(1e6)        # nominal; Verilator runs as fast as it can
TAP_INTERFACE = "tap0"         # lives in the runner's namespace only
HOST_IP = "192.168.1.100"      # the TAP's address, inside the namespace
MANAGEMENT_BYTES = 4           # the management port moves 4 bytes a cycle (32-bit LiteEth datapath)
MAX_DATA_PORTS = 4
MINISHARP_PORTS = 2            # data ports of the simulated MiniSharp, TAPs ms0.. in the namespace
SIM_THREADS = 1                # Verilator threads of the litex_sim model (see docs/CORE_CONTRACT.md)
MODULES_DIR = os.path.join(ROOT, "sim", "litex_sim", "modules")


def data_port_interface(i):
    return f"ms{i}"


_io = [
    ("sys_clk", 0, Pins(1)),
    ("sys_rst", 0, Pins(1)),
    ("serial", 0, *[Subsignal(f"{d}_{s}", Pins(w)) for d in ("source", "sink")
                    for s, w in (("valid", 1), ("ready", 1), ("data", 8))]),
    *[gmii_pads("gmii_eth", i) for i in range(MAX_DATA_PORTS)],
    tap_pads("eth", MANAGEMENT_BYTES),
]


class SimInnetSoC(InnetSoC):
    """InnetSoC in litex_sim with the management Etherbone port on a TapPHY (`innet_tap` sim module)."""
    def __init__(self, cores=(), cpu_type=None, trace=False, **kwargs):
        platform = SimPlatform("SIM", _io)
        self.crg = SimCRG(platform.request("sys_clk"))
        if cpu_type is not None:
            kwargs.update(with_uart=True, uart_name="sim")
        InnetSoC.__init__(self, platform, SIM_CLK_FREQ, ident="innet SoC (litex_sim)", cpu_type=cpu_type, **kwargs)
        self.ethphy = TapPHY(platform.request("eth", 0), width=MANAGEMENT_BYTES)
        self.add_management_etherbone(self.ethphy, data_width=8 * MANAGEMENT_BYTES)
        if trace:
            platform.add_debug(self, reset=1)
        for core in cores:
            adder = getattr(self, f"add_{core}", None)
            if adder is None:
                raise ValueError(f"unknown core {core!r}")
            if core == "minisharp":
                ports = []
                for i in range(MINISHARP_PORTS):
                    port = GMIIDataPort(platform.request("gmii_eth", i))
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
    config.add_module("innet_tap", "eth", args={"interface": TAP_INTERFACE, "ip": HOST_IP,
                                                "poll": str(TAP_POLL_CYCLES)})
    return config


def config_name(cores, cpu_type=None, trace=False, threads=SIM_THREADS):
    """The build folder's name: a model per SoC configuration, trace setting and thread count."""
    return ("soc" + ("_" + "_".join(sorted(cores)) if cores else "") + (f"_{cpu_type}" if cpu_type else "")
            + ("_trace" if trace else "") + (f"_t{threads}" if threads != SIM_THREADS else ""))


def build(cores=(), cpu_type=None, build_root=None, force=False, quiet=True, threads=SIM_THREADS, trace=False):
    """Generate and compile the simulated SoC; returns its gateware folder (holding obj_dir/Vsim, csr.csv).
    cpu_type="vexriscv" adds the CPU with its BIOS on the simulated UART (compiled with the RISC-V GCC).
    threads: Verilator threads of the model; trace: a model that dumps sim.vcd from reset."""
    cores = tuple(sorted(cores))
    # Tools installed in the venv (meson/ninja for the BIOS) live beside this Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    build_root = build_root or os.path.join(ROOT, "build", "sim")
    output_dir = os.path.join(build_root, config_name(cores, cpu_type, trace, threads))
    gateware_dir = os.path.join(output_dir, "gateware")
    os.makedirs(output_dir, exist_ok=True)
    # One build at a time per configuration; runs of an existing build need no lock.
    with verilated.FileLock(os.path.join(output_dir, ".lock")):
        # LiteX writes its variables.mak into the extra modules' folder: give it a copy in the build tree.
        modules = os.path.join(output_dir, "modules")
        shutil.rmtree(modules, ignore_errors=True)
        shutil.copytree(MODULES_DIR, modules)
        if quiet:
            logging.disable(logging.INFO)  # LiteX logs the whole SoC hierarchy at INFO
        try:
            soc = SimInnetSoC(cores=cores, cpu_type=cpu_type, trace=trace)
            builder = Builder(soc, output_dir=output_dir, compile_software=cpu_type is not None,
                              compile_gateware=False, csr_csv=os.path.join(gateware_dir, "csr.csv"),
                              csr_json=os.path.join(gateware_dir, "csr.json"))
            builder.build(sim_config=sim_config(cores, cpu_type), run=False, build=True, interactive=False,
                          extra_mods=sorted(os.listdir(modules)), extra_mods_path=modules)
        finally:
            logging.disable(logging.NOTSET)
        vsim, seconds = verilated.build_litex_sim(gateware_dir, threads=threads, trace=trace, force=force)
        if not quiet:
            print(f"Reusing {vsim} (gateware unchanged)" if seconds == 0 else f"Compiled {vsim} in {seconds:.0f} s")
    with open(os.path.join(output_dir, "config.json"), "w") as f:
        json.dump({"cores": list(cores), "soc_ip": SOC_IP_ADDRESS, "host_ip": HOST_IP}, f)
    return gateware_dir


def main():
    parser = argparse.ArgumentParser(description="Build the simulated innet SoC (litex_sim + Verilator).")
    parser.add_argument("--cores", default="", help="comma-separated cores to include")
    parser.add_argument("--cpu-type", default=None, choices=["vexriscv"], help="add a CPU (default: none)")
    parser.add_argument("--force", action="store_true", help="recompile even if the gateware did not change")
    parser.add_argument("--threads", type=int, default=SIM_THREADS, help="Verilator threads of the model")
    parser.add_argument("--trace", action="store_true", help="dump sim.vcd (a separate, slower build)")
    args = parser.parse_args()
    cores = [c for c in args.cores.split(",") if c]
    print(build(cores, cpu_type=args.cpu_type, force=args.force, quiet=False, threads=args.threads,
                trace=args.trace))


if __name__ == "__main__":
    main()

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

from cores.sparsr.common import XMEM_DRAM, XMEM_KINDS
from sim import ROOT, verilated
from sim.models.tap import GMIIDataPort, TapPHY, TAP_POLL_CYCLES, gmii_pads, tap_pads
from soc.common import CORE_NAMES, SOC_IP_ADDRESS, SOC_MAC_ADDRESS
from soc.innet_soc import InnetSoC
from software.argtypes import names, positive_int

SIM_CLK_FREQ = int(1e6)        # nominal; Verilator runs as fast as it can
TAP_INTERFACE = "tap0"         # lives in the runner's namespace only
HOST_IP = "192.168.1.100"      # the TAP's address, inside the namespace
MANAGEMENT_BYTES = 4           # the management port moves 4 bytes a cycle (32-bit LiteEth datapath)
MAX_DATA_PORTS = 4
MINISHARP_PORTS = 2            # data ports of the simulated MiniSharp, TAPs ms0.. in the namespace
SIM_THREADS = 1                # Verilator threads of the litex_sim model (see docs/CORE_CONTRACT.md)
MODULES_DIR = os.path.join(ROOT, "sim", "litex_sim", "modules")
# Sparsr's options in the simulated SoC: XMEM in DRAM, 4096 rows (4 MiB) in LiteDRAM's model of an SDR SDRAM
# (sim.models.dram) behind the SoC's LiteDRAM core; sparsr={"xmem": "bram", "xmem_rows": 8} for block RAM.
SPARSR = {"xmem": XMEM_DRAM, "xmem_rows": 4096}
SDRAM_MODEL = "sdr"


def sparsr_options(xmem):
    """Sparsr's options for XMEM kind `xmem`: SPARSR for DRAM, add_sparsr's default 8 rows in block RAM."""
    return dict(SPARSR) if xmem == XMEM_DRAM else {"xmem": xmem, "xmem_rows": 8}


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
    """InnetSoC in litex_sim with the management Etherbone port on a TapPHY (`innet_tap` sim module): its
    IP and MAC come from the sim configuration (innet_tap's soc_ip / soc_mac), so one build can run as
    several SoCs. minisharp_ports: MiniSharp's data ports (GMII TAPs); minisharp: MiniSharpSoCBlock options.
    management="minisharp": no management TAP; Etherbone is MiniSharp's management port, reached from
    data port 0 (TAP ms0, the host at HOST_IP) only, at SOC_IP_ADDRESS / SOC_MAC_ADDRESS, as on the boards.
    sparsr: add_sparsr options over SPARSR (with XMEM in DRAM the SoC gets an SDRAM model and LiteDRAM)."""
    def __init__(self, cores=(), cpu_type=None, trace=False, minisharp_ports=MINISHARP_PORTS, minisharp=None,
                 management="tap", sparsr=None, **kwargs):
        if not 2 <= minisharp_ports <= MAX_DATA_PORTS:
            raise ValueError(f"minisharp_ports must be in 2..{MAX_DATA_PORTS}, got {minisharp_ports}")
        check_management(cores, management)
        platform = SimPlatform("SIM", _io)
        self.crg = SimCRG(platform.request("sys_clk"))
        if cpu_type is not None:
            kwargs.update(with_uart=True, uart_name="sim")
        InnetSoC.__init__(self, platform, SIM_CLK_FREQ, ident="innet SoC (litex_sim)", cpu_type=cpu_type, **kwargs)
        if management == "tap":
            pads = platform.request("eth", 0)
            self.ethphy = TapPHY(pads, width=MANAGEMENT_BYTES)
            self.add_management_etherbone(self.ethphy, data_width=8 * MANAGEMENT_BYTES, ip_address=pads.soc_ip,
                                          mac_address=pads.soc_mac)
        if trace:
            platform.add_debug(self, reset=1)
        sparsr = dict(SPARSR, **(sparsr or {}))
        if "sparsr" in cores and sparsr["xmem"] == XMEM_DRAM:
            self.add_sim_sdram()
        for core in cores:
            adder = getattr(self, f"add_{core}", None)
            if adder is None:
                raise ValueError(f"unknown core {core!r}")
            if core == "minisharp":
                ports = []
                for i in range(minisharp_ports):
                    port = GMIIDataPort(platform.request("gmii_eth", i))
                    setattr(self, f"data_port{i}", port)
                    ports.append(port)
                extra = {"management": 0b01} if management == "minisharp" else {}
                adder(phys=[(p.sink, p.source) for p in ports], **extra, **(minisharp or {}))
            elif core == "sparsr":
                adder(**sparsr)
            else:
                adder()

    def add_sim_sdram(self):
        """LiteDRAM (controller, crossbar, DFII CSRs) on LiteDRAM's SDRAM model SDRAM_MODEL, for the cores only
        (no CPU: no main_ram region on the bus). The model needs no initialisation."""
        from litedram.phy.model import SDRAMPHYModel
        from sim.models.dram import TIMING_CLK_FREQ, dram_module
        module, data_width = dram_module(SDRAM_MODEL)
        self.sdrphy = SDRAMPHYModel(module, data_width=data_width, clk_freq=TIMING_CLK_FREQ)
        self.add_sdram("sdram", phy=self.sdrphy, module=module, with_soc_interconnect=False)


def check_management(cores, management):
    if management not in ("tap", "minisharp"):
        raise ValueError(f"management must be 'tap' or 'minisharp', not {management!r}")
    if management == "minisharp" and "minisharp" not in cores:
        raise ValueError("management='minisharp' needs the minisharp core")


def sim_config(cores=(), cpu_type=None, minisharp_ports=MINISHARP_PORTS, data_interfaces=None,
               tap=TAP_INTERFACE, tap_ip=HOST_IP, soc_ip=SOC_IP_ADDRESS, soc_mac=SOC_MAC_ADDRESS, management="tap"):
    """The litex_sim configuration (sim_config.js) of one SoC: data port i on TAP data_interfaces[i]
    (default ms<i>), the management port on TAP `tap` (address tap_ip; "" for none: a TAP on a bridge),
    the SoC's management identity soc_ip / soc_mac. management="minisharp": no management TAP, data port 0's
    TAP at tap_ip (the management host)."""
    config = SimConfig()
    config.add_clocker("sys_clk", freq_hz=SIM_CLK_FREQ)
    if "minisharp" in cores:
        # gmii_ethernet keeps its clock-edge state per instance (the `ethernet` module does not), so it can
        # serve several ports; each port is a TAP inside the runner's namespace.
        names = data_interfaces or [data_port_interface(i) for i in range(minisharp_ports)]
        for i in range(minisharp_ports):
            ip = tap_ip if management == "minisharp" and i == 0 else f"192.168.{10 + i}.100"
            config.add_module("gmii_ethernet", [("gmii_eth", i)], args={"interface": names[i], "ip": ip})
    if cpu_type is not None:
        config.add_module("serial2console", "serial")
    if management == "tap":
        config.add_module("innet_tap", "eth", args={"interface": tap, "ip": tap_ip, "poll": str(TAP_POLL_CYCLES),
                                                    "soc_ip": soc_ip, "soc_mac": f"{soc_mac:012x}"})
    return config


def config_name(cores, cpu_type=None, trace=False, threads=SIM_THREADS, minisharp_ports=MINISHARP_PORTS,
                minisharp=None, management="tap", sparsr=None):
    """The build folder's name: a model per SoC configuration, trace setting and thread count."""
    ms = "".join(f"_{k}{v}" for k, v in sorted((minisharp or {}).items()))
    if "sparsr" in cores:
        ms += "".join(f"_{k}{v}" for k, v in sorted((sparsr or {}).items()) if SPARSR.get(k) != v)
    return ("soc" + ("_" + "_".join(sorted(cores)) if cores else "") + (f"_{cpu_type}" if cpu_type else "")
            + (f"_p{minisharp_ports}" if minisharp_ports != MINISHARP_PORTS else "") + ms
            + ("_msmgmt" if management == "minisharp" else "")
            + ("_trace" if trace else "") + (f"_t{threads}" if threads != SIM_THREADS else ""))


def build_lock(output_dir):
    """The lock of one configuration's build folder (`output_dir`, the parent of its gateware folder)."""
    return verilated.FileLock(os.path.join(output_dir, ".lock"))


def build(cores=(), cpu_type=None, build_root=None, force=False, quiet=True, threads=SIM_THREADS, trace=False,
          minisharp_ports=MINISHARP_PORTS, minisharp=None, management="tap", sparsr=None):
    """Generate and compile the simulated SoC; returns its gateware folder (holding obj_dir/Vsim, csr.csv).
    cpu_type="vexriscv" adds the CPU with its BIOS on the simulated UART (compiled with the RISC-V GCC).
    threads: Verilator threads of the model; trace: a model that dumps sim.vcd from reset; minisharp_ports,
    minisharp: MiniSharp's data ports and MiniSharpSoCBlock options; management: "tap" or "minisharp"; sparsr:
    Sparsr's options over SPARSR (SimInnetSoC)."""
    cores = tuple(sorted(cores))
    check_management(cores, management)
    # Tools installed in the venv (meson/ninja for the BIOS) live beside this Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    build_root = build_root or os.path.join(ROOT, "build", "sim")
    output_dir = os.path.join(build_root, config_name(cores, cpu_type, trace, threads, minisharp_ports, minisharp,
                                                      management, sparsr))
    gateware_dir = os.path.join(output_dir, "gateware")
    os.makedirs(output_dir, exist_ok=True)
    # One build at a time per configuration; a session holds the lock while it launches (sim.runner).
    with build_lock(output_dir):
        # LiteX writes its variables.mak into the extra modules' folder: give it a copy in the build tree.
        modules = os.path.join(output_dir, "modules")
        shutil.rmtree(modules, ignore_errors=True)
        shutil.copytree(MODULES_DIR, modules)
        if quiet:
            logging.disable(logging.INFO)  # LiteX logs the whole SoC hierarchy at INFO
        try:
            soc = SimInnetSoC(cores=cores, cpu_type=cpu_type, trace=trace, minisharp_ports=minisharp_ports,
                              minisharp=minisharp, management=management, sparsr=sparsr)
            builder = Builder(soc, output_dir=output_dir, compile_software=cpu_type is not None,
                              compile_gateware=False, csr_csv=os.path.join(gateware_dir, "csr.csv"),
                              csr_json=os.path.join(gateware_dir, "csr.json"))
            builder.build(sim_config=sim_config(cores, cpu_type, minisharp_ports, management=management), run=False,
                          build=True,
                          interactive=False,
                          extra_mods=sorted(os.listdir(modules)), extra_mods_path=modules)
        finally:
            logging.disable(logging.NOTSET)
        vsim, seconds = verilated.build_litex_sim(gateware_dir, threads=threads, trace=trace, force=force)
        if not quiet:
            print(f"Reusing {vsim} (gateware unchanged)" if seconds == 0 else f"Compiled {vsim} in {seconds:.0f} s")
    with open(os.path.join(output_dir, "config.json"), "w") as f:
        json.dump({"cores": list(cores), "soc_ip": SOC_IP_ADDRESS, "host_ip": HOST_IP}, f)
    return gateware_dir


def main(argv=None):
    parser = argparse.ArgumentParser(description="Build the simulated innet SoC (litex_sim + Verilator).")
    parser.add_argument("--cores", type=names(CORE_NAMES, "cores"), default=[],
                        help=f"comma-separated cores to include, of {', '.join(CORE_NAMES)}")
    parser.add_argument("--cpu-type", default=None, choices=["vexriscv"], help="add a CPU (default: none)")
    parser.add_argument("--force", action="store_true", help="recompile even if the gateware did not change")
    parser.add_argument("--threads", type=positive_int, default=SIM_THREADS, help="Verilator threads of the model")
    parser.add_argument("--trace", action="store_true", help="dump sim.vcd (a separate, slower build)")
    parser.add_argument("--sparsr-xmem", default=SPARSR["xmem"], choices=XMEM_KINDS,
                        help="Sparsr's XMEM in the SDRAM model (4096 rows) or in block RAM (8 rows)")
    args = parser.parse_args(argv)
    print(build(args.cores, cpu_type=args.cpu_type, force=args.force, quiet=False, threads=args.threads,
                trace=args.trace, sparsr=sparsr_options(args.sparsr_xmem)))


if __name__ == "__main__":
    main()

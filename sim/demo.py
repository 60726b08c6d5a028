"""`make sim`: build the simulated SoC with every integrated core, run it in a private network namespace and
run the host demo (software/demo.py) over Etherbone. Exits 0 on success, non-zero with the reason otherwise."""
import argparse
import sys
import time

from sim import target
from sim.runner import SimSession, SimulationFailed, handle_interrupts
from cores.sparsr.common import XMEM_KINDS
from soc.common import CORE_NAMES
from soc.innet_soc import InnetSoC
from software.argtypes import names, positive_int


def available_cores():
    """Cores the SoC can add and whose host demo exists."""
    import importlib.util
    return [core for core in CORE_NAMES if hasattr(InnetSoC, f"add_{core}") and
            importlib.util.find_spec(f"software.{core}.demo") is not None]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cores", type=names(available_cores(), "cores"), default=None,
                        help=f"comma-separated cores (default: all integrated ones, {', '.join(available_cores())})")
    parser.add_argument("--cpu-type", default=None, choices=["vexriscv"], help="add a CPU (default: none)")
    parser.add_argument("--threads", type=positive_int, default=target.SIM_THREADS,
                        help="Verilator threads of the model (2 pays only while the host is mostly idle)")
    parser.add_argument("--sparsr-xmem", default=target.SPARSR["xmem"], choices=XMEM_KINDS,
                        help="where Sparsr keeps XMEM: in the SDRAM model (dram, 4096 rows) or block RAM (bram, 8 "
                             "rows)")
    args = parser.parse_args(argv)
    cores = available_cores() if args.cores is None else args.cores
    handle_interrupts()
    t0 = time.monotonic()
    print(f"Building the simulated SoC (cores: {', '.join(cores) or 'none'})...", flush=True)
    try:
        gateware = target.build(cores, cpu_type=args.cpu_type, threads=args.threads,
                                sparsr=target.sparsr_options(args.sparsr_xmem))
        t_build = time.monotonic() - t0
        print(f"  gateware: {gateware} ({t_build:.0f} s)", flush=True)
        with SimSession(gateware) as sim:
            print(f"Simulation up in namespace {sim.ns}; running the host demo over Etherbone", flush=True)
            rc = sim.run([sys.executable, "-m", "software.demo"], timeout=1800).returncode
    except SimulationFailed as e:
        print(f"make sim FAILED: {e}", file=sys.stderr)
        return 3
    except RuntimeError as e:
        print(f"make sim FAILED: {e}", file=sys.stderr)
        return 2
    print(f"make sim: {'OK' if rc == 0 else 'FAILED'} in {time.monotonic() - t0:.0f} s")
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""make build BOARD=<name>: generate, synthesise (yosys), place and route (nextpnr-ecp5) and pack (ecppack) a
board's bitstream inside build/boards/<name>/, then print utilisation (LUT4, FF, BRAM) and Fmax per clock.
Before synthesis, cores that the estimate of boards/fit.py does not fit on the board's device are refused.
Boards whose vendor tools are not available here (Xilinx: Vivado) get their gateware generated only.

    python -m boards.build colorlight_5a_75b [--revision 8.0] [--cores sync,...] [--sys-clk-freq 60e6]
    python -m boards.build colorlight_5a_75b --cores minisharp [--mgmt-ports 0,1]   # both RGMII ports
    python -m boards.build xilinx_ac701_pcie    # Verilog, XDC and Vivado script only (also xilinx_ac701_rifl_nic)

On a terminal the build shows its stage (generating, synthesis, packing, placement, routing, bitstream) and
the elapsed time, and the tools' output goes to build/boards/<name>/build.log (printed in part on failure);
elsewhere (CI logs) the tools' output is printed as it comes.
"""
import argparse
import importlib
import json
import os
import sys
import time

from litex.soc.integration.builder import Builder

from boards import fit
from boards.ports import builder_options
from cores.lib.block_ram import ecp5_special_overrides
from sim import progress
from software.argtypes import names, positive_float

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ECP5_BOARDS = ("colorlight_5a_75b", "lattice_versa_ecp5")
GATEWARE_ONLY_BOARDS = ("xilinx_ac701_pcie", "xilinx_ac701_rifl_nic")
COLORLIGHT_REVISIONS = ("7.0", "8.0")
# The stages of an ECP5 build as its output shows them (yosys's log, then nextpnr's and ecppack's output).
BUILD_STAGES = [("generating", r"."), ("synthesis", r"^\d+\. Executing"), ("packing", r"^Info: Packing"),
                ("placement", r"^Info: (Creating initial analytic|Running main analytical)"),
                ("routing", r"^Info: Routing"), ("bitstream", r"^Info: Program finished normally")]


def report(build_dir, build_name):
    """Utilisation and Fmax from nextpnr's JSON report (and its log as a fallback)."""
    path = os.path.join(build_dir, f"{build_name}_report.json")
    with open(path) as f:
        rep = json.load(f)
    util = rep.get("utilization", {})
    used = {k: (v.get("used", 0), v.get("available", 0)) for k, v in util.items()}
    fmax = {clk: (v["achieved"], v["constraint"]) for clk, v in rep.get("fmax", {}).items()}
    return used, fmax


def mgmt_ports(text):
    """argparse type of --mgmt-ports: comma-separated data ports among 0 and 1; their mask."""
    return sum(1 << int(p) for p in set(names(("0", "1"), "data ports", empty=False)(text)))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("board", choices=ECP5_BOARDS + GATEWARE_ONLY_BOARDS)
    parser.add_argument("--revision", default=None, choices=COLORLIGHT_REVISIONS,
                        help="board revision (Colorlight only; default 8.0)")
    parser.add_argument("--sys-clk-freq", type=positive_float, default=None, help="system clock in Hz")
    parser.add_argument("--cores", type=names(fit.BOARD_CORES, "cores"), default=[],
                        help=f"comma-separated cores to include, of {', '.join(fit.BOARD_CORES)}")
    parser.add_argument("--seed", type=int, default=None,
                        help="nextpnr placement seed (default: the board's for these cores, else 1)")
    parser.add_argument("--router", default=None, choices=["router1", "router2"],
                        help="nextpnr's router (default: the board's for these cores, else router2; on the "
                             "Colorlight's MiniSharp router2 diverges: docs/minisharp.md)")
    parser.add_argument("--placer", default="heap", choices=["heap", "static", "sa"],
                        help="nextpnr's placer (heap's legaliser loops on the Colorlight's MiniSharp: docs/minisharp.md)")
    parser.add_argument("--no-fit-check", action="store_true",
                        help="build even if the estimate (boards/fit.py) says the cores do not fit")
    parser.add_argument("--build-dir", default=None,
                        help="build folder (default build/boards/<board>; inside the tree: YoWASP cannot see /tmp)")
    parser.add_argument("--mgmt-ports", type=mgmt_ports, default="0",
                        help="with minisharp: the data ports (comma-separated, of 0 and 1) from which Etherbone "
                             "answers")
    parser.add_argument("--sideband", action="store_true",
                        help="with minisharp: the frame injector (MiniSharpSoCBlock(with_inject=True), one more block "
                             "RAM), for sideband setup over Etherbone (software.minisharp.sideband)")
    args = parser.parse_args(argv)
    if args.sideband and "minisharp" not in args.cores:
        parser.error("--sideband needs minisharp in --cores")
    if args.cores and args.board not in ECP5_BOARDS:
        parser.error(f"{args.board} carries a fixed set of cores; --cores is for {', '.join(ECP5_BOARDS)}")
    if args.revision and args.board != "colorlight_5a_75b":
        parser.error(f"--revision is for the colorlight_5a_75b, not {args.board}")

    # The yosys/nextpnr-ecp5/ecppack wrappers (make deps) live beside this Python.
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    module = importlib.import_module(f"boards.{args.board}")
    kwargs = {"cores": args.cores} if args.board in ECP5_BOARDS else {}
    if "minisharp" in kwargs.get("cores", ()):
        kwargs["mgmt_ports"] = args.mgmt_ports
        if args.sideband:
            kwargs["minisharp"] = {"with_inject": True}
    if args.board in ECP5_BOARDS and not args.no_fit_check:
        try:
            use, device = fit.check(args.board, kwargs["cores"])
        except ValueError as e:              # fit.DoesNotFit, or no figures for a core
            print(f"error: {e}", file=sys.stderr)
            return 2
        cap = fit.DEVICES[device]
        print("Estimate  : " + ", ".join(f"{r} {use[r]}/{cap[r]} ({100 * use[r] / cap[r]:.0f} %)" for r in fit.RESOURCES)
              + f" on the {device} (boards/fit.py)")
    if args.sys_clk_freq:
        kwargs["sys_clk_freq"] = int(args.sys_clk_freq)
    if args.board == "colorlight_5a_75b":
        kwargs["revision"] = args.revision or "8.0"
    # The board's nextpnr settings for these cores (PNR_DEFAULTS: core -> router and seed), the options' defaults.
    pnr = next((module.PNR_DEFAULTS[c] for c in kwargs.get("cores", ()) if c in getattr(module, "PNR_DEFAULTS", {})), {})
    args.router = args.router or pnr.get("router", "router2")
    args.seed = pnr.get("seed", 1) if args.seed is None else args.seed
    soc = module.BoardSoC(**kwargs)
    output_dir = os.path.abspath(args.build_dir or os.path.join(ROOT, "build", "boards", args.board))
    # YoWASP tools run sandboxed and cannot see /tmp: build inside the project tree, with relative paths.
    os.makedirs(output_dir, exist_ok=True)
    # A CPU (the DRAM's initialisation: boards/ports.py, DRAM_CPU) needs its BIOS compiled into its ROM.
    builder = Builder(soc, output_dir=os.path.relpath(output_dir, os.getcwd()), **builder_options(soc),
                      csr_csv=os.path.join(output_dir, "csr.csv"), csr_json=os.path.join(output_dir, "csr.json"))
    if args.board in GATEWARE_ONLY_BOARDS:
        builder.build(build_name=args.board, run=False)
        gateware = os.path.join(output_dir, "gateware")
        print(f"Gateware  : {gateware} ({', '.join(sorted(os.listdir(gateware)))}); vendor tools not run")
        return 0
    # Ask nextpnr for its JSON timing/utilisation report (run from the gateware folder).
    soc.platform.toolchain._pnr_opts += f" --report {args.board}_report.json --router {args.router} --placer {args.placer}"
    t0 = time.monotonic()
    # MiniSharp's block RAMs map onto DP16KD primitives with their output registers (yosys never infers them).
    build = lambda: builder.build(build_name=args.board, seed=args.seed, timingstrict=False,
                                  ignoreloops=True, special_overrides=ecp5_special_overrides)
    if progress.enabled():
        log_path = os.path.join(output_dir, "build.log")
        rpt = os.path.join(output_dir, "gateware", f"{args.board}.rpt")     # yosys's log, rewritten by this build
        if os.path.exists(rpt):
            os.remove(rpt)
        try:
            with progress.output_to(log_path) as term:
                with progress.Stages([log_path, rpt], BUILD_STAGES, f"build {args.board}", stream=term):
                    build()
        except Exception:
            print("".join(open(log_path, errors="replace").readlines()[-40:]), file=sys.stderr)
            print(f"error: the build failed; its output: {log_path}", file=sys.stderr)
            raise
        print(f"Build log : {log_path}")
    else:
        build()
    elapsed = time.monotonic() - t0
    gateware = os.path.join(output_dir, "gateware")
    bitstream = os.path.join(gateware, f"{args.board}.bit")
    if not os.path.exists(bitstream):
        print(f"error: no bitstream at {bitstream}", file=sys.stderr)
        return 1
    used, fmax = report(gateware, args.board)
    print()
    print(f"Bitstream : {bitstream} ({os.path.getsize(bitstream)} bytes, built in {elapsed:.0f} s)")
    print(f"Device    : {soc.platform.device} (nextpnr {args.router}, seed {args.seed})")
    for label, key in (("LUT4", "TRELLIS_COMB"), ("FF", "TRELLIS_FF"), ("BRAM (DP16KD)", "DP16KD"),
                       ("LUT RAM (TRELLIS_RAMW)", "TRELLIS_RAMW"), ("IO", "TRELLIS_IO")):
        u, a = used.get(key, (0, 0))
        print(f"{label:24s}: {u:6d} / {a:6d} ({100.0 * u / a if a else 0:.1f} %)")
    ok = True
    for clk, (achieved, constraint) in sorted(fmax.items()):
        met = achieved >= constraint
        ok &= met
        print(f"Fmax {clk:19s}: {achieved:7.1f} MHz (constraint {constraint:.1f} MHz) {'met' if met else 'NOT MET'}")
    with open(os.path.join(output_dir, "summary.json"), "w") as f:
        json.dump({"board": args.board, "build_s": elapsed, "router": args.router, "seed": args.seed,
                   "utilization": used, "fmax": fmax}, f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

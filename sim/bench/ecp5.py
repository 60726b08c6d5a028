"""Out-of-context ECP5 resource and Fmax figures for one Migen/LiteX module (yosys + nextpnr-ecp5).

`synth_ecp5(module, ios, name)` converts the module to Verilog, runs `synth_ecp5` and nextpnr-ecp5 with
`--out-of-context` (no I/O buffers, so the module's ports need no pins) and returns LUT4, FF, BRAM (DP16KD),
distributed RAM and the Fmax of each clock. Every port is registered in a wrapper so that port paths are
timed register to register; the wrapper's flip-flops are not counted in "ff". A design that misses `freq_mhz`
still returns its achieved Fmax (nextpnr runs with --timing-allow-fail). Builds live under build/ecp5/<name> (YoWASP cannot see /tmp).
"""
import json
import os
import re
import subprocess

from migen.fhdl.verilog import convert

from sim import ROOT, venv_tool

DEVICES = {"LFE5U-25F": "--25k", "LFE5U-45F": "--45k", "LFE5U-85F": "--85k"}


def _registered_wrapper(verilog):
    """A `top` that puts a flip-flop on every port of `core`, so port paths are timed reg to reg."""
    header = verilog[verilog.index("module core("):verilog.index(");")]
    ports = re.findall(r"^\s*(input|output)\s+(?:reg\s+)?(?:signed\s+)?(\[[^\]]+\])?\s*(\w+)", header, re.M)
    lines, conns, regs = ["module top("], [], []
    decls = []
    for direction, width, pname in ports:
        width = width or ""
        if pname in ("sys_clk", "sys_rst"):
            decls.append(f"\tinput {pname}")
            conns.append(f".{pname}({pname})")
            continue
        decls.append(f"\t{direction} {'reg ' if direction == 'output' else ''}{width} {pname}")
        regs.append(f"reg {width} {pname}_q;" if direction == "input" else f"wire {width} {pname}_w;")
        conns.append(f".{pname}({pname}_q)" if direction == "input" else f".{pname}({pname}_w)")
        regs.append(f"always @(posedge sys_clk) {pname}_q <= {pname};" if direction == "input"
                    else f"always @(posedge sys_clk) {pname} <= {pname}_w;")
    lines.append(",\n".join(decls))
    lines.append(");")
    lines += regs
    lines.append("core core_i(" + ", ".join(conns) + ");")
    lines.append("endmodule")
    bits = sum(_width(w) for d, w, n in ports if n not in ("sys_clk", "sys_rst"))
    return "\n" + "\n".join(lines) + "\n", bits


def _width(spec):
    if not spec:
        return 1
    hi, lo = (int(x) for x in spec.strip("[]").split(":"))
    return abs(hi - lo) + 1


def synth_ecp5(module, ios, name, device="LFE5U-25F", package="CABGA381", freq_mhz=125, seed=1, timeout=3600,
               special_overrides=None):
    """Synthesise and place-and-route `module` (ports `ios`) for an ECP5 part; returns a dict of figures.
    `special_overrides`: ECP5 lowerings of the module's Migen specials (e.g. block RAM primitives)."""
    if device not in DEVICES:
        raise ValueError(f"unknown ECP5 device {device!r}, expected one of {sorted(DEVICES)}")
    outdir = os.path.join(ROOT, "build", "ecp5", f"{name}_{device}")
    os.makedirs(outdir, exist_ok=True)
    verilog = str(convert(module, ios=set(ios), name="core", special_overrides=special_overrides or {}))
    wrapper, wrapper_ffs = _registered_wrapper(verilog)
    with open(os.path.join(outdir, "top.v"), "w") as f:
        f.write(verilog + wrapper)
    # YoWASP tools run sandboxed: give them paths relative to the build folder.
    subprocess.run([venv_tool("yosys"), "-q", "-l", "yosys.log", "-p",
                    "read_verilog top.v; synth_ecp5 -top top -json top.json; tee -o stat.txt stat"],
                   cwd=outdir, check=True, timeout=timeout, stdout=subprocess.DEVNULL)
    subprocess.run([venv_tool("nextpnr-ecp5"), DEVICES[device], "--package", package, "--json", "top.json",
                    "--out-of-context", "--freq", str(freq_mhz), "--timing-allow-fail", "--seed", str(seed),
                    "--report", "report.json",
                    "--log", "nextpnr.log", "--quiet"],
                   cwd=outdir, check=True, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(outdir, "report.json")) as f:
        report = json.load(f)
    util = report.get("utilization", {})
    stat = open(os.path.join(outdir, "stat.txt")).read()

    def cell_count(cell):
        m = re.findall(rf"^\s+(\d+)\s+{cell}\s*$", stat, re.M) or re.findall(rf"^\s+{cell}\s+(\d+)\s*$", stat, re.M)
        return int(m[-1]) if m else 0

    fmax = {clk: round(v["achieved"], 1) for clk, v in report.get("fmax", {}).items()}
    return {
        "device": device,
        "lut4": util.get("TRELLIS_COMB", {}).get("used", cell_count("LUT4")),
        "ff": util.get("TRELLIS_FF", {}).get("used", cell_count("TRELLIS_FF")) - wrapper_ffs,
        "bram_dp16kd": util.get("DP16KD", {}).get("used", cell_count("DP16KD")),
        "lutram": util.get("TRELLIS_RAMW", {}).get("used", 0),
        "fmax_mhz": fmax,
        "target_mhz": freq_mhz,
    }

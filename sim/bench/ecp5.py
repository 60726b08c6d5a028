"""Out-of-context ECP5 resource and Fmax figures for one Migen/LiteX module (yosys + nextpnr-ecp5).

`synth_ecp5(module, ios, name)` converts the module to Verilog, runs `synth_ecp5` and nextpnr-ecp5 with
`--out-of-context` (no I/O buffers, so the module's ports need no pins) and returns LUT4, FF, BRAM (DP16KD),
distributed RAM and the Fmax of each clock. Every port is registered in a wrapper so that port paths are
timed register to register; the wrapper's flip-flops are not counted in "ff". A design that misses `freq_mhz`
still returns its achieved Fmax (nextpnr runs with --timing-allow-fail).

Builds live under build/ecp5/<name>_<device>/ (YoWASP cannot see /tmp): top.v and yosys's netlist top.json,
reused while top.v is unchanged (one yosys run for every seed; a file lock lets concurrent runs share it),
and nextpnr's run of each seed in seed<k>/.

As a sweep task (sim.bench.sweep): `synth_point(factory, args, name, device, freq_mhz, seed, timeout)` builds
the module with `factory` ("package.module:function", called with **args, returning (module, ios) or
(module, ios, special_overrides)) in the worker, and returns the figures with "how": "placed and routed", or,
when yosys or nextpnr failed or ran past `timeout` seconds, "how": "failed: ..." with what the logs hold
(`failure_figures`); `point_digest(params)` is its gateware digest (the Verilog).
"""
import functools
import hashlib
import importlib
import json
import os
import re
import subprocess

from migen.fhdl.verilog import convert

from sim import BUILD, venv_tool
from sim.progress import Stages
from sim.verilated import FileLock

DEVICES = {"LFE5U-25F": "--25k", "LFE5U-45F": "--45k", "LFE5U-85F": "--85k"}
YOSYS_SCRIPT = "read_verilog top.v; synth_ecp5 -top top -json top.json; tee -o stat.txt stat"
# nextpnr's stages as its log shows them (sim.progress.Stages).
PNR_STAGES = [("packing", r"^Info: Packing"), ("placement", r"^Info: (Creating initial analytic|Running main analytical)"),
              ("routing", r"^Info: Routing"), ("timing", r"^Info: Critical path report")]


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


def top_verilog(module, ios, special_overrides=None):
    """(top.v text: the module as `core` plus the registered wrapper `top`, flip-flops of the wrapper)."""
    verilog = str(convert(module, ios=set(ios), name="core", special_overrides=special_overrides or {}))
    wrapper, wrapper_ffs = _registered_wrapper(verilog)
    return verilog + wrapper, wrapper_ffs


def build_dir(name, device):
    return os.path.join(BUILD, "ecp5", f"{name}_{device}")


def seed_dir(name, device, seed):
    return os.path.join(build_dir(name, device), f"seed{seed}")


def netlist(text, name, device, timeout=3600, on_stage=None):
    """yosys's top.json of `text` in build_dir(name, device), run again only when top.v changed."""
    outdir = build_dir(name, device)
    os.makedirs(outdir, exist_ok=True)
    digest = hashlib.sha256(f"{YOSYS_SCRIPT}\n{text}".encode()).hexdigest()
    stamp = os.path.join(outdir, ".netlist_digest")
    with FileLock(os.path.join(outdir, ".lock")):
        if os.path.exists(stamp) and open(stamp).read() == digest and os.path.exists(os.path.join(outdir, "top.json")):
            return outdir
        if os.path.exists(stamp):
            os.remove(stamp)
        with open(os.path.join(outdir, "top.v"), "w") as f:
            f.write(text)
        if on_stage:
            on_stage("synthesis")
        # YoWASP tools run sandboxed: give them paths relative to the build folder.
        subprocess.run([venv_tool("yosys"), "-q", "-l", "yosys.log", "-p", YOSYS_SCRIPT],
                       cwd=outdir, check=True, timeout=timeout, stdout=subprocess.DEVNULL)
        with open(stamp, "w") as f:
            f.write(digest)
    return outdir


def synth_ecp5(module, ios, name, device="LFE5U-25F", package="CABGA381", freq_mhz=125, seed=1, timeout=3600,
               special_overrides=None, on_stage=None):
    """Synthesise and place-and-route `module` (ports `ios`) for an ECP5 part; returns a dict of figures.
    `special_overrides`: ECP5 lowerings of the module's Migen specials (e.g. block RAM primitives);
    `on_stage(name)`: called with each stage the run reaches (synthesis, PNR_STAGES)."""
    if device not in DEVICES:
        raise ValueError(f"unknown ECP5 device {device!r}, expected one of {sorted(DEVICES)}")
    text, wrapper_ffs = top_verilog(module, ios, special_overrides)
    return place_and_route(text, wrapper_ffs, name, device, package, freq_mhz, seed, timeout, on_stage)


def place_and_route(text, wrapper_ffs, name, device="LFE5U-25F", package="CABGA381", freq_mhz=125, seed=1,
                    timeout=3600, on_stage=None, router="router1"):
    """synth_ecp5 of top.v text (top_verilog): yosys (cached netlist), then nextpnr with `seed` and `router`
    (nextpnr's default router1, or router2: it routes the N = 16 Batcher-Banyan network, which router1 does
    not finish)."""
    outdir = netlist(text, name, device, timeout, on_stage)
    run = seed_dir(name, device, seed)
    os.makedirs(run, exist_ok=True)
    for f in ("report.json", "nextpnr.log", "top.json"):
        if os.path.exists(os.path.join(run, f)):
            os.remove(os.path.join(run, f))
    os.link(os.path.join(outdir, "top.json"), os.path.join(run, "top.json"))
    with Stages([os.path.join(run, "nextpnr.log")], PNR_STAGES, name, show=False, on_stage=on_stage):
        subprocess.run([venv_tool("nextpnr-ecp5"), DEVICES[device], "--package", package, "--json", "top.json",
                        "--out-of-context", "--freq", str(freq_mhz), "--timing-allow-fail", "--seed", str(seed),
                        "--router", router, "--report", "report.json", "--log", "nextpnr.log", "--quiet"],
                       cwd=run, check=True, timeout=timeout, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open(os.path.join(run, "report.json")) as f:
        report = json.load(f)
    util = report.get("utilization", {})
    cells = yosys_cells(outdir)
    fmax = {clk: round(v["achieved"], 1) for clk, v in report.get("fmax", {}).items()}
    return {
        "device": device,
        "lut4": util.get("TRELLIS_COMB", {}).get("used", cells.get("LUT4", 0)),
        "ff": util.get("TRELLIS_FF", {}).get("used", cells.get("TRELLIS_FF", 0)) - wrapper_ffs,
        "bram_dp16kd": util.get("DP16KD", {}).get("used", cells.get("DP16KD", 0)),
        "lutram": util.get("TRELLIS_RAMW", {}).get("used", 0),
        "fmax_mhz": fmax,
        "target_mhz": freq_mhz,
    }


def yosys_cells(outdir):
    """{cell type: count} of yosys's stat.txt in `outdir` (the top-level totals: the last count of each)."""
    try:
        stat = open(os.path.join(outdir, "stat.txt")).read()
    except OSError:
        return {}
    count_first = {m.group(2): int(m.group(1)) for m in re.finditer(r"^\s+(\d+)\s+(\$?\w+)\s*$", stat, re.M)}
    name_first = {m.group(1): int(m.group(2)) for m in re.finditer(r"^\s+(\$?\w+)\s+(\d+)\s*$", stat, re.M)}
    return {**name_first, **count_first}


def failure_figures(name, device, seed):
    """What the logs of a failed or stopped run hold: yosys's cell counts, nextpnr's report.json (when it
    routed), the utilisation nextpnr logged ({cell: [used, available]}) and its post-placement Fmax
    estimates ({clock: MHz}, the last of each)."""
    run = seed_dir(name, device, seed)
    out = {"yosys_cells": yosys_cells(build_dir(name, device)), "report": None, "logged": {}, "estimate": {}}
    try:
        with open(os.path.join(run, "report.json")) as f:
            out["report"] = json.load(f)
    except (OSError, ValueError):
        pass
    try:
        log = open(os.path.join(run, "nextpnr.log")).read()
    except OSError:
        return out
    out["logged"] = {m[0]: [int(m[1]), int(m[2])] for m in re.findall(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)", log, re.M)}
    out["estimate"] = {k: float(v) for k, v in re.findall(r"Max frequency for clock '([^']+)': ([\d.]+) MHz", log)}
    return out


def load(name):
    """The object named "package.module:attribute" (a factory, a class, an ios function)."""
    module, attr = name.split(":")
    return getattr(importlib.import_module(module), attr)


@functools.lru_cache(maxsize=None)
def _factory_verilog(factory, args_json):
    made = load(factory)(**json.loads(args_json))
    module, ios, overrides = made if len(made) == 3 else (*made, None)
    text, wrapper_ffs = top_verilog(module, ios, overrides)
    return text, wrapper_ffs, sum(len(s) for s in ios)


def synth_point(factory, args, name, device="LFE5U-25F", package="CABGA381", freq_mhz=125, seed=1, timeout=3600,
                router="router1"):
    """Sweep task: synth_ecp5 of the module `factory(**args)` makes (see the module docstring; `router`: see
    place_and_route); "io_bits": the width of its ports. A run that fails or exceeds `timeout` (yosys, nextpnr each) returns
    failure_figures with "how": "failed: <why>"."""
    from sim.bench.sweep import status
    text, wrapper_ffs, io_bits = _factory_verilog(factory, json.dumps(args, sort_keys=True))
    try:
        r = place_and_route(text, wrapper_ffs, name, device, package, freq_mhz, seed, timeout, on_stage=status,
                            router=router)
        r["how"] = "placed and routed"
    except subprocess.TimeoutExpired as e:
        r = {"how": f"failed: {os.path.basename(e.cmd[0])} ran over {timeout} s", **failure_figures(name, device, seed)}
    except subprocess.CalledProcessError as e:
        r = {"how": f"failed: {os.path.basename(e.cmd[0])} exited with {e.returncode}",
             **failure_figures(name, device, seed)}
    r.update(device=device, target_mhz=freq_mhz, io_bits=io_bits, seed=seed)
    return r


def point_digest(params):
    """The gateware digest of a synth_point: sha256 of its top.v text."""
    text, _, _ = _factory_verilog(params["factory"], json.dumps(params["args"], sort_keys=True))
    return hashlib.sha256(text.encode()).hexdigest()

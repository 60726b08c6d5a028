"""Lint of generated gateware: `verilator --lint-only` (`lint`) with empty modules (`blackbox_stubs`) for the
vendor primitives and IP that the Verilog instantiates but does not define."""
import os
import re
import subprocess

from sim.verilated.build import tool

_DECL = re.compile(r"^\s*(?:input|output|inout)?\s*(?:wire|reg)\s+(?:signed\s+)?(?:\[(\d+):(\d+)\]\s*)?(\w+)", re.M)
_INSTANCE = re.compile(r"^(\w+)\s*(?:#\((.*?)\n\)\s*)?(\w+)\s*\((.*?)\n\);", re.M | re.S)
_CONNECTION = re.compile(r"^\s*\.(\w+)\s*\((.*)\),?\s*$")
_SECTIONS = {"// Inputs.": "input", "// Outputs.": "output", "// InOuts.": "inout"}


def blackbox_stubs(verilog):
    """Empty modules for every module the generated Verilog instantiates but does not define (vendor
    primitives and IP): ports and directions from LiteX's `// Inputs.`/`// Outputs.` instance sections,
    widths from the connected signals, parameters from the instances. Returns (stub text, module names)."""
    widths = {name: int(hi) - int(lo) + 1 if hi else 1 for hi, lo, name in _DECL.findall(verilog)}
    defined = set(re.findall(r"^module\s+(\w+)", verilog, re.M))
    modules = {}
    for mod, params, _, body in _INSTANCE.findall(verilog):
        if mod in defined or mod in ("module", "assign", "always", "if", "case"):
            continue
        ports, pset = modules.setdefault(mod, ({}, set()))
        for line in (params or "").split("\n"):
            m = _CONNECTION.match(line)
            if m:
                pset.add(m.group(1))
        direction = "input"
        for line in body.split("\n"):
            direction = _SECTIONS.get(line.strip(), direction)
            m = _CONNECTION.match(line)
            if not m:
                continue
            expr = m.group(2).strip()
            if re.match(r"^\d+'[dhb]", expr):
                width = int(expr.split("'")[0])
            elif re.match(r"^\w+$", expr):
                width = widths.get(expr, 1)
            elif re.match(r"^\w+\[(\d+):(\d+)\]$", expr):
                hi, lo = map(int, re.findall(r"\d+", expr.split("[", 1)[1]))
                width = hi - lo + 1
            else:
                width = 1
            old = ports.get(m.group(1), (direction, 0))
            ports[m.group(1)] = (direction, max(width, old[1]))
    text = []
    for mod, (ports, params) in sorted(modules.items()):
        plist = ", ".join(f"parameter {p} = 0" for p in sorted(params))
        decl = ",\n".join(f"    {d} wire [{w - 1}:0] {p}" for p, (d, w) in sorted(ports.items()))
        text.append(f"module {mod}{f' #({plist})' if plist else ''} (\n{decl}\n);\nendmodule\n")
    return "\n".join(text), sorted(modules)


def lint(verilog_path, top, extra_args=()):
    """`verilator --lint-only` of a generated Verilog file with blackbox stubs for what it does not define.
    Returns (returncode, list of %Warning/%Error lines, stubbed module names)."""
    with open(verilog_path) as f:
        stubs, names = blackbox_stubs(f.read())
    stub_path = os.path.join(os.path.dirname(os.path.abspath(verilog_path)), f"{top}_blackboxes.v")
    with open(stub_path, "w") as f:
        f.write(stubs)
    r = subprocess.run([tool(), "--lint-only", "-Wno-fatal", "--top-module", top, *extra_args,
                        verilog_path, stub_path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    messages = [line for line in r.stdout.split("\n") if line.startswith(("%Warning", "%Error"))]
    return r.returncode, messages, names


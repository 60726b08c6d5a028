"""Simulation: the Verilator layer and per-core Verilated models (`sim.verilated`), simulation models of PHYs
and links (`sim.models`), the litex_sim target (`sim.target`, C sources in sim/litex_sim/), the namespace
runner (`sim.runner`), the `make sim` demo and the benchmarks (`sim.bench`)."""
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))     # the checkout

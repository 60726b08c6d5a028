"""Simulation targets (litex_sim), the namespace runner and benchmarks."""

"""Per-core Verilated model definitions on sim.verilator"""

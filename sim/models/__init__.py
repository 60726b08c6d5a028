"""Simulation models: PHYs and links that stand in for hardware outside the FPGA (litex_sim TAP ports, the
PCIe root complex at TLP level, a host link driving a core in Migen's simulator)."""

"""Switch ABI: scheduler/network limits, evaluation constants and the stream layouts of the RIFL switch.

The RIFL Layer 2 header, the segment size, the relative-address rule and the flow-control frame fields are
RIFL's and come from `cores.rifl.common`; this module only adds what belongs to the switch itself.
"""

# Scheduler / network limits: iSLIP is O(N^2) and the spec stops at 64 ports; ports are a power of two so
# that the Batcher-Banyan network and the round-robin pointers are plain binary.
MAX_PORTS = 64
MAX_ITERATIONS = 8

# Evaluation method of the spec (Section on RTL simulation).
FIXED_LATENCY_CELLS = 17          # latency of everything except the VOQ and the scheduler, in cell times
BURST_MEAN_BYTES = 1024           # mean burst length per port under bursty traffic
FLOW_BYTES = 2_500_000            # data sent from every input to every output in the spec's runs
VARIABLE_SIZE_MIN = 64            # variable-size packets: uniform in [64, 2048] bytes
VARIABLE_SIZE_MAX = 2048


def check_ports(n):
    """Raise ValueError unless `n` is a power of two in [2, MAX_PORTS]."""
    if not isinstance(n, int) or n < 2 or n > MAX_PORTS or n & (n - 1):
        raise ValueError(f"port count must be a power of two in [2, {MAX_PORTS}], got {n!r}")


def log2(n):
    """Bits of a port index for an n-port switch (n a power of two)."""
    return max(1, (n - 1).bit_length())

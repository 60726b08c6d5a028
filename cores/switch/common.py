"""Switch ABI: scheduler/network limits, evaluation constants and the stream layouts of the RIFL switch.

The RIFL Layer 2 header, the segment size, the relative-address rule and the flow-control frame fields are
RIFL's and come from `cores.rifl.common`; this module only adds what belongs to the switch itself.
"""
from cores.rifl.common import L2_HEADER_BITS, L2_HEADER_LAYOUT, LINK_FC_CHANNEL, SEGMENT_BYTES, l2_header_unpack

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


# ---------------------------------------------------------------------------------------------------
# RIFL switch ports
# ---------------------------------------------------------------------------------------------------
# A switch port carries RIFL Layer 2 packets as fixed cells: the Layer 2 header beside the data, and the
# SEGMENT_BYTES segment over SEGMENT_BYTES * 8 / data_width beats, `last` on the final beat. An input reads
# `header` on the first beat of a cell; an output repeats the (forwarded) header on every beat.
CELL_BYTES = SEGMENT_BYTES


def cell_layout(data_width):
    return [("header", L2_HEADER_BITS), ("data", data_width)]


def cell_beats(data_width):
    """Beats of one cell on a data_width-bit port; data_width must divide the segment."""
    if not isinstance(data_width, int) or data_width < 8 or (CELL_BYTES * 8) % data_width:
        raise ValueError(f"data_width must divide {CELL_BYTES * 8} bits and be >= 8, got {data_width!r}")
    return CELL_BYTES * 8 // data_width


def l2_field(header, name):
    """Slice of a Layer 2 header signal (L2_HEADER_LAYOUT is MSB first) holding field `name`."""
    top = L2_HEADER_BITS
    for field, bits in L2_HEADER_LAYOUT:
        if field == name:
            return header[top - bits:top]
        top -= bits
    raise KeyError(name)


def fc_channel(port, out_port, n):
    """Flow-control channel id of the VOQ of input `port` holding cells for `out_port`: the Dst Port 1
    value (mod n) the upstream sender writes to reach that output, so a sender can act on it without
    knowing which switch port it is attached to. Channel 0 never exists (it would loop back)."""
    return (out_port - port) % n


def downstream_channel(header, down_ports):
    """Flow-control channel that a cell leaving a switch output occupies in the next device, from its
    forwarded header (an int): with hops remaining, the next switch's VOQ channel = Dst Port 1 mod down_ports
    (see fc_channel); with Remain Hops 0 the next device is an endpoint, whose link-level flow control uses
    LINK_FC_CHANNEL. A pause of LINK_FC_CHANNEL holds every cell of that output."""
    check_ports(down_ports)
    _, remain, ports = l2_header_unpack(header)
    return LINK_FC_CHANNEL if remain == 0 else ports[0] % down_ports

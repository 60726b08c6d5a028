"""Switch ABI: scheduler/network limits, the stream layouts of the RIFL switch and the SoC block's CSRs.

The RIFL Layer 2 header, the segment size, the relative-address rule and the flow-control frame fields are
RIFL's and come from `cores.rifl.common`; this module only adds what belongs to the switch itself.
"""
from cores.lib.header import Header
from cores.rifl.common import LINK_FC_CHANNEL, SEGMENT_BYTES, l2_cell_layout, l2_header_unpack

# Scheduler / network limits: iSLIP is O(N^2) and the spec stops at 64 ports; ports are a power of two so
# that the Batcher-Banyan network and the round-robin pointers are plain binary.
MAX_PORTS = 64
MAX_ITERATIONS = 8


def check_ports(n):
    """Raise ValueError unless `n` is a power of two in [2, MAX_PORTS]."""
    if not isinstance(n, int) or n < 2 or n > MAX_PORTS or n & (n - 1):
        raise ValueError(f"port count must be a power of two in [2, {MAX_PORTS}], got {n!r}")


# ---------------------------------------------------------------------------------------------------
# RIFL switch ports
# ---------------------------------------------------------------------------------------------------
# A switch port carries RIFL Layer 2 packets as fixed cells: the Layer 2 header beside the data, and the
# SEGMENT_BYTES segment over SEGMENT_BYTES * 8 / data_width beats, `last` on the final beat. An input reads
# `header` on the first beat of a cell; an output repeats the (forwarded) header on every beat.
CELL_BYTES = SEGMENT_BYTES


def cell_layout(data_width):
    return l2_cell_layout(data_width)


def cell_beats(data_width):
    """Beats of one cell on a data_width-bit port; data_width must divide the segment."""
    if not isinstance(data_width, int) or data_width < 8 or (CELL_BYTES * 8) % data_width:
        raise ValueError(f"data_width must divide {CELL_BYTES * 8} bits and be >= 8, got {data_width!r}")
    return CELL_BYTES * 8 // data_width


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


# ---------------------------------------------------------------------------------------------------
# Counters and their CSRs (cores.lib.counters: `counters[name]`, CSR `name`, 32 bits, read-only)
# ---------------------------------------------------------------------------------------------------
VOQ_COUNTERS = [            # of each VOQInput
    ("cells_in", "Cells accepted into the VOQs."),
    ("drop_hops", "Cells dropped: Remain Hops was already 0."),
    ("drop_loop", "Cells dropped: Dst Port 1 = 0 mod N would loop back."),
    ("drop_full", "Cells dropped: their VOQ was full (sender ignored flow control)."),
    ("drop_malformed", "Cells dropped: `last` not on the final beat."),
]
SWITCH_COUNTERS = [         # of the RIFLSwitch itself
    ("cells_out", "Cells delivered by the outputs."),
    ("out_overflow", "Cycles in which a beat found a full output FIFO (0 by construction)."),
    ("fc_hold", "Cycles outputs held a cell whose downstream queue was paused."),
    ("fc_bad", "Downstream flow-control channels out of range (ignored)."),
]
# RIFLSwitch(with_csr=True), in the CSR bank's order: the VOQ counters summed over the inputs, the switch's own
# and the network's.
_COUNTER_DOC = dict(VOQ_COUNTERS + SWITCH_COUNTERS +
                    [("collisions", "Batcher-Banyan contention events (0 unless the scheduler failed).")])
SWITCH_CSRS = [(name, _COUNTER_DOC[name]) for name in (
    "cells_in", "cells_out", "drop_hops", "drop_loop", "drop_full", "drop_malformed", "collisions",
    "out_overflow", "fc_hold", "fc_bad")]


# ---------------------------------------------------------------------------------------------------
# SoC block (cores.switch.soc_block.SwitchBlock) and its host (software.switch.demo)
# ---------------------------------------------------------------------------------------------------
LOAD_ONE = 1 << 16          # `load` threshold of one cell per cell time on every input
# CSR words (cores.lib.header.Header, fields from bit 0): the host packs and unpacks them.
BLOCK_CONTROL = Header.from_lsb_layout([("start", 1)])
BLOCK_STATUS = Header.from_lsb_layout([("done", 1), ("running", 1)])
BLOCK_INFO = Header.from_lsb_layout([("ports", 8), ("beats", 8), ("iterations", 8)])
BLOCK_RESULTS = [           # result CSRs of a run, read by the host once `status.done` is set
    ("cycles", "Cycles since start (frozen when done)."),
    ("tx_cells", "Cells sent by the generators."),
    ("rx_cells", "Cells received by the checkers."),
    ("lat_sum", "Sum of cell latencies in cycles."),
    ("lat_max", "Largest cell latency in cycles."),
    ("errors", "Cells delivered wrong: header, port, sequence number (repeated or reordered), payload or length."),
    ("drops", "Cells dropped by the switch (all reasons)."),
    ("collisions", "Batcher-Banyan contention events."),
]

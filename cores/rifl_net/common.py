"""The RIFL network's ABI: the line card's counters and the network SoC block's CSR words and counters, used
by the RTL (cores.rifl_net), the Verilated models and the host software alike."""
from cores.lib.header import Header
from cores.rifl.common import CHANNEL_COUNTERS, CHK_COUNTERS, GEN_COUNTERS

LINE_CARD_COUNTERS = [      # of each RIFLLineCard (besides its L1 endpoint's)
    ("malformed", "Layer 1 packets received that were not one Layer 2 packet long (completed or truncated)."),
]

# RIFLNetBlock (cores/rifl_net/soc_block.py): n hosts on one switch, a generator and a checker per host.
NET_MIN_LENGTH = 8             # bytes: the packet's tag (source, flow sequence number) fits
NET_LENGTH_BITS = 9            # packet lengths NET_MIN_LENGTH + 0..2^9 - 1 bytes (a hash of source and sequence)
NET_CONTROL = Header.from_lsb_layout([("enable", 1), ("random", 1)])
NET_SUMS = [
    ("cells_in", "cells the switch's VOQs accepted"),
    ("cells_out", "cells the switch's outputs delivered"),
    ("drop_full", "cells dropped by a full VOQ (0: flow control held every sender)"),
    ("fc_voq_frames", "per-VOQ flow-control frames the switch sent over its links"),
    ("replays", "replay episodes of all endpoints (hosts and switch ports)"),
    ("rx_errors", "receive errors of all endpoints"),
    ("link_downs", "link up -> down transitions of all endpoints"),
]


def net_block_counters(n, channels):
    """RIFLNetBlock's counters: per host h{h}_sent and the checker's CHK_COUNTERS, the NET_SUMS, per channel
    c{c}_errors and c{c}_undetected."""
    out = []
    for h in range(n):
        out += [(f"h{h}_{name}", f"host {h}: {desc}") for name, desc in GEN_COUNTERS + CHK_COUNTERS]
    out += NET_SUMS
    for c in range(channels):
        out += [(f"c{c}_{name}", f"channel {c}: {dict(CHANNEL_COUNTERS)[name]}") for name in ("errors", "undetected")]
    return out

"""ABI of the synchronization network: directions, their meanings, modes, flit format, stream layouts.

Coordinates: x grows to the East (0 .. W-1), y grows to the North (0 .. H-1). A node's port for direction D
talks to the neighbour at (x + dx, y + dy). The message a node sends *towards* D tells the receiver that every
node on the receiver's opposite side (the spec's direction table, see `MEANING`) has triggered.

The lamlet (control core) synchronizer is one more node, attached to the south-west port of the corner node
(0, 0); node (0, 0) folds the lamlet's message into its own trigger (`LAMLET_DIR`).
"""
from migen import log2_int

from cores.lib.header import Header

# Directions --------------------------------------------------------------------------------------
N, S, E, W, NE, NW, SE, SW = range(8)
DIRS = (N, S, E, W, NE, NW, SE, SW)
DIR_NAMES = ("n", "s", "e", "w", "ne", "nw", "se", "sw")
VECTORS = {N: (0, 1), S: (0, -1), E: (1, 0), W: (-1, 0),
           NE: (1, 1), NW: (-1, 1), SE: (1, -1), SW: (-1, -1)}
OPPOSITE = {d: next(o for o in DIRS if VECTORS[o] == (-VECTORS[d][0], -VECTORS[d][1])) for d in DIRS}

# What the receiver of a message sent towards D learns (spec's table, from the receiver's point of view).
MEANING = {
    N:  "all nodes directly south of you have triggered",
    S:  "all nodes directly north of you have triggered",
    E:  "all nodes directly west of you have triggered",
    W:  "all nodes directly east of you have triggered",
    NE: "all nodes in your south-west quadrant have triggered",
    NW: "all nodes in your south-east quadrant have triggered",
    SE: "all nodes in your north-west quadrant have triggered",
    SW: "all nodes in your north-east quadrant have triggered",
}


def deps(d):
    """Incoming directions (besides the node's own trigger) that the message sent towards `d` needs.

    The message towards d covers the sender and everything behind it: incoming messages from directions whose
    every non-zero component is opposite to d's and whose zero components match d's zeros.
    (N: S; NE: S, W, SW; ...)"""
    dx, dy = VECTORS[d]
    out = []
    for o in DIRS:
        ox, oy = VECTORS[o]
        if ox in ((0, -dx) if dx else (0,)) and oy in ((0, -dy) if dy else (0,)):
            out.append(o)
    return tuple(out)


LAMLET_DIR = SW       # port of node (0, 0) that the lamlet synchronizer is attached to

# Modes -------------------------------------------------------------------------------------------
MODE_MAX, MODE_UMAX, MODE_MIN, MODE_UMIN, MODE_OR, MODE_AND = range(6)
MODES = (MODE_MAX, MODE_UMAX, MODE_MIN, MODE_UMIN, MODE_OR, MODE_AND)
MODE_NAMES = ("max", "umax", "min", "umin", "or", "and")
MODE_BITS = 3

# Packet format -----------------------------------------------------------------------------------
MAX_IDENTS = 8                    # sync idents a node can hold in flight (spec: "likely 8")
IDENT_BITS = log2_int(MAX_IDENTS)
LINK_WIDTH = 10                   # flit width (spec: "10 bits wide")
DEFAULT_VALUE_WIDTH = 32
DEFAULT_HOP_LATENCY = 10          # min_hop_latency of the 32-bit default (spec: "5 cycles for each hop is
                                  # realistic" for 2-3 flit packets; see docs/sync.md)
CPL_LATENCY = 2                   # cycles from a node taking the trigger that completes a round to presenting
                                  # the completion (its read and merge stages)
# A packet is the bit string ident | mode | error | value (LSB first: ident in bits 0..2), cut into
# LINK_WIDTH-bit flits sent LSB first on consecutive cycles.
PKT_IDENT_LSB = 0
PKT_MODE_LSB = PKT_IDENT_LSB + IDENT_BITS
PKT_ERROR_LSB = PKT_MODE_LSB + MODE_BITS
PKT_VALUE_LSB = PKT_ERROR_LSB + 1
PKT_HEADER_BITS = PKT_VALUE_LSB


def packet_bits(value_width):
    return PKT_HEADER_BITS + value_width


def n_flits(value_width, link_width=LINK_WIDTH):
    """Flits per packet: 2 up to 13-bit values, 3 up to 23-bit values, 4 for the 32-bit default."""
    return -(-packet_bits(value_width) // link_width)


def min_hop_latency(value_width, link_width=LINK_WIDTH):
    """Fewest cycles per hop: the flits of a packet, plus the sender's output register, the receiver's select,
    read and merge cycles and the two cycles its link takes to register the pending messages and the next
    one's slot (packets of one or two flits wait one or two more: the receiver decodes a packet's header two
    cycles before offering it)."""
    return max(n_flits(value_width, link_width), 3) + 6


def packet_header(value_width):
    """The packet's fields (ident | mode | error | value, LSB first) as a descriptor."""
    return Header.from_bits({"ident": (PKT_IDENT_LSB, IDENT_BITS), "mode": (PKT_MODE_LSB, MODE_BITS),
                             "error": (PKT_ERROR_LSB, 1), "value": (PKT_VALUE_LSB, value_width)},
                            length=(packet_bits(value_width) + 7) // 8)


def pack(ident, mode, error, value, value_width):
    """Packet fields -> list of flits (ints); bad idents/modes are sent as given (tests use them)."""
    bits = packet_header(value_width).pack(check=False, ident=ident, mode=mode, error=error, value=value)
    mask = (1 << LINK_WIDTH) - 1
    return [(bits >> (LINK_WIDTH * i)) & mask for i in range(n_flits(value_width))]


def unpack(flits, value_width):
    """List of flits -> (ident, mode, error, value)."""
    bits = 0
    for i, f in enumerate(flits):
        bits |= f << (LINK_WIDTH * i)
    f = packet_header(value_width).unpack(bits)
    return f["ident"], f["mode"], f["error"], f["value"]


# Stream layouts ----------------------------------------------------------------------------------
def trigger_layout(value_width=DEFAULT_VALUE_WIDTH):
    return [("ident", IDENT_BITS), ("mode", MODE_BITS), ("value", value_width)]


def completion_layout(value_width=DEFAULT_VALUE_WIDTH):
    """error: the modes of the contributions differed somewhere (the value is then not meaningful)."""
    return [("ident", IDENT_BITS), ("mode", MODE_BITS), ("error", 1), ("value", value_width)]


def link_layout():
    return [("data", LINK_WIDTH), ("valid", 1)]


# SoC block CSR words, fields LSB first -----------------------------------------------------------
NODE_BITS = 16          # participant index: grid node y * width + x, the lamlet is width * height
TRIG_CTRL = Header.from_lsb_layout([("node", NODE_BITS), ("ident", IDENT_BITS), ("mode", MODE_BITS), ("go", 1)])
TRIG_STATUS = Header.from_lsb_layout([("busy", 1)])
CPL_STATUS = Header.from_lsb_layout([("valid", 1), ("level", 16)])
CPL_POP = Header.from_lsb_layout([("pop", 1)])
CPL_INFO = Header.from_lsb_layout([("node", NODE_BITS), ("ident", IDENT_BITS), ("mode", MODE_BITS), ("error", 1)])
INFO = Header.from_lsb_layout([("width", 6), ("height", 6), ("n_idents", 4), ("value_width", 6), ("lamlet", 1),
                               ("hop_latency", 8)])
LATENCY_BITS = 32

# Counters of the SoC block (CSR names)
BLOCK_COUNTERS = [
    ("trigger_drops", "Triggers dropped (bad node/ident/mode, ident in flight, or go while busy)."),
    ("rx_drops", "Link packets dropped (bad fields or overflow)."),
    ("mismatches", "Merges of contributions with different modes."),
    ("completions", "Completions queued."),
]

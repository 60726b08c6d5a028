"""MiniSharp v0.1 ABI: every protocol constant, header layout and stream layout, defined once.

The RTL (cores/minisharp), the tests and the host software (software/minisharp) all import this module.
Values that the specification lost (opcode/format tables, chunk size) are chosen here; docs/minisharp.md
gives each choice and its derivation.

Wire conventions: every multi-byte header field is big-endian (network order); FP32 payload elements are
IEEE-754 binary32, big-endian. On a W-bit port stream byte i of a beat is data[8*i:8*i+8] (LiteEth order).
"""
import math

from litex.soc.interconnect.stream import EndpointDescription

from cores.lib.header import Header

# Ethernet / version -------------------------------------------------------------------------------

ETHERTYPE          = 0x88B5   # local experimental EtherType
VERSION_MAJOR      = 0
VERSION_MINOR      = 1        # the minor of the frames the core sends, and of v0.1 senders
VERSION_MINOR_V02  = 2        # v0.2 (COL_TEARDOWN, addressing, admin ports); any minor is accepted
ETH_HEADER_BYTES   = 14       # dst MAC, src MAC, EtherType
CONTROL_BYTES      = 2        # Major(4) | Minor(4) | Opcode(8)
OP_HEADER_BYTES    = 8        # 64-bit operation header
MS_HEADER_BYTES    = ETH_HEADER_BYTES + CONTROL_BYTES + OP_HEADER_BYTES  # 24: payload starts here
ETH_MIN_FRAME      = 60       # minimum Ethernet frame without FCS; shorter frames are padded by senders
ETH_MTU            = 1500
ETHERTYPE_ARP      = 0x0806   # broadcast ARP requests also reach the management port (with_mgmt builds)

# Opcodes (0 is invalid by design: a reset/zeroed control word never encodes an operation) ---------

MS_OP_INVALID      = 0
MS_OP_COL_SETUP    = 1
MS_OP_COL_DATA     = 2
MS_OP_COL_RES      = 3
MS_OP_COL_TEARDOWN = 4        # v0.2: remove a context (op header as COL_SETUP's; no record)
MS_OP_COL_PDATA    = 5        # v0.2: a contribution in the exact partial format (op header as COL_DATA's)
OPCODES = {MS_OP_COL_SETUP: "COL_SETUP", MS_OP_COL_DATA: "COL_DATA", MS_OP_COL_RES: "COL_RES",
           MS_OP_COL_TEARDOWN: "COL_TEARDOWN", MS_OP_COL_PDATA: "COL_PDATA"}

# Setup record enumerations (0 is never valid, so an all-zero record is rejected) -----------------

MS_COL_REDUCE             = 1
MS_COL_ALLREDUCE          = 2     # v0.2: the root's result travels back down the tree
MS_RED_SUM                = 1
MS_FMT_FP32               = 1
MS_FMT_EXACT              = 2     # v0.2: the exact partial format (below)
MS_ACC_EXACT_FP32_MAG277  = 1
COLLECTIVES   = {MS_COL_REDUCE: "REDUCE", MS_COL_ALLREDUCE: "ALLREDUCE"}
REDUCE_OPS    = {MS_RED_SUM: "SUM"}
FORMATS       = {MS_FMT_FP32: "FP32", MS_FMT_EXACT: "EXACT"}
# v0.2 roles of a context: ROOT sends COL_RES out of its egress range; CHILD sends each chunk result to its
# parent switch (Dst MAC parent_mac, out of uplink_port) as the contribution of rank parent_rank, in the
# context's output format (COL_PDATA for EXACT, COL_DATA for FP32), and, for ALLREDUCE, multicasts the
# COL_RES it receives from above to its egress range.
MS_ROLE_ROOT  = 1
MS_ROLE_CHILD = 2
ROLES = {MS_ROLE_ROOT: "ROOT", MS_ROLE_CHILD: "CHILD"}
ACC_MODES     = {MS_ACC_EXACT_FP32_MAG277: "EXACT_FP32_MAG277"}

# Outer forwarding policy (CSR) ---------------------------------------------------------------------

MSP_TRANSPARENT     = 0   # reset value: non-MiniSharp frames are forwarded on the static port map
MSP_MINISHARP_ONLY  = 1   # non-MiniSharp frames are dropped and counted
POLICIES = {MSP_TRANSPARENT: "TRANSPARENT", MSP_MINISHARP_ONLY: "MINISHARP_ONLY"}

# Chunking -----------------------------------------------------------------------------------------
# MTU 1500 - 2 (control) - 8 (op header) = 1490 payload bytes at most; whole FP32 elements: 372 (1488 B).
# v0.1 uses the largest power of two that fits, 1024 bytes = 256 elements: chunk addressing is a shift,
# a chunk is a whole number of 32/64/512-bit beats, and one chunk slot fills a power-of-two RAM region.

FP32_BYTES              = 4
MS_CHUNK_PAYLOAD_MAX    = ETH_MTU - CONTROL_BYTES - OP_HEADER_BYTES          # 1490
MS_CHUNK_PAYLOAD_BYTES  = 1 << int(math.log2(MS_CHUNK_PAYLOAD_MAX))          # 1024
MS_CHUNK_ELEMENTS       = MS_CHUNK_PAYLOAD_BYTES // FP32_BYTES                # 256


# v0.2 contexts (setup records of minor 2) use chunks of MS_V02_CHUNK_ELEMENTS FP32 (or the build's
# chunk_elements if smaller): a chunk's exact partial, 32 x 40 = 1280 bytes, fits one 1500-byte frame, so a
# chunk is one frame at every level of the tree (FP32 frames of 152 bytes from the hosts).
MS_V02_CHUNK_ELEMENTS   = 32
MS_V02_MAX_ELEMENTS     = (1 << 16) * MS_V02_CHUNK_ELEMENTS   # 2,097,152: 16-bit Chunk Index


def v02_chunk_elements(chunk_elements=MS_CHUNK_ELEMENTS):
    """Elements of a v0.2 context's chunk in a build with `chunk_elements` (the v0.1 chunk)."""
    return min(MS_V02_CHUNK_ELEMENTS, chunk_elements)


def num_chunks(element_count, chunk_elements=MS_CHUNK_ELEMENTS):
    """Chunks of a vector: ceil(element_count / chunk_elements)."""
    return (element_count + chunk_elements - 1) // chunk_elements


def chunk_length(element_count, chunk_index, chunk_elements=MS_CHUNK_ELEMENTS):
    """Elements carried by chunk `chunk_index` (the last chunk may be shorter); 0 if out of range."""
    start = chunk_index * chunk_elements
    return max(0, min(chunk_elements, element_count - start))


# Headers (cores.lib.header.Header: byte k of a header in bits 8k..8k+7, fields big-endian) ---------
# Every frame starts with the Ethernet header, the control bytes (version: Major << 4 | Minor; opcode)
# and the 64-bit operation header of its opcode; a COL_SETUP payload starts with the setup record.

_ETH = [("dst_mac", 0, 6), ("src_mac", 6, 6), ("ethertype", 12, 2)]
_CONTROL = [("version", 14, 1), ("opcode", 15, 1)]
OP_OFFSET = 16               # the operation header's first byte
ETH_HEADER = Header.from_bytes(_ETH, ETH_HEADER_BYTES)


def _ms_header(op_fields):
    return Header.from_bytes(_ETH + _CONTROL + op_fields, MS_HEADER_BYTES)


MS_HEADER    = _ms_header([("op_header", OP_OFFSET, OP_HEADER_BYTES)])     # any opcode: the op header as one field
SETUP_HEADER = _ms_header([("collective_id", 16, 4), ("reserved", 20, 4)])
DATA_HEADER  = _ms_header([("rank", 16, 1), ("collective_id", 17, 4), ("chunk_index", 21, 2), ("reserved", 23, 1)])
RES_HEADER   = _ms_header([("reserved0", 16, 1), ("collective_id", 17, 4), ("chunk_index", 21, 2),
                           ("reserved1", 23, 1)])
OP_HEADERS = {MS_OP_COL_SETUP: SETUP_HEADER, MS_OP_COL_DATA: DATA_HEADER, MS_OP_COL_RES: RES_HEADER,
              MS_OP_COL_TEARDOWN: SETUP_HEADER, MS_OP_COL_PDATA: DATA_HEADER}
VERSION_MAJOR_SHIFT = 4      # Major in the version byte's high nibble, Minor in the low one


def version_byte(major=VERSION_MAJOR, minor=VERSION_MINOR):
    return (major << VERSION_MAJOR_SHIFT) | minor


def split_version(version):
    """(major, minor) of a version byte."""
    return version >> VERSION_MAJOR_SHIFT, version & ((1 << VERSION_MAJOR_SHIFT) - 1)


# Setup record (16 bytes at the start of the COL_SETUP payload).
SETUP_RECORD_BYTES = 16
SETUP_RECORD = Header.from_bytes([
    ("collective",        0, 1),
    ("reduce_op",         1, 1),
    ("input_fmt",         2, 1),
    ("acc_mode",          3, 1),
    ("output_fmt",        4, 1),
    ("egress_first",      5, 1),
    ("egress_last",       6, 1),
    ("reserved0",         7, 1),
    ("expected_local",    8, 2),
    ("element_count",    10, 4),
    ("reserved1",        14, 2),
], SETUP_RECORD_BYTES)


# v0.2 setup record (minor 2): 32 bytes, the v0.1 record then the tree fields.
SETUP_RECORD_V02_BYTES = 32
SETUP_RECORD_V02 = Header.from_bytes([(n, f.byte, f.width // 8) for n, f in SETUP_RECORD.fields.items()] + [
    ("role",             16, 1),
    ("uplink_port",      17, 1),
    ("parent_rank",      18, 1),
    ("reserved2",        19, 1),
    ("parent_mac",       20, 6),
    ("reserved3",        26, 6),
], SETUP_RECORD_V02_BYTES)


def setup_record(minor):
    """The setup record of a COL_SETUP of this minor version (v0.1: 16 bytes; 2 and later: 32)."""
    return SETUP_RECORD_V02 if minor >= VERSION_MINOR_V02 else SETUP_RECORD


def setup_record_bytes(minor):
    return setup_record(minor).bits // 8


# Exact partial format (MS_FMT_EXACT). An element is 40 bytes, one 320-bit big-endian number: byte 0 holds
# the flags (bit 0 nan, 1 pinf, 2 ninf, 3 negzero: the accumulator's ACC_FLAGS; bits 4-7 zero), bytes 1-39
# a 312-bit two's-complement integer N, and the element is the exact sum N * 2^-149 with those flags. A
# valid N has |N| < 2^PARTIAL_MAG_BITS (293 = 277 + 16: any sum of 2^16 FP32): bits 311..293 copy the
# sign. On a 32-bit payload word stream, word 0 of an element is flags << 24 | N[311:288] and word j (1..9)
# is N's digit 9 - j (bits 32(9-j) .. 32(9-j)+31).
PARTIAL_ELEMENT_BYTES = 40
PARTIAL_WORDS         = PARTIAL_ELEMENT_BYTES // 4
PARTIAL_VALUE_BITS    = 312
PARTIAL_MAG_BITS      = 293
# the accumulator's top limb is this much wider in builds that take partials (limb 8 adds a partial's bits
# 288..311, |top| < 2^5, on top of its digit)
PARTIAL_TOP_EXTRA     = 7


def payload_word(lanes):
    """A payload word of `lanes` FP32 elements as they arrive (element i, big-endian, at bytes 4i..4i+3);
    field `e<i>` is element i's value."""
    return Header.from_bytes([(f"e{i}", FP32_BYTES * i, FP32_BYTES) for i in range(lanes)], FP32_BYTES * lanes)


# MiniSharpSoCBlock's CSR words (fields from bit 0 up), for the block and the host code ----------------

CONFIG_CSR        = Header.from_lsb_layout([("num_ports", 8), ("max_ranks", 9), ("n_contexts", 7), ("n_slots", 8)])
INJECT_CTRL_CSR   = Header.from_lsb_layout([("length", 16), ("port", 8), ("go", 1)])
INJECT_STATUS_CSR = Header.from_lsb_layout([("busy", 1)])
INJECT_COUNTERS   = [("refused", "Injector data writes and sends refused (busy, buffer full, bad length).")]
CAPTURE_CTRL_CSR  = Header.from_lsb_layout([("port", 8), ("arm", 1)])
CAPTURE_DATA_CSR  = Header.from_lsb_layout([("byte", 8), ("last", 1)])


# MAC addresses ----------------------------------------------------------------------------------

BROADCAST_MAC   = 0xFFFFFFFFFFFF
DEFAULT_DST_MAC = BROADCAST_MAC   # port<i>_dst_mac reset: COL_RES frames are broadcast unless configured
DEFAULT_SRC_MAC = 0x024D53000000  # port<i>_src_mac reset: 02:4d:53 ("MS") + port number i
HOST_MAC        = 0x0200000000AA  # the Aggregation Manager and the ranks in the demos, tests and benchmark
# v0.2 addressing: with the core's `mac_filter` on, a switch consumes the COL_SETUP / COL_DATA / COL_TEARDOWN
# frames whose Dst MAC is its own `mac` or the MiniSharp group address, and forwards every other MiniSharp
# frame on the static port map (mac_filter off, the reset value: every MiniSharp frame is consumed, as v0.1).
GROUP_MAC       = 0x014D53000000  # 01:4d:53:00:00:00, a locally administered multicast address ("MS")
DEFAULT_MAC     = DEFAULT_SRC_MAC # the switch's `mac` reset value (port 0's source MAC)

# Drop reasons (one counter each) -------------------------------------------------------------------

DROP_REASONS = [
    ("not_minisharp",  "non-MiniSharp frame under MSP_MINISHARP_ONLY"),
    ("runt",           "frame too short for its Ethernet/MiniSharp header"),
    ("bad_version",    "unsupported major version"),
    ("bad_opcode",     "opcode 0 or unknown"),
    ("bad_reserved",   "a reserved field is non-zero"),
    ("bad_length",     "payload length inconsistent with the opcode or the installed context"),
    ("bad_setup",      "setup record value unsupported or out of range (incl. capability limits)"),
    ("unknown_coll",   "COL_DATA or COL_TEARDOWN for a Collective ID that is not installed"),
    ("bad_rank",       "rank >= expected_local_contributors"),
    ("bad_chunk",      "chunk index >= number of chunks"),
    ("duplicate",      "second contribution of a (Collective ID, Rank, Chunk Index)"),
    ("no_slot",        "no free chunk slot"),
    ("overflow",       "ingress buffer full: frame truncated"),
    ("ctx_full",       "setup for a new Collective ID with the context table full"),
    ("phy_error",      "the PHY flagged an error in the frame"),
    ("not_admin",      "COL_SETUP or COL_TEARDOWN from a port outside the admin_ports mask"),
    ("ahead",          "chunk index beyond the context's completion window (DONE_WINDOW chunks past its oldest "
                       "incomplete chunk)"),
    ("bad_format",     "COL_DATA for a context of EXACT input, or COL_PDATA for one of FP32 input"),
    ("bad_partial",    "a COL_PDATA element with non-zero reserved flag bits or |N| >= 2^293"),
    ("bad_result",     "COL_RES addressed to the switch for a context that is not an ALLREDUCE child"),
    ("mgmt_refused",   "a frame for the management port (its MAC) from a port outside the management set or "
                       "from a source MAC other than the allowed one"),
]
DROP = {name: i for i, (name, _) in enumerate(DROP_REASONS)}
PORT_COUNTERS = [
    ("rx_frames",  "frames received"),
    ("rx_drops",   "received frames dropped"),
    ("fwd_frames", "received frames forwarded"),
    ("tx_frames",  "frames sent"),
]


MGMT_COUNTERS = [
    ("mgmt_rx_frames", "Frames delivered to the management port."),
    ("mgmt_tx_frames", "Frames sent by the management port."),
]


def counters(num_ports, mgmt=False):
    """MiniSharpCore's counters (cores.lib.counters spec): drop_<reason>, port<i>_<kind>, the engine's
    setups and chunks, and with a management port (mgmt) MGMT_COUNTERS; MiniSharpSoCBlock's CSRs have these
    names."""
    return ([(f"drop_{name}", f"Frames dropped: {desc}.") for name, desc in DROP_REASONS] +
            [(f"port{i}_{kind}", f"Port {i}: {desc}.") for kind, desc in PORT_COUNTERS for i in range(num_ports)] +
            [("setups", "Contexts installed or replaced."), ("chunks", "Chunk results emitted."),
             ("teardowns", "Contexts removed by COL_TEARDOWN."),
             ("slot_timeouts", "Chunk slots freed by the idle timeout (their partial sums discarded)."),
             ("ctx_timeouts", "Contexts removed by the idle timeout.")] + (MGMT_COUNTERS if mgmt else []))


# Completion window and idle timeouts ---------------------------------------------------------------
# Each context remembers which chunks completed: every chunk below its oldest incomplete chunk `base`, and a
# bitmap of DONE_WINDOW chunks from `base` on. A contribution to a completed chunk (a late duplicate) is
# dropped as `duplicate` and holds no slot; one to a chunk at base + DONE_WINDOW or beyond is dropped as
# `ahead` (its sender resends it later, as after no_slot).
DONE_WINDOW = 64
# Idle timeouts count ticks of 2^TIMEOUT_TICK_LOG2 cycles (524 us at 125 MHz); 0 (the reset value) = never.
# A slot that received no contribution for slot_timeout ticks is freed (slot_timeouts); a context that
# received no accepted frame for ctx_timeout ticks is removed with its slots (ctx_timeouts).
TIMEOUT_TICK_LOG2 = 16
TIMEOUT_BITS = 16


# Exact accumulator (MS_ACC_EXACT_FP32_MAG277) ----------------------------------------------------
# Finite FP32 values have bit weights 2^-149 .. 2^127: 277 magnitude bits. A sum of R of them needs
# ceil(log2 R) more carry bits and a sign. The hardware keeps the 277-bit window as ACC_LIMBS limbs of
# ACC_LIMB_BITS position bits, each stored signed with ceil(log2 Rmax)+1 guard bits (carry chunking).

ACC_MAG_BITS   = 277
ACC_LSB_EXP    = -149
ACC_LIMB_BITS  = 32
ACC_LIMBS      = math.ceil(ACC_MAG_BITS / ACC_LIMB_BITS)   # 9
ACC_FLAGS      = ["nan", "pinf", "ninf", "negzero"]          # sticky flags; negzero = every input was -0
FP32_QNAN      = 0x7FC00000
FP32_PINF      = 0x7F800000
FP32_NINF      = 0xFF800000


def carry_bits(max_ranks):
    """ceil(log2 Rmax) carry bits for a sum of up to `max_ranks` contributions."""
    return max(1, math.ceil(math.log2(max_ranks)))


def limb_width(max_ranks):
    """Stored width of one signed limb: position bits + carry bits + sign."""
    return ACC_LIMB_BITS + carry_bits(max_ranks) + 1


# Stream layouts -----------------------------------------------------------------------------------

def port_layout(dw):
    """Per-port stream (LiteEth PHY layout): data, last_be (one-hot last valid byte), error."""
    return [("data", dw), ("last_be", dw // 8), ("error", dw // 8)]


def port_description(dw):
    return EndpointDescription(port_layout(dw))


# Descriptor of one ingress frame handed from a port parser to the collective engine.
KIND_SETUP    = 0
KIND_DATA     = 1
KIND_TEARDOWN = 2
KIND_RESULT   = 3     # v0.2: a COL_RES from the parent, for an ALLREDUCE child context
descriptor_layout = [
    ("kind",           2),
    ("exact",          1),     # COL_PDATA
    ("minor2",         1),     # minor version >= 2 (the 32-byte setup record)
    ("collective_id", 32),
    ("rank",           8),
    ("chunk_index",   16),
    ("payload_bytes", 16),
    ("record",       SETUP_RECORD_V02_BYTES * 8),
]

# Result chunk metadata handed from the engine to the egress serializers: the frame's opcode (COL_RES, or
# COL_DATA / COL_PDATA to the parent), rank, element format and Dst MAC (use_dst: else the port's).
result_meta_layout = [
    ("collective_id", 32),
    ("chunk_index",   16),
    ("n_elements",    16),
    ("opcode",         8),
    ("rank",           8),
    ("exact",          1),
    ("use_dst",        1),
    ("dst_mac",       48),
    ("saf",            1),     # store and forward: results come slower than a port sends them (EXACT in, FP32 out)
]


"""MiniSharp v0.1 ABI: every protocol constant, header layout and stream layout, defined once.

The RTL (cores/minisharp), the tests and the host software (software/minisharp) all import this module.
Values that the specification lost (opcode/format tables, chunk size) are chosen here; docs/minisharp.md
gives each choice and its derivation.

Wire conventions: every multi-byte header field is big-endian (network order); FP32 payload elements are
IEEE-754 binary32, big-endian. On a W-bit port stream byte i of a beat is data[8*i:8*i+8] (LiteEth order).
"""
import math

from migen import Cat

from litex.soc.interconnect.stream import EndpointDescription

# Ethernet / version -------------------------------------------------------------------------------

ETHERTYPE          = 0x88B5   # local experimental EtherType
VERSION_MAJOR      = 0
VERSION_MINOR      = 1
ETH_HEADER_BYTES   = 14       # dst MAC, src MAC, EtherType
CONTROL_BYTES      = 2        # Major(4) | Minor(4) | Opcode(8)
OP_HEADER_BYTES    = 8        # 64-bit operation header
MS_HEADER_BYTES    = ETH_HEADER_BYTES + CONTROL_BYTES + OP_HEADER_BYTES  # 24: payload starts here
ETH_MIN_FRAME      = 60       # minimum Ethernet frame without FCS; shorter frames are padded by senders
ETH_MTU            = 1500

# Opcodes (0 is invalid by design: a reset/zeroed control word never encodes an operation) ---------

MS_OP_INVALID      = 0
MS_OP_COL_SETUP    = 1
MS_OP_COL_DATA     = 2
MS_OP_COL_RES      = 3
OPCODES = {MS_OP_COL_SETUP: "COL_SETUP", MS_OP_COL_DATA: "COL_DATA", MS_OP_COL_RES: "COL_RES"}

# Setup record enumerations (0 is never valid, so an all-zero record is rejected) -----------------

MS_COL_REDUCE             = 1
MS_RED_SUM                = 1
MS_FMT_FP32               = 1
MS_ACC_EXACT_FP32_MAG277  = 1
COLLECTIVES   = {MS_COL_REDUCE: "REDUCE"}
REDUCE_OPS    = {MS_RED_SUM: "SUM"}
FORMATS       = {MS_FMT_FP32: "FP32"}
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


def num_chunks(element_count, chunk_elements=MS_CHUNK_ELEMENTS):
    """Chunks of a vector: ceil(element_count / chunk_elements)."""
    return (element_count + chunk_elements - 1) // chunk_elements


def chunk_length(element_count, chunk_index, chunk_elements=MS_CHUNK_ELEMENTS):
    """Elements carried by chunk `chunk_index` (the last chunk may be shorter); 0 if out of range."""
    start = chunk_index * chunk_elements
    return max(0, min(chunk_elements, element_count - start))


# Header layouts: (name, byte offset in the frame, bytes) -------------------------------------------

ETH_FIELDS = [("dst_mac", 0, 6), ("src_mac", 6, 6), ("ethertype", 12, 2)]
CONTROL_OFFSET = 14          # byte 14 = Major << 4 | Minor, byte 15 = Opcode
OP_OFFSET = 16
SETUP_OP_FIELDS = [("collective_id", 16, 4), ("reserved", 20, 4)]
DATA_OP_FIELDS  = [("rank", 16, 1), ("collective_id", 17, 4), ("chunk_index", 21, 2), ("reserved", 23, 1)]
RES_OP_FIELDS   = [("reserved0", 16, 1), ("collective_id", 17, 4), ("chunk_index", 21, 2), ("reserved1", 23, 1)]

# Setup record (16 bytes at the start of the COL_SETUP payload): (name, offset in record, bytes).
SETUP_RECORD_FIELDS = [
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
]
SETUP_RECORD_BYTES = 16

# Drop reasons (one counter each) -------------------------------------------------------------------

DROP_REASONS = [
    ("not_minisharp",  "non-MiniSharp frame under MSP_MINISHARP_ONLY"),
    ("runt",           "frame too short for its Ethernet/MiniSharp header"),
    ("bad_version",    "unsupported major version"),
    ("bad_opcode",     "opcode 0 or unknown"),
    ("bad_reserved",   "a reserved field is non-zero"),
    ("bad_length",     "payload length inconsistent with the opcode or the installed context"),
    ("bad_setup",      "setup record value unsupported or out of range (incl. capability limits)"),
    ("unknown_coll",   "COL_DATA for a Collective ID that is not installed"),
    ("bad_rank",       "rank >= expected_local_contributors"),
    ("bad_chunk",      "chunk index >= number of chunks"),
    ("duplicate",      "second contribution of a (Collective ID, Rank, Chunk Index)"),
    ("no_slot",        "no free chunk slot"),
    ("overflow",       "ingress buffer full: frame truncated"),
    ("ctx_full",       "setup for a new Collective ID with the context table full"),
    ("phy_error",      "the PHY flagged an error in the frame"),
]
DROP = {name: i for i, (name, _) in enumerate(DROP_REASONS)}

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
KIND_SETUP = 0
KIND_DATA  = 1
descriptor_layout = [
    ("kind",           1),
    ("collective_id", 32),
    ("rank",           8),
    ("chunk_index",   16),
    ("payload_bytes", 16),
    ("record",       SETUP_RECORD_BYTES * 8),
]

# Result chunk metadata handed from the engine to the egress serializers.
result_meta_layout = [
    ("collective_id", 32),
    ("chunk_index",   16),
    ("n_elements",    16),
]


def record_field(record, name):
    """Slice of a big-endian setup record Signal/Value (byte 0 in bits 0..7) for field `name`."""
    for fname, off, n in SETUP_RECORD_FIELDS:
        if fname == name:
            return be_bytes(record, off, n)
    raise KeyError(name)


def be_bytes(value, offset, n):
    """Big-endian n-byte field at byte `offset` of a byte-vector Value (byte i in bits 8i..8i+7)."""
    return Cat(*[value[8 * (offset + n - 1 - i):8 * (offset + n - i)] for i in range(n)])


"""Sparsr host wire format: every constant, field and layout, defined once.

The RTL (`cores/sparsr`), the host encoder/decoder (`software/sparsr`), the reference model and the tests
import this module; nothing here is repeated elsewhere.

Derivations (the spec lost its bit diagrams; the values below are the ones consistent with every number
it still gives):

* A frame is ``FRAME_WORDS`` = 256 words of 32 bits in both directions. The spec gives 253 payload words,
  so the header is 3 words: CMD, LEN, ADDR (in this order, one word each).
* A slot starts with 2 words: the tag and the row number.
* A LIL entry is 5 bytes: one lane-number byte (256 lanes need 8 bits) and the 32-bit lane value.
  Entries are packed back to back, little-endian, into a byte stream that is zero-padded to a whole word,
  so ``n`` entries use ``ceil(5 n / 4)`` payload words.
* 102 entries: ``ceil(5 * 102 / 4)`` = 128 payload words and 103 entries would need 129, so a LIL slot at
  its limit is 2 + 128 = 130 words, which always fits the 253 payload words of one frame (a LIL slot is
  never split). 128 words is half a raw row, so at the limit LIL still halves the row.
* A raw row is 256 words; the longest piece one frame carries is 253 - 2 = 251 words, so a raw row always
  needs two pieces (or more if the sender splits it further).
"""
from cores.lib.header import Header

# Words and rows -------------------------------------------------------------------------------------
WORD_BITS = 32
WORD_MASK = (1 << WORD_BITS) - 1
LANE_BITS = 32                      # one lane = one word
ROW_LANES = 256                     # a row is 8192 bits = 1024 bytes = 256 lanes of 32 bits
ROW_WORDS = ROW_LANES * LANE_BITS // WORD_BITS
ROW_BYTES = ROW_WORDS * WORD_BITS // 8
WORD_LAYOUT = [("data", WORD_BITS)]     # the receiver's word streams (cores.sparsr, LiteX stream layout)

# Frame ------------------------------------------------------------------------------------------------
FRAME_WORDS = 256
HEADER_WORDS = 3                    # CMD, LEN, ADDR
HDR_CMD, HDR_LEN, HDR_ADDR = 0, 1, 2
PAYLOAD_WORDS = FRAME_WORDS - HEADER_WORDS      # 253
MAX_SLOTS = 4

# Version of the wire protocol (the spec's version 3). The format has no spare field in the host's frames (a
# command frame's ADDR must be 0, reserved tag bits must be 0), so the card carries it: a STATUS answer's ADDR
# word holds it, and the host library checks it when it opens the card.
WIRE_VERSION = 3

# Command values (the CMD word). Answers carry ANSWER_FLAG | the command they answer.
CMD_WRITE_WMEM = 0x01   # slots -> WMEM (LIL slots through the LIL decoder)
CMD_WRITE_XMEM = 0x02   # slots -> XMEM, stored as sent (LIL form or raw)
CMD_READ_WMEM = 0x03    # payload [first_row, n_rows]; answered by raw-slot frames
CMD_DMA_XMEM_WMEM = 0x04  # payload [xmem_row, wmem_row, n_rows]; LIL rows go through the LIL decoder
CMD_STATUS = 0x05       # no payload; answered by one frame holding the counters (STATUS_COUNTERS order)
ANSWER_FLAG = 0x80
CMD_ANSWER_ROWS = ANSWER_FLAG | CMD_READ_WMEM
CMD_ANSWER_STATUS = ANSWER_FLAG | CMD_STATUS
WRITE_CMDS = (CMD_WRITE_WMEM, CMD_WRITE_XMEM)
# Command frames: LEN = number of parameter words, ADDR = 0.
CMD_PARAMS = {CMD_READ_WMEM: 2, CMD_DMA_XMEM_WMEM: 3, CMD_STATUS: 0}

# The host library's compressed write (sparsr.h `sparsr_write_data_wmem`) refuses a row with more non-zero
# lanes than this, as the spec's SDK does; `sparsr_write_data_wmem_raw` stores a row of any density.
WMEM_COMPRESSED_MAX_NONZERO = 48

# Slot --------------------------------------------------------------------------------------------------
SLOT_HEADER_WORDS = 2               # tag, row number
SLOT_TAG, SLOT_ROW = 0, 1

# Tag word fields. Bits no field covers (TAG.reserved_mask()) are reserved and must be zero.
TAG = Header.from_bits({
    "kind": (0, 2),
    "width": (2, 3),                # log2 of the lane width in bits
    "count": (8, 9),                # raw: words in this piece (1..251); LIL: entries (0..102)
    "offset": (17, 8),              # raw: first word of the row in this piece (0..255); LIL: 0
})

KIND_END = 0b00                     # ends the slot list (so zero padding is never a slot)
KIND_RAW = 0b01
KIND_LIL = 0b10
KIND_REFUSED = 0b11
LANE_WIDTH_CODE = 5                 # 2**5 = 32-bit lanes: the only width accepted

# LIL -----------------------------------------------------------------------------------------------
LIL_ENTRY_BYTES = 5                 # lane-number byte + 32-bit value, little-endian
LIL_MAX_PAYLOAD_WORDS = 128
LIL_MAX_ENTRIES = LIL_MAX_PAYLOAD_WORDS * 4 // LIL_ENTRY_BYTES   # 102
MAX_PIECE_WORDS = PAYLOAD_WORDS - SLOT_HEADER_WORDS             # 251

# Refusal reasons: one counter each. A refused frame increments exactly one (the first rule it breaks).
REASON_NONE = 0
REASON_LENGTH = 1     # frame is not exactly FRAME_WORDS words between `last` marks
REASON_CMD = 2        # unknown CMD, or a command frame with bad LEN/ADDR/parameters
REASON_TAG = 3        # a slot that does not parse (kind 11, lane width, reserved bits, count, offset, overrun)
REASON_LIL = 4        # a LIL entry breaking the rules (lanes not strictly increasing, non-zero padding)
REASON_PIECE = 5      # a raw piece that does not continue the row in progress, or is not last in its frame
REASON_HEADER = 6     # LEN / ADDR disagree with the slots (ADDR = slot count, LEN = payload words used)
REASONS = {REASON_LENGTH: "length", REASON_CMD: "cmd", REASON_TAG: "tag", REASON_LIL: "lil",
           REASON_PIECE: "piece", REASON_HEADER: "header"}
REASON_BITS = 3

# Counters (cores.lib.counters spec), in the order of the STATUS answer payload; the receiver's CSRs are
# named after them.
COUNTERS = (
    ("frames_ok", "Frames accepted."),
    ("refused_length", "Frames refused: not FRAME_WORDS words between `last` marks."),
    ("refused_cmd", "Frames refused: unknown CMD, or a command frame with bad LEN/ADDR/parameters."),
    ("refused_tag", "Frames refused: a slot tag that does not parse."),
    ("refused_lil", "Frames refused: LIL lanes not strictly increasing, or non-zero padding."),
    ("refused_piece", "Frames refused: a raw piece that does not continue the row in progress."),
    ("refused_header", "Frames refused: LEN / ADDR disagree with the slots."),
    ("slots_stored", "Slots stored."),
    ("slots_refused_row", "Slots dropped: row number past the end of the memory."),
)
STATUS_COUNTERS = tuple(name for name, _ in COUNTERS)

# Memories -----------------------------------------------------------------------------------------------
MAX_ROWS = 4096                     # rows of WMEM or XMEM a receiver takes (XMEM in DRAM: 4 MiB of rows)
# Where XMEM keeps its rows (SparsrReceiver(xmem=...)): block RAM, or DRAM through a LiteDRAM native port of
# WORD_BITS-bit words; physical row p then sits at DRAM word xmem_base / 4 + p * ROW_WORDS.
XMEM_BRAM, XMEM_DRAM = "bram", "dram"
XMEM_KINDS = (XMEM_BRAM, XMEM_DRAM)
# Counters of the DRAM XMEM (CSRs of the SoC block in DRAM mode; not part of the status answer).
DRAM_COUNTERS = (
    ("dram_words_written", "XMEM words written into DRAM (words the LiteDRAM port took)."),
    ("dram_words_read", "XMEM words read from DRAM by the DMA (words the LiteDRAM port returned)."),
)

# SoC block window (32-bit words of the block's Wishbone slave): the TX frame buffer (host writes one
# frame), then the RX buffer (holds one answer frame).
TX_OFFSET = 0
RX_OFFSET = FRAME_WORDS
WINDOW_BYTES = 2 * FRAME_WORDS * WORD_BITS // 8
# The block's CSRs that host software reads: `status` bits, and `config` (WMEM rows in the low field, XMEM
# rows in the high one).
STATUS_TX_BUSY = 1 << 0
STATUS_RX_VALID = 1 << 1
CONFIG_ROWS_BITS = 16


def make_tag(kind, count=0, offset=0, width=LANE_WIDTH_CODE):
    """A tag word (no range checks: tests use it to build bad tags too)."""
    return TAG.pack(check=False, kind=kind, width=width, count=count, offset=offset)


def lil_words(n_entries):
    """Payload words of a LIL slot with `n_entries` entries: ceil(5 n / 4)."""
    return (n_entries * LIL_ENTRY_BYTES + 3) // 4

"""RIFL ABI: every Layer 1 / Layer 2 constant, layout and header helper, defined once.

Imported by the RTL (cores/rifl, cores/switch), the tests and the host software (software/rifl).
See docs/rifl.md for the derivation of every value the specification leaves open.

Layer 1 frame of F bits, sent MSB first (F a power of two, 64..2048):

    | sync (2) | meta (2) | payload (F-16) | check (12) |

sync 01 = data frame, 10 = control frame (00/11 never sent: loss of alignment).
meta = EOP | ALL_VALID. When ALL_VALID is 0 the last payload byte holds the number of valid bytes.
check = CRC12(sync, meta, payload before scrambling) XOR frame id, where the frame id is the 12-bit
sequence number of a numbered frame (data and flow-control frames) and 0 for IDLE/PAUSE/RETRANS.
The payload is scrambled with a frame-synchronous additive mask (the first F-16 bits of the x^58+x^39+1
sequence from a fixed state), so scrambling never multiplies errors and needs no resynchronisation.
"""
from cores.lib.header import Header


# ---------------------------------------------------------------------------------------------------
# Layer 1
# ---------------------------------------------------------------------------------------------------

FRAME_BITS_MIN = 64
FRAME_BITS_MAX = 2048

SYNC_BITS = 2
META_BITS = 2
CHECK_BITS = 12
OVERHEAD_BITS = SYNC_BITS + META_BITS + CHECK_BITS          # 16 bits a frame, whatever F

SYNC_DATA = 0b01
SYNC_CTRL = 0b10

META_EOP = 0b10        # meta bit 1: end of packet
META_ALL_VALID = 0b01  # meta bit 0: every payload byte is valid (else the last byte holds the count)

CRC12_POLY = 0x02F     # x^12 + x^5 + x^3 + x^2 + x + 1, init 0, MSB first, no reflection, no final XOR
SEQ_BITS = 12          # frame id = sequence number modulo 2^12 (XOR'd into the CRC, never sent)
# Replay buffer <= 2^(SEQ_BITS - 1) frames: every id in flight (at most 2^11 - 1 unconfirmed frames, the
# sender's guard) and every stale id a receiver can still see lie within half the id space of the expected
# one, so the receiver's and the replay control's modulo-2^12 comparisons stay unambiguous.
REPLAY_LOG2_MAX = SEQ_BITS - 1

# Control codes (first 4 payload bits of a control frame).
CTRL_IDLE = 0x1        # nothing to send; seq = sender's next new frame id ("you are caught up if equal")
CTRL_PAUSE = 0x2       # sender's receiver is not aligned: the link is not up, send no data
CTRL_RETRANS = 0x3     # sender's receiver failed a check: replay from frame id seq
CTRL_FC = 0x4          # flow control: numbered like data, carried in the replay buffer
CTRL_REPLAY = 0x5      # a replay starting at frame id seq follows (arms the recovering receiver)
CTRL_CODE_BITS = 4

# Per-VOQ flow-control fields, for the switch (its FC streams) and the FC part of CTRL_LAYOUT (prefixed
# "fc_"). The link-level flow control of an endpoint uses channel LINK_FC_CHANNEL.
FC_LAYOUT = [
    ("on_valid", 1),            # pause channel on_channel
    ("on_channel", 8),
    ("off_valid", 1),           # resume channel off_channel
    ("off_channel", 8),
]
# Control payload, MSB first from the top of the payload; the rest of the payload is zero.
CTRL_LAYOUT = [
    ("code", CTRL_CODE_BITS),
    ("seq", SEQ_BITS),          # IDLE: sender's next new id; RETRANS: receiver's expected id; REPLAY: first id
    ("recovering", 1),          # sender's receiver is waiting for a replay
] + [("fc_" + name, bits) for name, bits in FC_LAYOUT]
CTRL_PAYLOAD_BITS = sum(b for _, b in CTRL_LAYOUT)  # 35 <= 48 = payload of the smallest frame
# The descriptor: the top CTRL_HEADER.bits (40) bits of a control frame's payload, the low 5 bits zero.
CTRL_HEADER = Header.from_msb_layout(CTRL_LAYOUT)
LINK_FC_CHANNEL = 0

# Flow-control hysteresis on the receive buffer: ON (pause) above 2/3, OFF (resume) below 1/3.
FC_ON_NUM, FC_ON_DEN = 2, 3
FC_OFF_NUM, FC_OFF_DEN = 1, 3

# Link alignment: up after this many consecutive valid sync headers, down after this many invalid ones.
ALIGN_UP_FRAMES = 8
ALIGN_DOWN_FRAMES = 4

# Internal pipeline cycles of one endpoint pair (TX select -> channel and channel -> RX decision, both
# ways: 4 + 4 + 4 + 4, one cycle from a RETRANS's check to its rewind, plus one RETRANS slot and a
# margin), added to the channel round trip to give the replay hold-off / quiet time, which also sizes the
# replay buffer.
PIPELINE_RTT_CYCLES = 20

# The receiver computes the CRC syndrome in this many registered parts, joined in the next stage (keeps
# each stage a few LUTs deep at F = 2048 too: 125 MHz on the ECP5 at F = 256).
RX_CRC_PARTS = 4

# Scrambler: frame-synchronous additive, x^58 + x^39 + 1.
SCRAMBLER_TAPS = (58, 39)
SCRAMBLER_SEED = 0x3FF_FFFF_FFFF_FFFF  # all 58 bits set
SCRAMBLER_SKIP = 1000                   # mask starts after this many sequence bits (a well-mixed state)


def check_frame_bits(frame_bits):
    """Raise ValueError unless frame_bits is a power of two in [64, 2048]."""
    if not isinstance(frame_bits, int) or frame_bits & (frame_bits - 1) or \
            not FRAME_BITS_MIN <= frame_bits <= FRAME_BITS_MAX:
        raise ValueError(f"frame size must be a power of two in [{FRAME_BITS_MIN}, {FRAME_BITS_MAX}] bits, "
                         f"got {frame_bits!r}")


def payload_bits(frame_bits):
    check_frame_bits(frame_bits)
    return frame_bits - OVERHEAD_BITS


def payload_bytes(frame_bits):
    return payload_bits(frame_bits) // 8


def efficiency(frame_bits):
    """Payload efficiency (F-16)/F."""
    return payload_bits(frame_bits) / frame_bits


def user_layout(frame_bits):
    """User stream layout: one frame's payload a beat. Byte k of the payload is data[8k+7:8k] (sent k-th);
    nbytes (1..P) is the number of valid bytes of the beat (bytes 0..nbytes-1); `last` marks EOP."""
    return [("data", 8 * payload_bytes(frame_bits)), ("nbytes", 8)]


def crc12(value, nbits):
    """Bitwise CRC-12 (poly 0x02F, init 0) of the nbits-bit integer `value`, MSB first."""
    crc = 0
    for i in reversed(range(nbits)):
        fb = ((value >> i) & 1) ^ ((crc >> 11) & 1)
        crc = (crc << 1) & 0xFFF
        if fb:
            crc ^= CRC12_POLY
    return crc


def scrambler_mask(nbits):
    """nbits of the x^58+x^39+1 sequence from SCRAMBLER_SEED, after SCRAMBLER_SKIP bits, as an integer
    (first bit = MSB)."""
    state = SCRAMBLER_SEED
    mask = 0
    for i in range(SCRAMBLER_SKIP + nbits):
        bit = ((state >> (SCRAMBLER_TAPS[0] - 1)) ^ (state >> (SCRAMBLER_TAPS[1] - 1))) & 1
        state = ((state << 1) | bit) & ((1 << SCRAMBLER_TAPS[0]) - 1)
        if i >= SCRAMBLER_SKIP:
            mask = (mask << 1) | bit
    return mask


def holdoff_cycles(rtt_cycles):
    """Replay hold-off and quiet time H: channel round trip plus the endpoints' pipelines."""
    return rtt_cycles + PIPELINE_RTT_CYCLES


def rx_depth_min(rtt_cycles):
    """Smallest receive buffer (frames): the third above the ON threshold must absorb the frames still
    arriving after the ON decision (one hold-off plus the flow-control frame's own pipeline)."""
    return 3 * (holdoff_cycles(rtt_cycles) + 8)


def rx_depth_for(rtt_cycles):
    """Default receive buffer: rx_depth_min rounded up to a power of two."""
    return 1 << max(4, (rx_depth_min(rtt_cycles) - 1).bit_length())


def replay_log2(rtt_cycles):
    """log2 of the replay buffer (frames) for a channel round trip of rtt_cycles frame slots. Without an
    error the unconfirmed window is one hold-off H = rtt + PIPELINE_RTT_CYCLES; after an error the sender
    keeps sending while the confirmation waits for the replay (one round trip) and a quiet hold-off, so
    the buffer covers 3 H (plus a margin) to never stall."""
    need = 3 * holdoff_cycles(rtt_cycles) + 16
    n = max(4, (need - 1).bit_length())
    if n > REPLAY_LOG2_MAX:
        raise ValueError(f"a round trip of {rtt_cycles} frame slots needs 2^{n} replay frames; the {SEQ_BITS}-bit "
                         f"frame id allows 2^{REPLAY_LOG2_MAX}, i.e. a round trip of at most {MAX_RTT_CYCLES} frame "
                         f"slots (use a larger frame, see docs/rifl.md 'Link length')")
    return n


# The longest channel round trip (frame slots) the replay window can cover: 3 H + 16 <= 2^REPLAY_LOG2_MAX.
MAX_RTT_CYCLES = ((1 << REPLAY_LOG2_MAX) - 16) // 3 - PIPELINE_RTT_CYCLES
FIBRE_NS_PER_M = 5.0            # propagation delay of a fibre (refractive index ~1.5), for link_rtt_cycles


def link_rtt_cycles(frame_bits, distance_m, rate_gbps):
    """Channel round trip in frame slots of a fibre link of distance_m metres at rate_gbps line rate (one
    F-bit frame a slot): 2 x distance x FIBRE_NS_PER_M / (F / rate), rounded up."""
    check_frame_bits(frame_bits)
    slot_ns = frame_bits / rate_gbps
    return -int(-(2 * distance_m * FIBRE_NS_PER_M) // slot_ns)


def max_link_m(frame_bits, rate_gbps):
    """The longest fibre (metres) a link of frame_bits frames at rate_gbps can span (MAX_RTT_CYCLES)."""
    check_frame_bits(frame_bits)
    return MAX_RTT_CYCLES * (frame_bits / rate_gbps) / (2 * FIBRE_NS_PER_M)


# ---------------------------------------------------------------------------------------------------
# Layer 2
# ---------------------------------------------------------------------------------------------------

SEGMENT_BYTES = 256            # upper-layer data a Layer 2 packet (the last segment padded)
L1_OVERHEAD_BYTES = 2
L2_HEADER_BYTES = 6
MAX_HOPS = 5
HOPS_BITS = 4
DST_PORT_BITS = 8
L2_DST_PORTS = [f"dst_port{k}" for k in range(1, MAX_HOPS + 1)]     # DP1..DP5, L2_HEADER field names
# MSB first: the first header byte holds total_hops | remain_hops
L2_HEADER_LAYOUT = [("total_hops", HOPS_BITS), ("remain_hops", HOPS_BITS)] + [(n, DST_PORT_BITS) for n in L2_DST_PORTS]
L2_HEADER_BITS = sum(b for _, b in L2_HEADER_LAYOUT)
L2_HEADER = Header.from_msb_layout(L2_HEADER_LAYOUT)      # the descriptor: L2_HEADER.field(sig, "remain_hops")
L2_DST_PORT1_BYTE = 2 * HOPS_BITS // 8     # header byte (in sending order) holding Dst Port 1
assert L2_HEADER_BITS == 8 * L2_HEADER_BYTES and L1_OVERHEAD_BYTES + L2_HEADER_BYTES == 8
L2_PACKET_BYTES = L2_HEADER_BYTES + SEGMENT_BYTES  # 262 bytes on the L1 stream, one L1 packet (EOP at the end)
# Upper-layer packet length prefix (big-endian) in the first segment: the true length of the padded last
# segment is recovered from it. Lengths 1..L2_MAX_PACKET_BYTES.
L2_LENGTH_BYTES = 2
L2_MAX_PACKET_BYTES = (1 << (8 * L2_LENGTH_BYTES)) - 1 - L2_LENGTH_BYTES
# Largest upper-layer packet of a RIFL network by default (cores/rifl_net/network.py): sizes the hosts'
# reassembly contexts and the switches' VOQ headroom (cores.rifl_net.line_card.voq_sizing).
L2_NET_MAX_PACKET = 2048



def l2_header_pack(total, remain, ports):
    """Pack a Layer 2 header into a 48-bit integer (first header byte in bits 47..40).
    `ports` lists up to MAX_HOPS Dst Port values (DP1 first); missing ones are 0."""
    ports = list(ports)
    if not 0 <= total <= MAX_HOPS or not 0 <= remain <= total:
        raise ValueError(f"need 0 <= remain ({remain}) <= total ({total}) <= {MAX_HOPS}")
    if len(ports) > MAX_HOPS or any(not 0 <= p < (1 << DST_PORT_BITS) for p in ports):
        raise ValueError(f"at most {MAX_HOPS} Dst Port values of 0..255, got {ports}")
    return L2_HEADER.pack(total_hops=total, remain_hops=remain, **dict(zip(L2_DST_PORTS, ports)))


def l2_header_unpack(header):
    """(total, remain, [DP1..DP5]) from a 48-bit integer or 6 bytes (big-endian)."""
    if isinstance(header, (bytes, bytearray)):
        if len(header) != L2_HEADER_BYTES:
            raise ValueError(f"L2 header is {L2_HEADER_BYTES} bytes, got {len(header)}")
        header = L2_HEADER.from_wire(header)
    f = L2_HEADER.unpack(header)
    return f["total_hops"], f["remain_hops"], [f[name] for name in L2_DST_PORTS]


def l2_header_bytes(header):
    return L2_HEADER.to_bytes(header)


def check_switch_ports(n):
    if not isinstance(n, int) or n < 2 or n > 256 or n & (n - 1):
        raise ValueError(f"switch port count must be a power of two in [2, 256], got {n!r}")


def dst_port(i, j, n):
    """Relative forwarding rule d(i, j) = (i + j) mod n for input port i and Dst Port 1 value j of an
    n-port switch. j mod n == 0 would loop the packet back to its input: see port_loops()."""
    check_switch_ports(n)
    return (i + j) % n


def port_loops(j, n):
    """True if Dst Port value j sends the packet back out of its input port (invalid: drop and count)."""
    check_switch_ports(n)
    return j % n == 0


def _rotate_ports_left(ports, k):
    k %= MAX_HOPS
    return ports[k:] + ports[:k]


def l2_forward(header):
    """The header as it enters the switch fabric: remain -= 1, the five Dst Port fields rotate one byte
    left (DP2..DP5 -> DP1..DP4, DP1 -> DP5). Raises ValueError if remain is already 0."""
    total, remain, ports = l2_header_unpack(header)
    if remain == 0:
        raise ValueError("l2_forward of a header with no remaining hops")
    return l2_header_pack(total, remain - 1, _rotate_ports_left(ports, 1))


def l2_deliver(header):
    """The header as the last switch of its route delivers it: l2_forward once per hop (Total Hops)."""
    total, _, _ = l2_header_unpack(header)
    for _ in range(total):
        header = l2_forward(header)
    return header


def reply_route(header):
    """The header routing a reply back to the source of a received header (remain 0 after `total` hops):
    undo the `total` rotations, take the first `total` ports in reverse order, negate each modulo 256
    (valid for every switch whose port count divides 256), total = remain = total."""
    total, _, ports = l2_header_unpack(header)
    orig = _rotate_ports_left(ports, -total)
    back = [(256 - p) & 0xFF for p in reversed(orig[:total])]
    return l2_header_pack(total, total, back)

# Layer 2 endpoint in gateware (cores/rifl/l2/). The upper-layer stream carries a packet as `data` beats
# of data_width bits (byte k = data[8k+7:8k], sent k-th; every beat full except the last, which holds the
# rest of `length`), with the packet's parameters constant over the packet.
L2_DATA_WIDTHS = (64, 128, 256, 512)       # bits; divides the segment and holds the 6-byte header
L2_LENGTH_OFFSET = L2_HEADER_BYTES         # the length prefix follows the header in a first segment
L2_FIRST_DATA_OFFSET = L2_HEADER_BYTES + L2_LENGTH_BYTES
L2_TX_PARAMS = [
    ("length", 8 * L2_LENGTH_BYTES),       # upper-layer packet bytes, 1..L2_MAX_PACKET_BYTES
    ("route", L2_HEADER_BITS),             # the Layer 2 header to send (l2_header_pack)
]
L2_RX_PARAMS = [
    ("length", 8 * L2_LENGTH_BYTES),
    ("header", L2_HEADER_BITS),            # the header as received (first segment)
    ("reply", L2_HEADER_BITS),             # reply_route(header)
]


def check_l2_data_width(data_width):
    if data_width not in L2_DATA_WIDTHS:
        raise ValueError(f"Layer 2 data width must be one of {L2_DATA_WIDTHS} bits, got {data_width!r}")


def l2_cell_layout(data_width):
    """A Layer 2 packet as a cell (the RIFL switch's ports, L2Framer/L2Deframer): the header beside the
    segment's `data` beats."""
    return [("header", L2_HEADER_BITS), ("data", data_width)]


def l2_data_layout(data_width):
    check_l2_data_width(data_width)
    return [("data", data_width)]


def l2_segments(length):
    """Number of Layer 2 packets for an upper-layer packet of `length` bytes."""
    return -(-(length + L2_LENGTH_BYTES) // SEGMENT_BYTES)


# Per-source reassembly (L2Reassembler): segments of packets from different sources arrive interleaved
# behind a switch; each reassembly context (keyed by the reply route) stores one packet.
L2_RX_CONTEXTS = 4                         # default number of contexts
L2_RX_CONTEXTS_MAX = 32
# Per-context idle timeout: a context assembling a packet (or a skip entry) that gets no segment for more
# than `timeout` cycles is freed. Ages count in ticks of timeout / L2_RX_TIMEOUT_STEPS cycles, so it is
# freed after more than `timeout` and at most (1 + 1 / L2_RX_TIMEOUT_STEPS) x `timeout` idle cycles.
L2_RX_TIMEOUT = 1 << 20                    # default timeout, cycles (6.7 ms at 156.25 MHz)
L2_RX_TIMEOUT_STEPS = 4                    # ticks per timeout (a power of two: the tick is timeout >> 2)
L2_RX_TIMEOUT_BITS = 32                    # width of the timeout (CSR) in cycles

# Bit alignment (cores/rifl/align.py) in front of an endpoint whose line is not frame-aligned: lock after
# this many consecutive intact IDLE/PAUSE/RETRANS/REPLAY frames at one bit offset, unlock after this many
# consecutive bad frames (invalid sync header, or an unnumbered control frame failing its check).
ALIGN_LOCK_FRAMES = 2
ALIGN_UNLOCK_FRAMES = 4

# SERDES adapter (cores/rifl/serdes.py): every frame slot ends with one word of K28.5 commas.
SERDES_COMMA = (5 << 5) | 28           # K28.5 byte value (sent with its K flag)


# ---------------------------------------------------------------------------------------------------
# Counters (cores.lib.counters: `module.counters[name]`, CSR `name`) and SoC-block CSR words
# ---------------------------------------------------------------------------------------------------

# Layer 1 endpoint (cores/rifl/link/): RIFLTransmitter, RIFLReceiver, RIFLReplayControl; RIFLEndpoint has all.
EP_TX_COUNTERS = [
    ("tx_frames", "numbered frames sent (new data and flow control, not replays)"),
    ("tx_replayed", "frames sent again from the replay buffer"),
    ("tx_ctrl", "control frames sent (IDLE, PAUSE, RETRANS)"),
    ("tx_bad", "user beats dropped: nbytes 0 or above the payload size"),
    ("fc_on_sent", "link-level flow-control ON (pause) frames sent"),
    ("fc_off_sent", "link-level flow-control OFF (resume) frames sent"),
    ("fc_voq_sent", "per-VOQ flow-control frames sent (fc_sink: a switch input's VOQ pauses and resumes)"),
]
EP_RX_COUNTERS = [
    ("rx_frames", "numbered frames accepted in order"),
    ("rx_errors", "verification failures on an up link that started a recovery (check, sequence gap)"),
    ("rx_discarded", "frames dropped on an up link while waiting for a replay"),
    ("rx_overflow", "frames refused because the receive buffer was full (replayed later)"),
    ("fc_on_rcvd", "link-level flow-control ON frames received"),
    ("fc_voq_rcvd", "flow-control frames for other channels received (per-VOQ: a switch's pauses)"),
    ("link_downs", "link up -> down transitions"),
]
EP_REPLAY_COUNTERS = [
    ("replays", "replay episodes started on a RETRANS request"),
    ("bad_retrans", "RETRANS requests for a frame outside the replay window (ignored)"),
]
EP_COUNTERS = EP_TX_COUNTERS + EP_RX_COUNTERS + EP_REPLAY_COUNTERS

# Bit aligner (cores/rifl/align.py).
ALIGN_COUNTERS = [
    ("slips", "bit offsets tried and given up while hunting"),
    ("locks", "hunting -> locked transitions"),
    ("unlocks", "locked -> hunting transitions (bad frames in a row)"),
]

# Clock compensation (cores/rifl/elastic.py): two ends on separate oscillators (+-100 ppm each) drift by up
# to 2e-4 frames a frame. The transmitter of an endpoint built with cc_interval sends an IDLE at least every
# CC_INTERVAL_FRAMES slots (even under full load: 0.1 % of the line); the receiving end's elastic buffer
# drops an IDLE when it runs full and repeats one when it runs empty (an IDLE only repeats the sender's
# next frame id, so either is harmless).
CC_INTERVAL_FRAMES = 1024
CC_PPM_MAX = 100                 # each oscillator's tolerance the compensation is sized for
ELASTIC_DEPTH = 16               # frames; compensation at half depth +- ELASTIC_BAND
ELASTIC_BAND = 4
ELASTIC_COUNTERS = [
    ("removed", "IDLE frames dropped because the buffer ran full (the far end's clock is faster)"),
    ("inserted", "IDLE frames repeated because the buffer ran empty (the far end's clock is slower)"),
    ("slips", "frames lost to a full buffer or missing from an empty one (0 while the clocks are in range)"),
]


def idle_tag(frame_bits):
    """(value, width) of the top bits of an IDLE frame on the line: sync, meta and the scrambled control
    code (the frame-synchronous scrambler makes them a constant)."""
    pbits = payload_bits(frame_bits)
    code = CTRL_IDLE ^ (scrambler_mask(pbits) >> (pbits - CTRL_CODE_BITS))
    return (SYNC_CTRL << (META_BITS + CTRL_CODE_BITS)) | code, SYNC_BITS + META_BITS + CTRL_CODE_BITS


# Layer 2 segmenter and reassembler (cores/rifl/l2/).
L2_TX_COUNTERS = [
    ("packets", "upper-layer packets segmented"),
    ("segments", "Layer 2 packets (segments) sent"),
    ("bad_length", "packets dropped: length 0 or above L2_MAX_PACKET_BYTES"),
    ("length_errors", "packets whose `last` disagreed with `length` (zero-padded or truncated to length)"),
]
L2_RX_COUNTERS = [
    ("packets", "upper-layer packets started (first segments given a context)"),
    ("delivered", "upper-layer packets delivered on source"),
    ("segments", "Layer 2 packets (segments) received"),
    ("bad_length", "first segments dropped: length prefix 0 or above L2_MAX_PACKET_BYTES"),
    ("malformed", "Layer 1 packets not L2_PACKET_BYTES long (completed with zeros or truncated)"),
    ("no_context", "first segments dropped: every context busy (their continuation segments are skipped)"),
    ("too_long", "first segments dropped: length above max_packet (their continuation segments are skipped)"),
    ("orphans", "continuation segments dropped: their packet's first segment was dropped"),
    ("untracked", "no_context/too_long drops and timeouts that found every skip entry busy: their "
                  "continuation segments are taken for first segments"),
    ("timeouts", "assembling contexts freed after `timeout` idle cycles, their partial packet discarded "
                 "(its continuation segments are skipped)"),
]

# Network endpoint (cores/rifl/endpoint.py).
FC_GATE_COUNTERS = [("held", "cycles a Layer 2 packet waited for its paused VOQ at the next switch")]

# Simulation channel (cores/rifl/channel.py).
CHANNEL_COUNTERS = [
    ("errors", "frames corrupted by the channel"),
    ("bit_errors", "bits inverted by the channel"),
    ("undetected", "frames corrupted by an error pattern that is a CRC-12 codeword (no check can see it)"),
]
# Error models of the channel (its `mode` input).
CHANNEL_BURST = 0      # one burst of `burst` bits (1..12) per hit frame: CRC-12 always detects it
CHANNEL_RANDOM = 1     # independent bit errors: 0..CHANNEL_RANDOM_MAX_BITS bits per frame, from `thresholds`
CHANNEL_RANDOM_MAX_BITS = 4   # P(5 or more errors in a 2048-bit frame) < 4e-16 at a BER of 1e-6

# SoC block (cores/rifl/soc_block.py): traffic generator and checker, and RIFLLoopback's counters per direction
# (ab: A -> B, ba: B -> A) and per endpoint (a, b).
GEN_COUNTERS = [("sent", "packets sent by the generator")]
CHK_COUNTERS = [
    ("delivered", "packets delivered intact"),
    ("lost", "packets missing (the sequence number jumped forward by that many)"),
    ("duplicated", "packets received again (the previous sequence number)"),
    ("out_of_order", "packets with any other backward sequence jump"),
    ("corrupted", "packets whose content, nbytes or last differ"),
]
CHK_FAULTS = [name for name, _ in CHK_COUNTERS if name != "delivered"]    # zero when every packet arrives once
LOOPBACK_DIRECTIONS = ("ab", "ba")
LOOPBACK_ENDPOINTS = ("a", "b")
LOOPBACK_DIR_COUNTERS = GEN_COUNTERS + CHK_COUNTERS + [("channel_errors", dict(CHANNEL_COUNTERS)["errors"])]
LOOPBACK_EP_COUNTERS = ["tx_frames", "tx_replayed", "rx_frames", "rx_errors", "rx_discarded", "rx_overflow", "replays",
                        "fc_on_sent", "fc_off_sent", "link_downs"]
LOOPBACK_COUNTERS = (
    [(f"{d}_{name}", f"{d}: {desc}") for d in LOOPBACK_DIRECTIONS for name, desc in LOOPBACK_DIR_COUNTERS] +
    [(f"{e}_{name}", f"endpoint {e.upper()}: {dict(EP_COUNTERS)[name]}")
     for e in LOOPBACK_ENDPOINTS for name in LOOPBACK_EP_COUNTERS])

# Captures (sim/verilated/rifl_net.py; software/rifl/scapy_layers.py and dissector.py decode them): pcap link types
# of the user range (DLT_USER0 + k; Wireshark's encapsulations WTAP_ENCAP_USER0 + k).
PCAP_DLT_L1 = 147              # one Layer 1 frame a record, F / 8 bytes as on the line (scrambled, MSB first)
PCAP_DLT_L2 = 148              # one Layer 1 packet a record: a Layer 2 packet (header and segment)
WTAP_ENCAP_USER0, PCAP_DLT_USER0 = 45, 147

# RIFLLoopback's CSR words with fields (the others are plain numbers: err_ab, err_ba, limit, rx_ready, cycles).
LOOPBACK_CONTROL = Header.from_bits({"enable": (0, 1), "down_ab": (1, 1), "down_ba": (2, 1), "burst": (8, 4)})
LOOPBACK_STATUS = Header.from_lsb_layout([("link_up_a", 1), ("link_up_b", 1)])

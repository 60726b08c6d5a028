"""The RIFL NIC's ABI (cores/rifl_nic): its descriptors, the receive completion record, the host memory
layout rules and the counters, used by the RTL, the simulation and the host driver (software/rifl/nic.py).

A host sends a packet by writing it into a buffer of its memory and posting a TX descriptor (address,
length, Layer 2 route); the NIC reads the buffer by DMA. For receiving, the host posts free slots (one
buffer of NIC_SLOT_BYTES each) and gives a completion ring; the NIC writes a packet into the oldest free
slot, then its RX_RECORD into the next ring entry (PCIe posted writes stay in order: once the host sees
the record, the packet is in the slot).
"""
from cores.lib.header import Header
from cores.rifl.common import L2_HEADER_BITS, L2_LENGTH_BYTES, L2_NET_MAX_PACKET

NIC_DMA_BITS = 64                     # the DMA's beat: lengths go to the DMA rounded up to 8 bytes
NIC_DMA_BYTES = NIC_DMA_BITS // 8
NIC_ADDRESS_BITS = 32
NIC_MAX_PACKET = L2_NET_MAX_PACKET    # bytes: a slot holds one packet (the network's reassembly limit)
NIC_SLOT_BYTES = NIC_MAX_PACKET

TX_DESC_LAYOUT = [("address", NIC_ADDRESS_BITS), ("length", 8 * L2_LENGTH_BYTES), ("route", L2_HEADER_BITS)]
RX_SLOT_LAYOUT = [("address", NIC_ADDRESS_BITS)]

# The completion record: 16 bytes, little-endian, written into ring entry (n mod 2^ring_log2) for the n-th
# packet (n from 0). seq = (n + 1) mod 2^16: a host that expects seq k sees a new record when the entry
# holds k (a zeroed ring never does; a ring of at most 2^RX_RING_LOG2_MAX entries never holds a stale k).
RX_RECORD = Header.from_lsb_layout([("length", 16), ("seq", 16), ("header", L2_HEADER_BITS),
                                    ("reply", L2_HEADER_BITS)], length=16)
RX_RECORD_BYTES = RX_RECORD.length
RX_SEQ_MOD = 1 << RX_RECORD.width("seq")
RX_RING_LOG2_MAX = 15

NIC_COUNTERS = [
    ("tx_packets", "packets read from host memory and handed to the Layer 2 segmenter"),
    ("tx_refused", "TX descriptors dropped: length 0 or above NIC_MAX_PACKET (nothing was read)"),
    ("rx_packets", "packets written into host slots, each followed by its completion record"),
    ("rx_wait_slot", "cycles a received packet waited for a free slot (the link's flow control holds "
                     "the senders meanwhile)"),
]


def dma_length(length):
    """Bytes the DMA moves for a packet of `length` bytes."""
    return -(-length // NIC_DMA_BYTES) * NIC_DMA_BYTES

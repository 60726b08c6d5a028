"""Host driver of the RIFL NIC (cores/rifl_nic): packets out by DMA from host buffers, packets in by DMA
into host slots, with a completion ring, polled (a user-space driver, no interrupts).

The driver owns a region of host memory laid out as `tx_buffers` TX buffers, `slots` receive slots (both
NIC_SLOT_BYTES each) and the completion ring. It reaches the card through a `port` object:

    port.write(address, data)         host memory, bytes at a byte address (a multiple of 4)
    port.read(address, n)             n bytes of host memory
    port.post_tx(address, length, route)
    port.post_slot(address)
    port.configure(ring_base, ring_log2)
    port.tx_done()                    the NIC's tx_packets counter

(sim/verilated/rifl_nic.py implements it over the simulated PCIe link: the posts and the counter are MMIO to
the NIC's CSRs on BAR0, as on a board, where the memory is a pinned DMA buffer.)
"""
from collections import deque
from dataclasses import dataclass

from cores.rifl.common import reply_route
from cores.rifl_nic.common import NIC_MAX_PACKET, NIC_SLOT_BYTES, RX_RECORD, RX_RECORD_BYTES, RX_RING_LOG2_MAX, \
    RX_SEQ_MOD


class NicError(ValueError):
    """A request the driver refuses before anything reaches the card."""


@dataclass
class Received:
    payload: bytes
    header: int        # the Layer 2 header as received
    reply: int         # the route back to the sender (reply_route(header), computed by the NIC)


class RiflNic:
    """Parameters: port (see above), base (host byte address of the driver's memory, 4 KiB aligned),
    tx_buffers (packets in flight, at most the NIC's TX queue depth), slots (at most the NIC's slot queue),
    ring_log2 (the ring holds 2^ring_log2 >= slots records)."""
    def __init__(self, port, base=0x100000, tx_buffers=8, slots=32, ring_log2=6):
        if base % 4096:
            raise NicError(f"the driver's memory must be 4 KiB aligned, got {base:#x}")
        if not 0 < slots <= 1 << ring_log2 or ring_log2 > RX_RING_LOG2_MAX:
            raise NicError(f"need 0 < slots ({slots}) <= 2^ring_log2 ({1 << ring_log2}), ring_log2 <= "
                           f"{RX_RING_LOG2_MAX}")
        self.port, self.tx_buffers, self.slots, self.ring_log2 = port, tx_buffers, slots, ring_log2
        self.tx_base = base
        self.slot_base = base + tx_buffers * NIC_SLOT_BYTES
        self.ring_base = self.slot_base + slots * NIC_SLOT_BYTES
        self.posted_tx = 0
        self.tx_done = port.tx_done()        # the NIC's tx_packets as last read
        self.received = 0
        self.posted_slots = deque()
        port.write(self.ring_base, bytes(RX_RECORD_BYTES << ring_log2))
        port.configure(self.ring_base, ring_log2)
        for i in range(slots):
            self._post_slot(self.slot_base + i * NIC_SLOT_BYTES)

    def _post_slot(self, address):
        self.posted_slots.append(address)
        self.port.post_slot(address)

    def tx_free(self):
        """TX buffers free (packets the NIC has read release theirs). The NIC's counter is read (an MMIO read
        on a board: a round trip over PCIe) only when the last value read leaves no buffer free."""
        if self.tx_buffers - (self.posted_tx - self.tx_done) <= 0:
            self.tx_done = self.port.tx_done()
        return self.tx_buffers - (self.posted_tx - self.tx_done)

    def send(self, payload, route):
        """Posts `payload` (1..NIC_MAX_PACKET bytes) to the Layer 2 `route`; False if every TX buffer is in
        flight (call again after the NIC has read one)."""
        if not 1 <= len(payload) <= NIC_MAX_PACKET:
            raise NicError(f"a packet is 1..{NIC_MAX_PACKET} bytes, got {len(payload)}")
        if not 0 <= route < 1 << RX_RECORD.width("header"):
            raise NicError(f"a route is a 48-bit Layer 2 header, got {route:#x}")
        if self.tx_free() <= 0:
            return False
        address = self.tx_base + (self.posted_tx % self.tx_buffers) * NIC_SLOT_BYTES
        self.port.write(address, bytes(payload) + bytes(-len(payload) % 4))
        self.port.post_tx(address, len(payload), route)
        self.posted_tx += 1
        return True

    def poll(self):
        """The packets completed since the last poll, in arrival order; their slots are posted again."""
        out = []
        while True:
            entry = self.ring_base + (self.received % (1 << self.ring_log2)) * RX_RECORD_BYTES
            record = RX_RECORD.unpack(int.from_bytes(self.port.read(entry, RX_RECORD_BYTES), "little"))
            if record["seq"] != (self.received + 1) % RX_SEQ_MOD:
                return out
            slot = self.posted_slots.popleft()
            if record["reply"] != reply_route(record["header"]):
                raise RuntimeError(f"record {self.received}: reply {record['reply']:#x} is not the reply route "
                                   f"of header {record['header']:#x}")
            out.append(Received(self.port.read(slot, record["length"]), record["header"], record["reply"]))
            self.received += 1
            self._post_slot(slot)

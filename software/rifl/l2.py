"""RIFL Layer 2 endpoint model: segmentation of upper-layer packets into 256-byte segments, reassembly,
reply routes. The first segment starts with the packet length (L2_LENGTH_BYTES, big-endian), so the true
length of the padded last segment is known; every L2 packet is L2_PACKET_BYTES on the L1 stream."""
from cores.rifl.common import (L2_HEADER_BYTES, L2_LENGTH_BYTES, L2_MAX_PACKET_BYTES, SEGMENT_BYTES,
                               l2_header_bytes, l2_header_unpack, l2_segments, reply_route)


def segment(packet, header):
    """L2 packets (bytes: header + 256-byte segment) for an upper-layer packet sent with `header` (int)."""
    if not 1 <= len(packet) <= L2_MAX_PACKET_BYTES:
        raise ValueError(f"packet length must be 1..{L2_MAX_PACKET_BYTES}, got {len(packet)}")
    stream = len(packet).to_bytes(L2_LENGTH_BYTES, "big") + bytes(packet)
    stream += bytes(-len(stream) % SEGMENT_BYTES)
    h = l2_header_bytes(header)
    return [h + stream[k:k + SEGMENT_BYTES] for k in range(0, len(stream), SEGMENT_BYTES)]


class Reassembler:
    """Reassembles segments per source (keyed by the reply route, since segments of one source arrive in
    order while sources interleave). feed() returns (reply_header, packet) when a packet completes.

    timeout (None: never): a partial packet whose last segment came more than `timeout` before a feed's
    `now` is discarded (`timeouts`) and its remaining segments are skipped (`orphans`) as long as each
    comes within `timeout` of the previous one, the skipping starting `timeout` after its last segment."""
    def __init__(self, timeout=None):
        self.partial, self.last, self.skip = {}, {}, {}
        self.timeout = timeout
        self.timeouts = self.orphans = 0

    def expire(self, now):
        """Applies the timeout at time `now`."""
        if self.timeout is None:
            return
        for key in [k for k, t in self.last.items() if now - t > self.timeout]:
            buf, t = self.partial.pop(key), self.last.pop(key)
            length = int.from_bytes(buf[:L2_LENGTH_BYTES], "big")
            self.skip[key] = [l2_segments(length) - len(buf) // SEGMENT_BYTES, t + self.timeout]
            self.timeouts += 1
        for key in [k for k, (_, t) in self.skip.items() if now - t > self.timeout]:
            del self.skip[key]

    def feed(self, l2_packet, now=0):
        if len(l2_packet) != L2_HEADER_BYTES + SEGMENT_BYTES:
            raise ValueError(f"L2 packet must be {L2_HEADER_BYTES + SEGMENT_BYTES} bytes, got {len(l2_packet)}")
        header = int.from_bytes(l2_packet[:L2_HEADER_BYTES], "big")
        if l2_header_unpack(header)[1] != 0:
            raise ValueError("L2 packet still has hops to go")
        key = reply_route(header)
        self.expire(now)
        if key in self.skip:
            self.orphans += 1
            entry = self.skip[key]
            entry[0] -= 1
            entry[1] = now
            if entry[0] == 0:
                del self.skip[key]
            return None
        seg = l2_packet[L2_HEADER_BYTES:]
        buf = self.partial.setdefault(key, bytearray())
        buf += seg
        self.last[key] = now
        length = int.from_bytes(buf[:L2_LENGTH_BYTES], "big")
        if len(buf) >= length + L2_LENGTH_BYTES:
            del self.partial[key], self.last[key]
            return key, bytes(buf[L2_LENGTH_BYTES:L2_LENGTH_BYTES + length])
        return None

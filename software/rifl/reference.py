"""RIFL reference model in Python, the independent model the gateware is tested against.

Layer 1 frames (bit-exact with cores/rifl/link/): `encode_data`, `encode_ctrl`, `decode`, `data_bytes`.
Layer 2 endpoint (bit-exact with cores/rifl/l2/): `segment` cuts an upper-layer packet into 256-byte
segments, `Reassembler` puts them together per source, keyed by reply route. The first segment starts with
the packet length (L2_LENGTH_BYTES, big-endian), so the true length of the padded last segment is known;
every L2 packet is L2_PACKET_BYTES on the L1 stream.
Residual errors: `undetected_patterns` counts the error patterns CRC-12 cannot see, `residual_frame_rate`
gives the undetected-frame probability at a bit error rate.
"""
import math

import numpy as np

from cores.rifl.common import (CHECK_BITS, CRC12_POLY, CTRL_HEADER, L2_HEADER, L2_HEADER_BYTES, L2_LENGTH_BYTES,
                               L2_MAX_PACKET_BYTES, META_ALL_VALID, META_EOP, SEGMENT_BYTES, SYNC_CTRL, SYNC_DATA,
                               crc12, l2_header_bytes, l2_header_unpack, l2_segments, payload_bits, payload_bytes,
                               reply_route, scrambler_mask)


# Layer 1 frames -----------------------------------------------------------------------------------------

def encode_data(frame_bits, data, last, frame_id):
    """Data frame carrying `data` (1..P bytes, sent first to last) with EOP = last."""
    P = payload_bytes(frame_bits)
    if not 1 <= len(data) <= P:
        raise ValueError(f"a frame carries 1..{P} bytes, got {len(data)}")
    body = bytearray(data) + bytes(P - len(data))
    if len(data) < P:
        body[P - 1] = len(data)
    meta = (META_EOP if last else 0) | (META_ALL_VALID if len(data) == P else 0)
    return _frame(frame_bits, SYNC_DATA, meta, int.from_bytes(body, "big"), frame_id)


def encode_ctrl(frame_bits, frame_id=0, **fields):
    """Control frame with CTRL_HEADER fields (code, seq, ...); frame_id is 0 except for FC frames."""
    payload = CTRL_HEADER.pack(**fields) << (payload_bits(frame_bits) - CTRL_HEADER.bits)
    return _frame(frame_bits, SYNC_CTRL, 0, payload, frame_id)


def _frame(frame_bits, sync, meta, payload, frame_id):
    pbits = payload_bits(frame_bits)
    body = (sync << (pbits + 2)) | (meta << pbits) | payload
    check = crc12(body, frame_bits - CHECK_BITS) ^ frame_id
    return ((body ^ scrambler_mask(pbits)) << CHECK_BITS) | check


def decode(frame_bits, frame):
    """(sync, meta, payload, syndrome): syndrome = CRC XOR check = the frame id if the frame is intact."""
    pbits = payload_bits(frame_bits)
    body = (frame >> CHECK_BITS) ^ scrambler_mask(pbits)
    syndrome = crc12(body, frame_bits - CHECK_BITS) ^ (frame & 0xFFF)
    return body >> (pbits + 2), (body >> pbits) & 3, body & ((1 << pbits) - 1), syndrome


def data_bytes(frame_bits, meta, payload):
    """The valid bytes of a data frame's payload."""
    P = payload_bytes(frame_bits)
    raw = payload.to_bytes(P, "big")
    return raw if meta & META_ALL_VALID else raw[:raw[P - 1]]


# Layer 2 endpoint ---------------------------------------------------------------------------------------

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
        header = L2_HEADER.from_wire(l2_packet)
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


# Residual error rate of the CRC-12 check -------------------------------------------------------------------

def _bit_syndromes(frame_bits):
    """Syndrome of a single-bit error at each frame bit (bit 0 sent last): x^i mod the generator, by long
    division (independent of the RTL's CRC matrix). The check is linear, so a pattern's syndrome is the XOR
    of its bits' and it passes undetected when that is 0; the scrambler is additive and adds none."""
    gen = (1 << CHECK_BITS) | CRC12_POLY
    out, r = [], 1
    for _ in range(frame_bits):
        out.append(r)
        r <<= 1
        if r >> CHECK_BITS:
            r ^= gen
    return np.array(out, dtype=np.int64)


def undetected_patterns(frame_bits, weight):
    """The number of error patterns of `weight` bits (1..4) in an F-bit frame that CRC-12 cannot see."""
    s = _bit_syndromes(frame_bits)
    if weight in (1, 3):                   # the generator has the factor x + 1: odd weights are always seen
        return int(np.count_nonzero(s == 0)) if weight == 1 else 0
    i, j = np.triu_indices(frame_bits, 1)
    pairs = np.bincount(s[i] ^ s[j], minlength=1 << CHECK_BITS)
    if weight == 2:
        return int(pairs[0])
    if weight == 4:                        # two disjoint pairs with one syndrome; each 4-set has 3 pairings
        return int((pairs * (pairs - 1) // 2).sum() // 3)
    raise ValueError("weights 1..4 only")


def residual_frame_rate(ber, frame_bits, max_weight=4):
    """Probability that a frame carries an error CRC-12 cannot see, for independent bit errors at `ber`,
    over error weights up to max_weight (heavier errors: below P(K > max_weight) / 2^11)."""
    total = 0.0
    for w in range(1, max_weight + 1):
        p_w = math.comb(frame_bits, w) * ber ** w * (1 - ber) ** (frame_bits - w)
        total += p_w * undetected_patterns(frame_bits, w) / math.comb(frame_bits, w)
    return total

"""Reference RIFL Layer 1 frame encoder/decoder (Python, bit-exact with cores/rifl/link.py)."""
from cores.rifl.common import (CHECK_BITS, CTRL_LAYOUT, META_ALL_VALID, META_EOP, SYNC_CTRL, SYNC_DATA, crc12,
                               payload_bits, payload_bytes, scrambler_mask)


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
    """Control frame with CTRL_LAYOUT fields (code, seq, ...); frame_id is 0 except for FC frames."""
    pbits = payload_bits(frame_bits)
    payload, pos = 0, pbits
    for name, bits in CTRL_LAYOUT:
        pos -= bits
        payload |= (fields.get(name, 0) & ((1 << bits) - 1)) << pos
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

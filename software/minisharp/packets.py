"""MiniSharp v0.1 frames as bytes: builders and a parser, all from cores.minisharp.common."""
import struct

from cores.minisharp import common as ms


def mac_bytes(mac):
    """'02:00:00:00:00:01' / int / bytes -> 6 bytes."""
    if isinstance(mac, (bytes, bytearray)):
        return bytes(mac)
    if isinstance(mac, int):
        return mac.to_bytes(6, "big")
    return bytes(int(x, 16) for x in mac.split(":"))


def _put(buf, fields, **values):
    for name, off, n in fields:
        if name in values:
            buf[off:off + n] = values[name].to_bytes(n, "big")


def frame(dst, src, opcode, op_header=bytes(8), payload=b"", major=ms.VERSION_MAJOR, minor=ms.VERSION_MINOR,
          ethertype=ms.ETHERTYPE, pad=True):
    """A MiniSharp Ethernet frame (no FCS); padded to the 60-byte minimum unless pad=False."""
    f = (mac_bytes(dst) + mac_bytes(src) + ethertype.to_bytes(2, "big") +
         bytes([(major << 4) | minor, opcode]) + bytes(op_header) + bytes(payload))
    if pad and len(f) < ms.ETH_MIN_FRAME:
        f += bytes(ms.ETH_MIN_FRAME - len(f))
    return f


def setup_record(element_count, expected_local, egress_first=0, egress_last=0, collective=ms.MS_COL_REDUCE,
                 reduce_op=ms.MS_RED_SUM, input_fmt=ms.MS_FMT_FP32, acc_mode=ms.MS_ACC_EXACT_FP32_MAG277,
                 output_fmt=ms.MS_FMT_FP32, reserved0=0, reserved1=0):
    rec = bytearray(ms.SETUP_RECORD_BYTES)
    _put(rec, ms.SETUP_RECORD_FIELDS, collective=collective, reduce_op=reduce_op, input_fmt=input_fmt,
         acc_mode=acc_mode, output_fmt=output_fmt, egress_first=egress_first, egress_last=egress_last,
         reserved0=reserved0, expected_local=expected_local, element_count=element_count, reserved1=reserved1)
    return bytes(rec)


def _op_header(fields, **values):
    buf = bytearray(ms.MS_HEADER_BYTES)
    _put(buf, fields, **values)
    return bytes(buf[ms.OP_OFFSET:])


def setup_frame(dst, src, collective_id, record, reserved=0, **kw):
    return frame(dst, src, ms.MS_OP_COL_SETUP,
                 _op_header(ms.SETUP_OP_FIELDS, collective_id=collective_id, reserved=reserved), record, **kw)


def fp32_payload(values):
    """FP32 bit patterns (ints) -> big-endian payload bytes."""
    return b"".join(struct.pack(">I", v & 0xFFFFFFFF) for v in values)


def data_frame(dst, src, collective_id, rank, chunk_index, values, reserved=0, **kw):
    return frame(dst, src, ms.MS_OP_COL_DATA,
                 _op_header(ms.DATA_OP_FIELDS, rank=rank, collective_id=collective_id, chunk_index=chunk_index,
                            reserved=reserved), fp32_payload(values), **kw)


def res_frame(dst, src, collective_id, chunk_index, values, **kw):
    return frame(dst, src, ms.MS_OP_COL_RES,
                 _op_header(ms.RES_OP_FIELDS, collective_id=collective_id, chunk_index=chunk_index),
                 fp32_payload(values), **kw)


def chunk_frames(dst, src, collective_id, rank, values, chunk_elements=ms.MS_CHUNK_ELEMENTS):
    """One COL_DATA frame per chunk of `values`, in chunk order: [(chunk_index, frame), ...]."""
    return [(c, data_frame(dst, src, collective_id, rank, c,
                           values[c * chunk_elements:(c + 1) * chunk_elements]))
            for c in range(ms.num_chunks(len(values), chunk_elements))]


def _get(f, fields):
    return {name: int.from_bytes(f[off:off + n], "big") for name, off, n in fields}


def parse(f, element_count=None, chunk_elements=ms.MS_CHUNK_ELEMENTS):
    """Decode a frame into a dict: Ethernet fields, version, opcode, op-header fields, and for COL_RES /
    COL_DATA the FP32 values (as many as the context implies when element_count is given, else all whole
    elements of the payload) or for COL_SETUP the record fields."""
    f = bytes(f)
    out = _get(f, ms.ETH_FIELDS)
    if out["ethertype"] != ms.ETHERTYPE or len(f) < ms.MS_HEADER_BYTES:
        return out
    out["major"], out["minor"], out["opcode"] = f[14] >> 4, f[14] & 0xF, f[15]
    payload = f[ms.MS_HEADER_BYTES:]
    if out["opcode"] == ms.MS_OP_COL_SETUP:
        out.update(_get(f, ms.SETUP_OP_FIELDS))
        out["record"] = _get(payload, ms.SETUP_RECORD_FIELDS)
    elif out["opcode"] in (ms.MS_OP_COL_DATA, ms.MS_OP_COL_RES):
        out.update(_get(f, ms.DATA_OP_FIELDS if out["opcode"] == ms.MS_OP_COL_DATA else ms.RES_OP_FIELDS))
        n = len(payload) // 4
        if element_count is not None:
            n = ms.chunk_length(element_count, out["chunk_index"], chunk_elements)
        out["values"] = list(struct.unpack(f">{n}I", payload[:4 * n]))
    return out

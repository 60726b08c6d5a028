"""MiniSharp v0.1 / v0.2 frames as bytes: builders and a parser, all from the headers of cores.minisharp.common."""
import struct

from cores.minisharp import common as ms


def mac_int(mac):
    """'02:00:00:00:00:01' / int / bytes -> the 48-bit address as an integer."""
    if isinstance(mac, int):
        return mac
    if isinstance(mac, (bytes, bytearray)):
        return int.from_bytes(mac, "big")
    return int(mac.replace(":", ""), 16)


def byte_fields(header, first=0):
    """(name, byte offset, bytes) of the fields of a byte-oriented Header starting at byte `first` or later,
    in wire order (for the Scapy layers and the dissector)."""
    fields = [(n, f.byte, f.width // 8) for n, f in header.fields.items() if f.byte >= first]
    return sorted(fields, key=lambda f: f[1])


def _bytes(header, **fields):
    return header.to_bytes(header.pack(**fields))


def frame(dst, src, opcode, payload=b"", major=ms.VERSION_MAJOR, minor=ms.VERSION_MINOR, ethertype=ms.ETHERTYPE,
          pad=True, **op_fields):
    """A MiniSharp Ethernet frame (no FCS): the header of `opcode` (its operation-header fields from
    `op_fields`, 0 when missing; all zero for an unknown opcode), then `payload`; padded to the 60-byte
    minimum unless pad=False."""
    header = ms.OP_HEADERS.get(opcode, ms.MS_HEADER)
    f = _bytes(header, dst_mac=mac_int(dst), src_mac=mac_int(src), ethertype=ethertype,
               version=ms.version_byte(major, minor), opcode=opcode, **op_fields) + bytes(payload)
    if pad and len(f) < ms.ETH_MIN_FRAME:
        f += bytes(ms.ETH_MIN_FRAME - len(f))
    return f


def setup_record(element_count, expected_local, egress_first=0, egress_last=0, collective=ms.MS_COL_REDUCE,
                 reduce_op=ms.MS_RED_SUM, input_fmt=ms.MS_FMT_FP32, acc_mode=ms.MS_ACC_EXACT_FP32_MAG277,
                 output_fmt=ms.MS_FMT_FP32, reserved0=0, reserved1=0):
    return _bytes(ms.SETUP_RECORD, collective=collective, reduce_op=reduce_op, input_fmt=input_fmt,
                  acc_mode=acc_mode, output_fmt=output_fmt, egress_first=egress_first, egress_last=egress_last,
                  reserved0=reserved0, expected_local=expected_local, element_count=element_count,
                  reserved1=reserved1)


def setup_record_v02(element_count, expected_local, egress_first=0, egress_last=0, role=ms.MS_ROLE_ROOT,
                     uplink_port=0, parent_rank=0, parent_mac=0, collective=ms.MS_COL_REDUCE,
                     input_fmt=ms.MS_FMT_FP32, output_fmt=ms.MS_FMT_FP32, reserved2=0, reserved3=0, **v01):
    """The 32-byte v0.2 record (send it in a minor-2 COL_SETUP: setup_frame(..., minor=2))."""
    fields = dict(collective=collective, reduce_op=ms.MS_RED_SUM, input_fmt=input_fmt,
                  acc_mode=ms.MS_ACC_EXACT_FP32_MAG277, output_fmt=output_fmt, egress_first=egress_first,
                  egress_last=egress_last, reserved0=0, expected_local=expected_local, element_count=element_count,
                  reserved1=0, role=role, uplink_port=uplink_port, parent_rank=parent_rank,
                  parent_mac=mac_int(parent_mac), reserved2=reserved2, reserved3=reserved3)
    fields.update(v01)
    return _bytes(ms.SETUP_RECORD_V02, **fields)


def setup_frame(dst, src, collective_id, record, reserved=0, **kw):
    """COL_SETUP; a 32-byte (v0.2) record goes in a minor-2 frame unless `minor` says otherwise."""
    if len(record) == ms.SETUP_RECORD_V02_BYTES:
        kw.setdefault("minor", ms.VERSION_MINOR_V02)
    return frame(dst, src, ms.MS_OP_COL_SETUP, record, collective_id=collective_id, reserved=reserved, **kw)


def teardown_frame(dst, src, collective_id, reserved=0, **kw):
    """v0.2 COL_TEARDOWN: removes the context of `collective_id` (no record; padded to the minimum)."""
    return frame(dst, src, ms.MS_OP_COL_TEARDOWN, collective_id=collective_id, reserved=reserved,
                 minor=kw.pop("minor", ms.VERSION_MINOR_V02), **kw)


def fp32_payload(values):
    """FP32 bit patterns (ints) -> big-endian payload bytes."""
    return b"".join(struct.pack(">I", v & 0xFFFFFFFF) for v in values)


def data_frame(dst, src, collective_id, rank, chunk_index, values, reserved=0, **kw):
    return frame(dst, src, ms.MS_OP_COL_DATA, fp32_payload(values), rank=rank, collective_id=collective_id,
                 chunk_index=chunk_index, reserved=reserved, **kw)


def pdata_frame(dst, src, collective_id, rank, chunk_index, elements, reserved=0, **kw):
    """COL_PDATA: `elements` are 40-byte exact partial elements (reference.encode_partial)."""
    return frame(dst, src, ms.MS_OP_COL_PDATA, b"".join(elements), rank=rank, collective_id=collective_id,
                 chunk_index=chunk_index, reserved=reserved, minor=kw.pop("minor", ms.VERSION_MINOR_V02), **kw)


def res_frame(dst, src, collective_id, chunk_index, values, **kw):
    return frame(dst, src, ms.MS_OP_COL_RES, fp32_payload(values), collective_id=collective_id,
                 chunk_index=chunk_index, **kw)


def chunk_frames(dst, src, collective_id, rank, values, chunk_elements=ms.MS_CHUNK_ELEMENTS):
    """One COL_DATA frame per chunk of `values`, in chunk order: [(chunk_index, frame), ...]."""
    return [(c, data_frame(dst, src, collective_id, rank, c,
                           values[c * chunk_elements:(c + 1) * chunk_elements]))
            for c in range(ms.num_chunks(len(values), chunk_elements))]


def _get(header, data):
    return header.unpack(header.from_wire(data))


def parse(f, element_count=None, chunk_elements=ms.MS_CHUNK_ELEMENTS):
    """Decode a frame into a dict: Ethernet fields, version (major, minor), opcode, op-header fields, and
    for COL_RES / COL_DATA the FP32 values (as many as the context implies when element_count is given, else
    all whole elements of the payload) or for COL_SETUP the record fields."""
    f = bytes(f)
    out = _get(ms.ETH_HEADER, f)
    if out["ethertype"] != ms.ETHERTYPE or len(f) < ms.MS_HEADER_BYTES:
        return out
    out.update(_get(ms.OP_HEADERS.get(f[ms.MS_HEADER.fields["opcode"].byte], ms.MS_HEADER), f))
    out["major"], out["minor"] = ms.split_version(out["version"])
    payload = f[ms.MS_HEADER_BYTES:]
    if out["opcode"] == ms.MS_OP_COL_SETUP:
        out["record"] = _get(ms.setup_record(out["minor"]), payload)
    elif out["opcode"] == ms.MS_OP_COL_PDATA:
        n = len(payload) // ms.PARTIAL_ELEMENT_BYTES
        if element_count is not None:
            n = ms.chunk_length(element_count, out["chunk_index"], chunk_elements)
        out["elements"] = [payload[ms.PARTIAL_ELEMENT_BYTES * i:ms.PARTIAL_ELEMENT_BYTES * (i + 1)] for i in range(n)]
    elif out["opcode"] in (ms.MS_OP_COL_DATA, ms.MS_OP_COL_RES):
        n = len(payload) // 4
        if element_count is not None:
            n = ms.chunk_length(element_count, out["chunk_index"], chunk_elements)
        out["values"] = list(struct.unpack(f">{n}I", payload[:4 * n]))
    return out

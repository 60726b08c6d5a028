"""Scapy layers for MiniSharp v0.1 (and the v0.2 opcodes: COL_TEARDOWN, COL_PDATA with its 40-byte elements
as the raw payload; a v0.2 record's tree fields follow the v0.1 record as raw bytes), bound to Ether type
0x88B5; every field from cores.minisharp.common."""
from scapy.fields import BitField, ByteEnumField, FieldListField, XIntField
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

from cores.minisharp import common as ms
from software.minisharp.packets import byte_fields


def _fields(header, first):
    """Scapy fields for the fields of a Header from byte `first` on."""
    return [BitField(name, 0, 8 * n) for name, _, n in byte_fields(header, first)]


class MiniSharp(Packet):
    name = "MiniSharp"
    fields_desc = [
        BitField("major", ms.VERSION_MAJOR, 4),
        BitField("minor", ms.VERSION_MINOR, 4),
        ByteEnumField("opcode", ms.MS_OP_COL_DATA, {ms.MS_OP_INVALID: "INVALID", **ms.OPCODES}),
    ]


class MSSetup(Packet):
    name = "MiniSharp COL_SETUP"
    fields_desc = _fields(ms.SETUP_HEADER, ms.OP_OFFSET) + [
        ByteEnumField("collective", ms.MS_COL_REDUCE, ms.COLLECTIVES),
        ByteEnumField("reduce_op", ms.MS_RED_SUM, ms.REDUCE_OPS),
        ByteEnumField("input_fmt", ms.MS_FMT_FP32, ms.FORMATS),
        ByteEnumField("acc_mode", ms.MS_ACC_EXACT_FP32_MAG277, ms.ACC_MODES),
        ByteEnumField("output_fmt", ms.MS_FMT_FP32, ms.FORMATS),
    ] + _fields(ms.SETUP_RECORD, ms.SETUP_RECORD.fields["egress_first"].byte)


class _ChunkPayload(Packet):
    fields_desc = [FieldListField("values", [], XIntField("", 0))]


class MSData(Packet):
    name = "MiniSharp COL_DATA"
    fields_desc = _fields(ms.DATA_HEADER, ms.OP_OFFSET) + _ChunkPayload.fields_desc


class MSRes(Packet):
    name = "MiniSharp COL_RES"
    fields_desc = _fields(ms.RES_HEADER, ms.OP_OFFSET) + _ChunkPayload.fields_desc


class MSTeardown(Packet):
    name = "MiniSharp COL_TEARDOWN"
    fields_desc = _fields(ms.OP_HEADERS[ms.MS_OP_COL_TEARDOWN], ms.OP_OFFSET)


class MSPData(Packet):
    name = "MiniSharp COL_PDATA"
    fields_desc = _fields(ms.OP_HEADERS[ms.MS_OP_COL_PDATA], ms.OP_OFFSET)


bind_layers(Ether, MiniSharp, type=ms.ETHERTYPE)
bind_layers(MiniSharp, MSTeardown, opcode=ms.MS_OP_COL_TEARDOWN)
bind_layers(MiniSharp, MSPData, opcode=ms.MS_OP_COL_PDATA)
bind_layers(MiniSharp, MSSetup, opcode=ms.MS_OP_COL_SETUP)
bind_layers(MiniSharp, MSData, opcode=ms.MS_OP_COL_DATA)
bind_layers(MiniSharp, MSRes, opcode=ms.MS_OP_COL_RES)

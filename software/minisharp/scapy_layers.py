"""Scapy layers for MiniSharp v0.1 and v0.2, bound to Ether type 0x88B5; every field from cores.minisharp.common.

v0.2: COL_TEARDOWN; COL_PDATA with its 40-byte exact partial elements (`MSPartial`: flags and the signed
312-bit N; `.exact()` gives reference.decode_partial's (N, flags)); a minor-2 COL_SETUP's record with its tree
fields (role, uplink port, parent rank, parent MAC). COL_RES of an EXACT context carries partial elements too:
`MSRes.partials()` reads its payload as such.
"""
from scapy.fields import (BitField, ByteEnumField, ConditionalField, FieldListField, FlagsField, MACField,
                          PacketListField, XIntField)
from scapy.layers.l2 import Ether
from scapy.packet import Packet, bind_layers

from cores.minisharp import common as ms
from software.minisharp.packets import byte_fields

ENUMS = {"collective": ms.COLLECTIVES, "reduce_op": ms.REDUCE_OPS, "input_fmt": ms.FORMATS,
         "acc_mode": ms.ACC_MODES, "output_fmt": ms.FORMATS, "role": ms.ROLES}


def _fields(header, first=0, upto=None):
    """Scapy fields for the byte fields of a Header from byte `first` on (before byte `upto`)."""
    out = []
    for name, off, n in byte_fields(header, first):
        if upto is not None and off >= upto:
            continue
        if name in ENUMS:
            out.append(ByteEnumField(name, 0, ENUMS[name]))
        elif name.endswith("_mac"):
            out.append(MACField(name, "00:00:00:00:00:00"))
        else:
            out.append(BitField(name, 0, 8 * n))
    return out


class MiniSharp(Packet):
    name = "MiniSharp"
    fields_desc = [
        BitField("major", ms.VERSION_MAJOR, 4),
        BitField("minor", ms.VERSION_MINOR, 4),
        ByteEnumField("opcode", ms.MS_OP_COL_DATA, {ms.MS_OP_INVALID: "INVALID", **ms.OPCODES}),
    ]


def _v02(pkt):
    return pkt.underlayer is not None and pkt.underlayer.minor >= ms.VERSION_MINOR_V02


class MSSetup(Packet):
    name = "MiniSharp COL_SETUP"
    fields_desc = (_fields(ms.SETUP_HEADER, ms.OP_OFFSET) + _fields(ms.SETUP_RECORD) +
                   [ConditionalField(f, _v02) for f in _fields(ms.SETUP_RECORD_V02, ms.SETUP_RECORD_BYTES)])


class _Signed(BitField):
    """A two's-complement BitField."""
    def m2i(self, pkt, x):
        return x - (1 << self.size) if x >> (self.size - 1) else x

    def i2m(self, pkt, x):
        return (x or 0) & ((1 << self.size) - 1)


class MSPartial(Packet):
    """One exact partial element (MS_FMT_EXACT): the flags byte and the 312-bit N; the value N * 2^-149."""
    name = "MiniSharp partial"
    fields_desc = [FlagsField("flags", 0, 8, ms.ACC_FLAGS + ["r4", "r5", "r6", "r7"]),
                   _Signed("n", 0, ms.PARTIAL_VALUE_BITS)]

    def exact(self):
        from software.minisharp.reference import decode_partial
        return decode_partial(bytes(self))

    def extract_padding(self, s):
        return b"", s


class _Elements(Packet):
    """A payload of whole partial elements (Ethernet padding after them is left as padding)."""
    def pre_dissect(self, s):
        header = ms.MS_HEADER_BYTES - ms.OP_OFFSET        # the operation header
        self._elements = (len(s) - header) // ms.PARTIAL_ELEMENT_BYTES * ms.PARTIAL_ELEMENT_BYTES
        return s


class MSPData(_Elements):
    name = "MiniSharp COL_PDATA"
    fields_desc = _fields(ms.OP_HEADERS[ms.MS_OP_COL_PDATA], ms.OP_OFFSET) + [
        PacketListField("elements", [], MSPartial, length_from=lambda pkt: pkt._elements)]


class _ChunkPayload(Packet):
    fields_desc = [FieldListField("values", [], XIntField("", 0))]


class MSData(Packet):
    name = "MiniSharp COL_DATA"
    fields_desc = _fields(ms.DATA_HEADER, ms.OP_OFFSET) + _ChunkPayload.fields_desc


class MSRes(Packet):
    name = "MiniSharp COL_RES"
    fields_desc = _fields(ms.RES_HEADER, ms.OP_OFFSET) + _ChunkPayload.fields_desc

    def partials(self):
        """The payload as exact partial elements (a COL_RES of an EXACT-output context)."""
        raw = b"".join(v.to_bytes(4, "big") for v in self.values)
        n = len(raw) // ms.PARTIAL_ELEMENT_BYTES * ms.PARTIAL_ELEMENT_BYTES
        return [MSPartial(raw[i:i + ms.PARTIAL_ELEMENT_BYTES]) for i in range(0, n, ms.PARTIAL_ELEMENT_BYTES)]


class MSTeardown(Packet):
    name = "MiniSharp COL_TEARDOWN"
    fields_desc = _fields(ms.OP_HEADERS[ms.MS_OP_COL_TEARDOWN], ms.OP_OFFSET)


bind_layers(Ether, MiniSharp, type=ms.ETHERTYPE)
bind_layers(MiniSharp, MSTeardown, opcode=ms.MS_OP_COL_TEARDOWN)
bind_layers(MiniSharp, MSPData, opcode=ms.MS_OP_COL_PDATA)
bind_layers(MiniSharp, MSSetup, opcode=ms.MS_OP_COL_SETUP)
bind_layers(MiniSharp, MSData, opcode=ms.MS_OP_COL_DATA)
bind_layers(MiniSharp, MSRes, opcode=ms.MS_OP_COL_RES)

"""Scapy layers for RIFL captures (sim.verilated.rifl_net: pcap link types PCAP_DLT_L1 / PCAP_DLT_L2), every field
from cores.rifl.common.

RIFLL1: one Layer 1 frame as on the line; dissecting it descrambles the payload and computes the syndrome
(CRC XOR check: the frame id of an intact numbered frame, 0 for an intact unnumbered one) with the
reference model (software.rifl.reference.decode), so its fields are the decoded view: sync, meta, syndrome,
then the payload (RIFLCtrl for control frames, raw bytes for data). RIFLL2: one Layer 2 packet, the header
fields then the segment; `reply()` is the reply route of its header.
"""
from scapy.config import conf
from scapy.fields import BitEnumField, BitField, StrField, XShortField
from scapy.packet import Packet, bind_layers

from cores.rifl import common as c
from software.rifl.reference import decode

SYNC_NAMES = {c.SYNC_DATA: "data", c.SYNC_CTRL: "control"}
CTRL_CODES = {c.CTRL_IDLE: "IDLE", c.CTRL_PAUSE: "PAUSE", c.CTRL_RETRANS: "RETRANS", c.CTRL_FC: "FC",
              c.CTRL_REPLAY: "REPLAY"}


class RIFLL1(Packet):
    name = "RIFL L1 frame"
    fields_desc = [
        BitEnumField("sync", 0, c.SYNC_BITS, SYNC_NAMES),
        BitField("eop", 0, 1),
        BitField("all_valid", 0, 1),
        BitField("reserved", 0, 4),
        XShortField("syndrome", 0),
    ]

    def pre_dissect(self, s):
        F = 8 * len(s)
        sync, meta, payload, syndrome = decode(F, int.from_bytes(s, "big"))
        return bytes([(sync << 6) | (meta << 4)]) + syndrome.to_bytes(2, "big") + \
            payload.to_bytes(c.payload_bytes(F), "big")


class RIFLCtrl(Packet):
    name = "RIFL control"
    fields_desc = [BitEnumField("code", 0, c.CTRL_CODE_BITS, CTRL_CODES) if n == "code" else BitField(n, 0, b)
                   for n, b in c.CTRL_LAYOUT] + [BitField("pad", 0, c.CTRL_HEADER.bits - c.CTRL_PAYLOAD_BITS)]


class RIFLL2(Packet):
    name = "RIFL L2 packet"
    fields_desc = [BitField(n, 0, b) for n, b in c.L2_HEADER_LAYOUT] + [StrField("segment", b"")]

    def header(self):
        return c.L2_HEADER.pack(**{n: getattr(self, n) for n, _ in c.L2_HEADER_LAYOUT})

    def reply(self):
        return c.reply_route(self.header())


bind_layers(RIFLL1, RIFLCtrl, sync=c.SYNC_CTRL)
conf.l2types.register(c.PCAP_DLT_L1, RIFLL1)
conf.l2types.register(c.PCAP_DLT_L2, RIFLL2)

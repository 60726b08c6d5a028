"""RIFL Layer 2 endpoint in gateware: segmentation of upper-layer packets into Layer 2 packets (header +
256-byte segment, one Layer 1 packet each) and reassembly, bit-exact with software/rifl/reference.py.

Modules: `pack` (byte helpers, BytePacker, FramePacker, L2Framer, L2Deframer), `parser` (L2UnitParser, shared by
the deframer and the reassembler), `tx` (L2Segmenter), `rx` (L2Reassembler), `context_table` (L2ContextTable)
and `packet_store` (L2PacketStore). The names below are re-exported for `from cores.rifl.l2 import ...`.
"""
from cores.rifl.l2.context_table import L2ContextTable, key_form
from cores.rifl.l2.pack import BytePacker, FramePacker, L2Deframer, L2Framer, beat_figures, byte_enables, byte_mask
from cores.rifl.l2.packet_store import L2PacketStore, read_plan
from cores.rifl.l2.parser import L2UnitParser, reply_route_statements
from cores.rifl.l2.rx import L2Reassembler
from cores.rifl.l2.tx import L2Segmenter

__all__ = ["BytePacker", "FramePacker", "L2ContextTable", "L2Deframer", "L2Framer", "L2PacketStore", "L2Reassembler",
           "L2Segmenter", "L2UnitParser", "beat_figures", "byte_enables", "byte_mask", "key_form", "read_plan",
           "reply_route_statements"]

"""Gateware arithmetic shared by the Sparsr parser, executor and DRAM XMEM (combinational, no registers)."""
from migen import Cat, C

from cores.sparsr.common import LIL_ENTRY_BYTES


def wide(value, extra):
    """`value` zero-extended by `extra` bits. Verilog evaluates an expression at the width of its widest
    operand or target (Migen's simulator at unbounded width), so a sum or shift that can outgrow both must
    widen an operand; otherwise it wraps in the gateware only."""
    return Cat(value, C(0, extra))


def lil_entry_bytes(count):
    """count * LIL_ENTRY_BYTES, the bytes of `count` LIL entries, as shifts and adds (no multiplier on the
    path), exact at any target width."""
    assert LIL_ENTRY_BYTES == 5
    count_w = wide(count, 3)
    return (count_w << 2) + count_w


def lil_payload_words(count):
    """Payload words of `count` LIL entries: ceil(5 count / 4) (`common.lil_words` in gateware)."""
    return (lil_entry_bytes(count) + 3) >> 2


"""RIFL Layer 1 CRC-12: the CRC's input matrix and its XOR trees (whole, or split in parts for a pipelined
check), shared by the transmitter, the receiver, the aligner and the channel models."""
from cores.rifl.common import CHECK_BITS, CRC12_POLY


def crc12_matrix(nbits):
    """For each CRC bit, the input bit positions (bit 0 = last bit sent) that XOR into it."""
    cols, r = [], CRC12_POLY                   # r_i = x^(i+12) mod P: CRC of the unit vector at bit i
    for _ in range(nbits):
        cols.append(r)
        r = ((r << 1) ^ (CRC12_POLY if r & 0x800 else 0)) & 0xFFF
    return [[i for i in range(nbits) if (cols[i] >> b) & 1] for b in range(CHECK_BITS)]


def xor_tree(terms):
    """Balanced XOR of a list of expressions."""
    while len(terms) > 1:
        terms = [terms[i] ^ terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def crc12_bits(body):
    """CRC-12 of a Migen signal, MSB first: one XOR tree a bit (bit 0 first). Used in synchronous
    statements, one statement a bit, so the Migen simulator evaluates each tree once a cycle and the
    Verilog stays within tool line limits."""
    return [xor_tree([body[i] for i in taps]) for taps in crc12_matrix(len(body))]


def crc12_parts(body, parts):
    """The XOR trees of crc12_bits, each split into `parts` trees over near-equal shares of its inputs:
    [[part p of CRC bit k for k in range(CHECK_BITS)] for p in range(parts)] (the CRC is their XOR)."""
    out = [[] for _ in range(parts)]
    for taps in crc12_matrix(len(body)):
        for p in range(parts):
            share = taps[p * len(taps) // parts:(p + 1) * len(taps) // parts]
            out[p].append(xor_tree([body[i] for i in share]) if share else 0)
    return out

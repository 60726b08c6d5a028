"""cores.lib.header.Header: host pack/unpack/wire bytes against hand-built integers, and the gateware's
field()/value() against the host's view, in Migen's simulator and in Verilog (a Verilated model)."""
import random

import pytest
from migen import Module, Signal

from migen.sim import run_simulation

from cores.lib.header import Header, csr_fields
from sim.verilated import run_vectors

ETH = Header.from_bytes([("dst_mac", 0, 6), ("src_mac", 6, 6), ("ethertype", 12, 2)], 14)
L2 = Header.from_msb_layout([("total", 4), ("remain", 4), ("port1", 8), ("port2", 8)])
TAG = Header.from_bits({"kind": (0, 2), "width": (2, 3), "count": (8, 9), "offset": (17, 8)})
CSR = Header.from_lsb_layout([("node", 5), ("go", 1), ("mode", 3)])


def test_byte_header_is_big_endian_on_the_lsb_first_wire():
    frame = bytes.fromhex("112233445566aabbccddeeff88b5")
    v = ETH.from_wire(frame)
    assert ETH.unpack(v) == {"dst_mac": 0x112233445566, "src_mac": 0xaabbccddeeff, "ethertype": 0x88B5}
    assert ETH.to_bytes(ETH.pack(dst_mac=0x112233445566, src_mac=0xaabbccddeeff, ethertype=0x88B5)) == frame
    assert v & 0xff == 0x11                   # byte 0 of the wire in bits 7..0


def test_msb_layout_puts_the_first_field_on_top():
    v = L2.pack(total=3, remain=2, port1=5, port2=6)
    assert v == 0x3205_06 << 0 and L2.to_bytes(v) == bytes([0x32, 0x05, 0x06])
    assert L2.layout() == [("total", 4), ("remain", 4), ("port1", 8), ("port2", 8)]


def test_bit_fields_reserved_mask_and_checks():
    assert TAG.pack(kind=1, width=5, count=251, offset=3) == 1 | 5 << 2 | 251 << 8 | 3 << 17
    assert TAG.reserved_mask() == 0xFFFFFFFF & ~(0x3 | 0x7 << 2 | 0x1FF << 8 | 0xFF << 17)
    with pytest.raises(ValueError, match="does not fit"):
        TAG.pack(count=512)
    assert TAG.pack(check=False, count=512 + 7) == 7 << 8       # masked to its field
    with pytest.raises(KeyError):
        TAG.pack(colour=1)
    with pytest.raises(ValueError, match="outside"):
        Header.from_bits({"x": (30, 4)}, length=4)


def test_csr_fields_follow_the_layout():
    fields = csr_fields(CSR, {"node": "n", "go": "g", "mode": "m"}, pulse=("go",))
    assert [(f.name, f.offset, f.size, f.pulse) for f in fields] == [("node", 0, 5, False), ("go", 5, 1, True),
                                                                    ("mode", 6, 3, False)]


class _FieldsAndValue(Module):
    """Every field of `header` sliced out of `raw`, and the value rebuilt from those fields (plus one narrower
    field expression, zero-extended)."""
    def __init__(self, header):
        self.raw = Signal(header.bits)
        self.fields = {n: Signal(header.width(n), name=n) for n in header.fields}
        self.rebuilt = Signal(header.bits)
        self.narrow = Signal(header.bits)
        self.comb += [s.eq(header.field(self.raw, n)) for n, s in self.fields.items()]
        self.comb += self.rebuilt.eq(header.value(**self.fields))
        first = header.order[-1]
        self.comb += self.narrow.eq(header.value(**{first: self.fields[first][:header.width(first) - 1]}))


@pytest.mark.parametrize("header", [ETH, L2, TAG, CSR], ids=["bytes", "msb", "bits", "lsb"])
def test_gateware_fields_match_the_host_in_migen_and_verilog(header):
    rng = random.Random(header.bits)
    values = [rng.getrandbits(header.bits) for _ in range(40)] + [0, (1 << header.bits) - 1]
    first = header.order[-1]

    def expect(v):
        f = header.unpack(v)
        narrow = header.pack(**{first: f[first] & ((1 << (header.width(first) - 1)) - 1)})
        used = v & ~header.reserved_mask()
        return f, used, narrow

    dut = _FieldsAndValue(header)
    got = []

    def gen():
        for v in values:
            yield dut.raw.eq(v)
            yield
            fields = {}
            for n, s in dut.fields.items():
                fields[n] = yield s
            got.append((fields, (yield dut.rebuilt), (yield dut.narrow)))
    run_simulation(dut, gen())
    assert got == [expect(v) for v in values]

    if header.bits <= 64:                       # the Verilated vector runner takes ports of up to 64 bits
        dut = _FieldsAndValue(header)
        outs = [dut.fields[n] for n in header.order] + [dut.rebuilt, dut.narrow]
        samples = run_vectors(dut, [dut.raw], outs, [[v] for v in values], f"header_{header.bits}")
        for v, row in zip(values, samples):
            f, used, narrow = expect(int(v))
            assert [int(x) for x in row] == [f[n] for n in header.order] + [used, narrow]

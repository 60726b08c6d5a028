"""One header-field descriptor for every protocol of the project, for the gateware and the host alike.

A `Header` is LiteX's `Header` (a dict of `HeaderField(byte, offset, width)` over a value of `length`
bytes, fields optionally byte-swapped) with what the host needs on top:

    ETH = Header.from_bytes([("dst_mac", 0, 6), ("src_mac", 6, 6), ("ethertype", 12, 2)], 14)
    ETH.field(frame_bits, "ethertype")           # Migen: the field's value (big-endian bytes swapped)
    v = ETH.pack(dst_mac=..., ethertype=0x88B5)  # host: the header as an integer, as the gateware sees it
    ETH.unpack(v)["ethertype"], ETH.to_bytes(v), ETH.from_wire(b"...")

The value's bit i is bit i of the Migen signal. `wire` tells which byte of the value goes first on the wire:
"lsb" (byte 0 = bits 7..0: LiteEth streams, MiniSharp frames) or "msb" (the top byte first: RIFL headers).
Three ways to describe the fields, one type:

* `from_bytes`: (name, byte offset, bytes) of a byte-oriented header, multi-byte fields big-endian.
* `from_msb_layout`: (name, bits) listed from the most significant bit down (RIFL's diagrams).
* `from_bits`: name -> (lsb, width) inside a word (Sparsr tags); `from_lsb_layout`: (name, bits) from bit 0
  up (CSR words; `csr_fields` makes their LiteX CSRFields).
"""
from migen import C, Cat

from litex.soc.interconnect.packet import Header as LiteXHeader
from litex.soc.interconnect.packet import HeaderField


class Header(LiteXHeader):
    """fields: dict name -> HeaderField; length: bytes; swap_field_bytes: fields are big-endian byte groups
    (the wire's byte order inside an "lsb" value); wire: "lsb" or "msb" (see the module docstring)."""
    def __init__(self, fields, length, swap_field_bytes=False, wire="lsb"):
        if wire not in ("lsb", "msb"):
            raise ValueError(f"wire must be 'lsb' or 'msb', not {wire!r}")
        LiteXHeader.__init__(self, dict(fields), length, swap_field_bytes)
        self.wire = wire
        self.bits = 8 * length
        for name, f in self.fields.items():
            lsb = 8 * f.byte + f.offset
            if f.width < 1 or lsb + f.width > self.bits:
                raise ValueError(f"field {name!r} (bits {lsb}..{lsb + f.width - 1}) is outside {self.bits} bits")
            if swap_field_bytes and (f.offset or f.width % 8):
                raise ValueError(f"field {name!r}: byte-swapped fields must be whole bytes")
        self.order = sorted(self.fields, key=lambda n: -self.lsb(n))    # most significant first

    # Constructors -----------------------------------------------------------------------------------
    @classmethod
    def from_bytes(cls, fields, length):
        """Byte-oriented header (LiteEth order: byte k of the header in bits 8k..8k+7), big-endian fields."""
        return cls({n: HeaderField(off, 0, 8 * nb) for n, off, nb in fields}, length, swap_field_bytes=True)

    @classmethod
    def from_msb_layout(cls, layout, length=None, wire="msb"):
        """Fields listed MSB first as (name, bits); the value is `length` bytes (default: the layout's bits
        rounded up to bytes), the first field ending at its top bit."""
        total = sum(bits for _, bits in layout)
        length = length if length is not None else (total + 7) // 8
        top, fields = 8 * length, {}
        for name, bits in layout:
            top -= bits
            fields[name] = HeaderField(top // 8, top % 8, bits)
        return cls(fields, length, wire=wire)

    @classmethod
    def from_bits(cls, fields, length=4):
        """name -> (lsb, width) inside a `length`-byte word."""
        return cls({n: HeaderField(lsb // 8, lsb % 8, w) for n, (lsb, w) in fields.items()}, length)

    @classmethod
    def from_lsb_layout(cls, layout, length=4):
        """Fields listed LSB first as (name, bits), packed from bit 0 (LiteX CSRField order)."""
        fields, pos = {}, 0
        for name, bits in layout:
            fields[name] = (pos, bits)
            pos += bits
        return cls.from_bits(fields, length)

    # Field geometry ---------------------------------------------------------------------------------
    def lsb(self, name):
        f = self.fields[name]
        return 8 * f.byte + f.offset

    def width(self, name):
        return self.fields[name].width

    def mask(self, name):
        """The field's bits in the value."""
        return ((1 << self.width(name)) - 1) << self.lsb(name)

    def reserved_mask(self):
        """Bits of the value that no field covers."""
        used = 0
        for n in self.fields:
            used |= self.mask(n)
        return ((1 << self.bits) - 1) & ~used

    def layout(self):
        """(name, width) pairs, most significant field first (a Record/stream layout)."""
        return [(n, self.width(n)) for n in self.order]

    # Gateware ---------------------------------------------------------------------------------------
    def field(self, value, name):
        """Migen expression of field `name` of `value` (a Signal or slice of self.bits bits)."""
        lsb, w = self.lsb(name), self.width(name)
        raw = value[lsb:lsb + w]
        if self.swap_field_bytes:
            return Cat(*[raw[8 * (w // 8 - 1 - i):8 * (w // 8 - i)] for i in range(w // 8)])
        return raw

    def value(self, **fields):
        """Migen expression of a whole header from field expressions (missing fields are 0)."""
        parts, pos = [], 0
        for name in reversed(self.order):
            lsb, w = self.lsb(name), self.width(name)
            if lsb > pos:
                parts.append(_zeros(lsb - pos))
            v = fields.get(name, 0)
            parts.append(_swap_expr(v, w) if self.swap_field_bytes else _fit(v, w))
            pos = lsb + w
        if pos < self.bits:
            parts.append(_zeros(self.bits - pos))
        unknown = set(fields) - set(self.fields)
        if unknown:
            raise KeyError(f"no field {sorted(unknown)} in this header")
        return Cat(*parts)

    # Host -------------------------------------------------------------------------------------------
    def get(self, value, name):
        v = (value >> self.lsb(name)) & ((1 << self.width(name)) - 1)
        return _swap_int(v, self.width(name)) if self.swap_field_bytes else v

    def unpack(self, value):
        """dict of every field of the integer `value`."""
        return {n: self.get(value, n) for n in self.order}

    def pack(self, check=True, **fields):
        """The header as an integer (bit i = bit i of the gateware's signal); missing fields are 0.
        check: refuse values that do not fit their field (tests building bad headers pass check=False)."""
        value = 0
        for name, v in fields.items():
            if name not in self.fields:
                raise KeyError(f"no field {name!r} in this header")
            w = self.width(name)
            if check and not 0 <= v < (1 << w):
                raise ValueError(f"{name}={v} does not fit {w} bits")
            v &= (1 << w) - 1
            value |= (_swap_int(v, w) if self.swap_field_bytes else v) << self.lsb(name)
        return value

    def to_bytes(self, value):
        """The header as sent on the wire."""
        return value.to_bytes(self.length, "little" if self.wire == "lsb" else "big")

    def from_wire(self, data):
        """The integer value of the first `length` bytes of `data` as received."""
        return int.from_bytes(bytes(data[:self.length]), "little" if self.wire == "lsb" else "big")


def csr_fields(header, descriptions, pulse=()):
    """LiteX CSRFields of a register laid out as `header` (a word): one per field, at its offset, with
    descriptions[name]; the fields named in `pulse` are pulses (CSRStorage)."""
    from litex.soc.interconnect.csr import CSRField
    return [CSRField(n, size=header.width(n), offset=header.lsb(n), pulse=n in pulse, description=descriptions[n])
            for n in sorted(header.fields, key=header.lsb)]


def _zeros(n):
    return C(0, n)


def _fit(v, w):
    """`v` as exactly w bits: a constant, a slice of a wider value or a zero-extended narrower one."""
    if isinstance(v, int):
        return C(v, w)
    return v[:w] if len(v) >= w else Cat(v, C(0, w - len(v)))


def _swap_expr(v, w):
    if isinstance(v, int):
        return C(_swap_int(v, w), w)
    v = _fit(v, w)
    return Cat(*[v[8 * (w // 8 - 1 - i):8 * (w // 8 - i)] for i in range(w // 8)])


def _swap_int(v, w):
    return int.from_bytes(v.to_bytes(w // 8, "big"), "little")

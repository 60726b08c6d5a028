"""Event counters and their CSRs, the same way in every core.

    add_counters(self, COUNTERS, {"frames": frame_done, "drops": drop_count})   # self.counters[name]
    if with_csr:
        add_counter_csrs(self, COUNTERS)                                      # CSRStatus `name` each

`COUNTERS` is the core's list of (name, description) in `common.py`. Naming rule: the counter signal is
`module.counters[name]`, its CSR is named `name` (attribute `_<name>`, so it never hides a signal of the
same name), 32 bits, read-only. Counters wrap at 2^width. Cores take `with_csr=False` by default; SoC
blocks ask for the CSRs.
"""
from migen import If, Signal
from migen.fhdl.bitcontainer import value_bits_sign
from migen.fhdl.structure import wrap

from litex.soc.interconnect.csr import CSRStatus

COUNTER_BITS = 32


def add_counters(module, spec, increments, width=COUNTER_BITS, register=False):
    """module.counters[name] += increments[name] every cycle, for each (name, description) of `spec`.
    An increment is a 1-bit event (it enables the counter) or a small count (it is added). register: add
    the increments one cycle late, from registers (keeps the counters' adders off the events' paths).
    Returns module.counters."""
    unknown = set(increments) - {name for name, _ in spec}
    if unknown:
        raise KeyError(f"increments for counters not in the spec: {sorted(unknown)}")
    counters = getattr(module, "counters", None)
    if counters is None:
        counters = module.counters = {}
    for name, _ in spec:
        if name in counters:
            raise ValueError(f"counter {name!r} defined twice")
        inc = increments[name]
        if register:
            r = Signal(_bits(inc), name=f"{name}_inc")
            module.sync += r.eq(inc)
            inc = r
        counters[name] = c = Signal(width, name=name)
        # a direct 1-bit event enables the counter's register; a count, or a registered increment, is added
        module.sync += If(inc, c.eq(c + 1)) if _bits(inc) == 1 and not register else c.eq(c + inc)
    return counters


def add_counter_csrs(module, spec, values=None):
    """One CSRStatus per (name, description) of `spec`, named `name`, reading values[name] (default
    module.counters[name]). Returns the CSRs in `spec` order."""
    values = module.counters if values is None else values
    out = []
    for name, desc in spec:
        csr = CSRStatus(len(values[name]), name=name, description=desc)
        for sig in ("status", "we", "re"):          # readable Verilog names (else csrstatus<n>_status)
            getattr(csr, sig).name_override = f"{name}_{sig}"
        setattr(module, "_" + name, csr)
        module.comb += csr.status.eq(values[name])
        out.append(csr)
    return out


def _bits(value):
    return value_bits_sign(wrap(value))[0]

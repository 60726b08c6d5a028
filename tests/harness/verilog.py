"""Checks on generated Verilog that Migen's simulator cannot make.

Migen's simulator evaluates expressions at full width, Verilog at the width of their context, and Migen
prints a zero-width slice `x[a:a]` as the backward part-select `x[a-1:a]` (a 2-bit select in Verilog).
Three bugs of this kind passed the Migen tests (Sparsr LIL word count, Switch SoC destinations, Sync
2-flit packets); every test that generates a design's Verilog can run `backward_part_selects` on it."""
import re

_SELECT = re.compile(r"\w+\[(\d+):(\d+)\]")


def backward_part_selects(verilog):
    """(line number, text) of every `x[a:b]` with a < b outside memory declarations (`reg [w:0] m[0:d-1]`)."""
    hits = []
    for number, line in enumerate(verilog.splitlines(), 1):
        if line.lstrip().startswith("reg "):
            continue
        hits += [(number, m.group(0)) for m in _SELECT.finditer(line) if int(m.group(1)) < int(m.group(2))]
    return hits

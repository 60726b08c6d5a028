"""The switch SoC block's checkers (cores.switch.soc_block.SwitchChecker, one per output) fed every fault: the
block's own generators' cells (SwitchGenerator, uniform destinations) through a stand-in for the switch (the
reference forwarding: output (input + Dst Port 1) mod N, header cores.rifl.common.l2_forward) with one fault
injected. The block passes a run when errors = 0 and rx_cells = tx_cells (software.switch.demo; status.done
waits for tx = rx + drops), so a lost cell must show in `cells`, a duplicated one in `cells` and `errors`, a
misrouted, reordered, corrupted or truncated one in `errors`."""
import random
from types import SimpleNamespace

import pytest
from migen import If, Module, Signal
from migen.sim import run_simulation

from litex.soc.interconnect import stream

from cores.rifl.common import FC_LAYOUT, L2_HEADER_BITS, l2_forward, l2_header_pack, l2_header_unpack
from cores.switch.common import LOAD_ONE, cell_beats, cell_layout
from cores.switch.soc_block import SEQ_BITS, TS_BITS, SwitchBlock, SwitchChecker, SwitchGenerator, generator_seed
from tests.harness import streams

N, DW, CELLS = 4, 512, 6            # ports, data width (4 beats a cell), cells each generator sends at least
SRC_BIT = TS_BITS                   # beat 0: timestamp, then the source port, then the sequence number
SEQ_BIT = TS_BITS + 8
FAULTS = ["none", "lost", "duplicated", "unlast", "header", "later_header", "port", "source", "sequence",
          "reordered", "payload", "truncated"]


def fabric(cells):
    """(output, cell) of each (input, cell) as the switch delivers it: the forwarded header on every beat."""
    out = []
    for i, cell in cells:
        header = cell[0]["header"]
        j = (i + l2_header_unpack(header)[2][0]) % N
        out.append((j, [dict(b, header=l2_forward(header)) for b in cell]))
    return out


def inject(fault, delivered, rng):
    """delivered (output, cell) with `fault` at one cell; returns it and the counters expected per output."""
    delivered = [(j, [dict(b) for b in cell]) for j, cell in delivered]
    cells, errors = [0] * N, [0] * N
    for j, _ in delivered:
        cells[j] += 1
    flow = lambda x: (delivered[x][0], (delivered[x][1][0]["data"] >> SRC_BIT) & 0xFF)    # (output, source)
    later = [[y for y in range(x + 1, len(delivered)) if flow(y) == flow(x)] for x in range(len(delivered))]
    x = rng.choice([x for x in range(len(delivered)) if later[x]])
    j, cell = delivered[x]
    if fault == "lost":
        del delivered[x]
        cells[j] -= 1
    elif fault == "duplicated":             # the second copy repeats its sequence number
        delivered.insert(x, (j, [dict(b) for b in cell]))
        cells[j] += 1
        errors[j] = 1
    elif fault == "unlast":                 # runs into the output's next cell: one (bad) cell fewer
        cell[-1]["last"] = 0
        cells[j] -= 1
        errors[j] = 1
    elif fault == "header":                 # not forwarded: Remain Hops 1 left
        total, _, ports = l2_header_unpack(cell[0]["header"])
        for b in cell:
            b["header"] = l2_header_pack(total, 1, ports)
        errors[j] = 1
    elif fault == "later_header":
        cell[rng.randrange(1, len(cell))]["header"] ^= 1 << rng.randrange(L2_HEADER_BITS)
        errors[j] = 1
    elif fault == "port":
        k = (j + rng.randrange(1, N)) % N
        delivered[x] = (k, cell)
        cells[j] -= 1
        cells[k] += 1
        errors[k] = 1
    elif fault == "source":
        cell[0]["data"] ^= 1 << SRC_BIT
        errors[j] = 1
    elif fault == "sequence":               # the tag's sequence number, not the payload's
        cell[0]["data"] ^= 1 << (SEQ_BIT + rng.randrange(SEQ_BITS))
        errors[j] = 1
    elif fault == "reordered":              # two cells of one flow swapped: the second is behind the first
        y = later[x][0]
        delivered[x], delivered[y] = delivered[y], delivered[x]
        errors[j] = 1
    elif fault == "payload":
        cell[rng.randrange(1, len(cell))]["data"] ^= 1 << rng.randrange(DW)
        errors[j] = 1
    elif fault == "truncated":
        del cell[2:]
        cell[-1]["last"] = 1
        errors[j] = 1
    else:
        assert fault == "none"
    return delivered, dict(cells=cells, errors=errors)


def run_block(fault, seed):
    """The generators (every cell time, until each has sent CELLS), their cells through fabric() and
    inject(), every output's cells into its checker (random valid). Returns (counters, expected)."""
    sw = SimpleNamespace(n=N, beats=cell_beats(DW), sinks=[stream.Endpoint(cell_layout(DW)) for _ in range(N)],
                         sources=[stream.Endpoint(cell_layout(DW)) for _ in range(N)],
                         fcs=[stream.Endpoint(FC_LAYOUT) for _ in range(N)])
    m = Module()
    now, tick_ct, enable = Signal(32), Signal(max=sw.beats), Signal()
    threshold, offset = Signal(17, reset=LOAD_ONE), Signal(8)
    m.sync += [now.eq(now + 1), If(tick_ct == sw.beats - 1, tick_ct.eq(0)).Else(tick_ct.eq(tick_ct + 1))]
    gens = [SwitchGenerator(sw, i, generator_seed(i), now, tick_ct == 0, enable, threshold, offset) for i in range(N)]
    chks = [SwitchChecker(sw, j, now) for j in range(N)]
    m.submodules += gens + chks
    # Each checker's marks counted, as the block counts them over every output.
    counts = [dict(cells=Signal(32), errors=Signal(32)) for _ in chks]
    m.sync += [If(getattr(c, mark), k[name].eq(k[name] + 1))
               for c, k in zip(chks, counts) for name, mark in (("cells", "cell"), ("errors", "error"))]
    rng = random.Random(seed)
    taken, plan, sent, result = [[] for _ in range(N)], [], [], {}

    def main():
        yield enable.eq(1)
        while any(len(streams.packets(b)) < CELLS for b in taken):
            yield
        yield enable.eq(0)
        for g in gens:
            while (yield g.busy):
                yield
        yield
        cells = [(i, c) for k in range(CELLS) for i in range(N) for c in streams.packets(taken[i])[k:k + 1]]
        plan.append(inject(fault, fabric(cells), rng))
        while len(sent) < N:
            yield
        yield
        for name in ("cells", "errors"):
            result[name] = []
            for k in counts:
                result[name].append((yield k[name]))

    def output(j):
        while not plan:
            yield
        beats = [b for k, cell in plan[0][0] if k == j for b in cell]
        yield from streams.send(sw.sources[j], beats, random.Random(seed * N + j), valid_p=0.8)
        sent.append(j)
    run_simulation(m, [main()] + [output(j) for j in range(N)] +
                   [streams.collect(sw.sinks[i], taken[i], rng, ("data", "header", "last")) for i in range(N)])
    return result, plan[0][1]


@pytest.mark.parametrize("fault", FAULTS)
def test_switch_checker_faults(fault):
    """Every output's cells and errors exactly as inject() expects: a lost cell one cell fewer at its output;
    a duplicated one a cell more and an error; one that runs into the next a cell fewer and an error; a wrong
    header (on the first or a later beat), output, source port or sequence number, a reordered pair, a bit
    flipped in a later beat or a truncated cell one error there."""
    got, expected = run_block(fault, 1 + FAULTS.index(fault))
    assert got == expected


def test_block_needs_room_for_the_tag():
    with pytest.raises(ValueError, match="64-bit cell tag"):
        SwitchBlock(data_width=32)

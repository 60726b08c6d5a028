"""SoC block: a small RIFL switch with on-chip traffic generators, checkers and latency/throughput counters."""
from migen import Signal, If, Cat, Constant, Mux

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField

from cores.lib.counters import add_counter_csrs
from cores.lib.header import csr_fields
from cores.lib.logic import index_bits, xorshift32
from cores.rifl.common import L2_HEADER
from cores.switch.common import BLOCK_CONTROL, BLOCK_INFO, BLOCK_RESULTS, BLOCK_STATUS, LOAD_ONE, check_ports
from cores.switch.switch import RIFLSwitch

TS_BITS = 32            # generation timestamp carried in the first data beat
SRC_BITS = 8
SEQ_BITS = 24

_DESCRIPTIONS = {
    "start": "Clear the counters and start a run.",
    "done": "Generation over and every generated cell accounted for.",
    "running": "Generators active.",
    "ports": "Switch ports.", "beats": "Cycles per cell time.", "iterations": "iSLIP iterations.",
}


def generator_seed(port):
    """Distinct non-zero xorshift32 seed of each generator."""
    return ((0x1234567 + 0x9E3779B9 * (port + 1)) & 0xFFFFFFFF) or 1


class SwitchGenerator(LiteXModule):
    """Traffic source for one switch input: one Bernoulli draw per cell time with probability
    threshold / 65536; destination offset uniform over the N-1 other ports (or fixed); honours the
    per-VOQ flow-control frames of its switch port (a paused cell waits; its latency keeps counting)."""
    def __init__(self, sw, port, seed, now, tick, enable, threshold, offset):
        n, beats = sw.n, sw.beats
        w = index_bits(n)
        sink, fc = sw.sinks[port], sw.fcs[port]
        self.cells = Signal(32)
        self.busy = busy = Signal()
        self.clear = Signal()

        # # #

        rng = Signal(32, reset=seed)
        nxt = xorshift32(self, rng)
        self.sync += rng.eq(nxt)
        paused = Signal(n)
        self.comb += fc.ready.eq(1)
        self.sync += If(fc.valid,
            paused.eq((paused | Cat(*[fc.on_valid & (fc.on_channel == c) for c in range(n)]))
                      & ~Cat(*[fc.off_valid & (fc.off_channel == c) for c in range(n)])))

        beat, j, ts, seq = Signal(max=beats), Signal(8), Signal(TS_BITS), Signal(SEQ_BITS)
        draw = Signal(17)
        self.comb += draw.eq(rng[:16])
        pick = Signal(8)
        # The product gets its own full-width signal: inside one Verilog expression it would be evaluated at
        # the context width (16 bits) and the >> 16 would always give 0 (every "uniform" cell to offset 1).
        scaled = Signal(16 + (n - 1).bit_length())
        self.comb += [
            scaled.eq(rng[16:32] * (n - 1)),
            pick.eq(Mux(offset != 0, offset, 1 + scaled[16:])),
        ]
        go = Signal()
        self.comb += [
            go.eq(busy & ((beat != 0) | ~(paused >> j[:w])[0])),
            sink.valid.eq(go),
            sink.last.eq(beat == beats - 1),
            sink.header.eq(L2_HEADER.value(total_hops=1, remain_hops=1, dst_port1=j)),
            sink.data.eq(Mux(beat == 0, Cat(ts, Constant(port, SRC_BITS), seq), Cat(seq, Constant(port, SRC_BITS)))),
        ]
        finishing = go & (beat == beats - 1)
        self.sync += [
            If(go,
                beat.eq(beat + 1),
                If(finishing, beat.eq(0), busy.eq(0), seq.eq(seq + 1), self.cells.eq(self.cells + 1)),
            ),
            # One draw per cell time, also in the cycle a cell finishes, so back-to-back cells keep line rate.
            If((~busy | finishing) & tick & enable & (draw < threshold),
                busy.eq(1), j.eq(pick), ts.eq(now)),
            If(self.clear, self.cells.eq(0)),
        ]


class SwitchChecker(LiteXModule):
    """Sink for one switch output: checks each cell's forwarded header and its output port
    ((src + original Dst Port 1) mod N must equal this port), measures generation-to-delivery latency."""
    def __init__(self, sw, port, now):
        n = sw.n
        w = index_bits(n)
        src = sw.sources[port]
        self.cells = Signal(32)
        self.errors = Signal(32)
        self.lat_sum = Signal(64)
        self.lat_max = Signal(32)
        self.clear = Signal()

        # # #

        first = Signal(reset=1)
        ts = Signal(TS_BITS)
        lat = Signal(32)
        from_port = src.data[TS_BITS:TS_BITS + SRC_BITS]
        hop = L2_HEADER.field(src.header, "dst_port5")          # Dst Port 1 of the hop just made, rotated to the end
        bad = Signal()
        self.comb += [
            src.ready.eq(1),
            bad.eq((L2_HEADER.field(src.header, "remain_hops") != 0) | ((from_port + hop)[:w] != port)),
            lat.eq(now - ts),
        ]
        self.sync += [
            If(src.valid,
                first.eq(src.last),
                If(first, ts.eq(src.data[:TS_BITS]), If(bad, self.errors.eq(self.errors + 1))),
                If(src.last,
                    self.cells.eq(self.cells + 1),
                    self.lat_sum.eq(self.lat_sum + lat),
                    If(lat > self.lat_max, self.lat_max.eq(lat)),
                ),
            ),
            If(self.clear, self.cells.eq(0), self.errors.eq(0), self.lat_sum.eq(0), self.lat_max.eq(0)),
        ]


class SwitchBlock(LiteXModule):
    """A `n`-port RIFL switch (cores.switch.switch.RIFLSwitch) between on-chip generators and checkers.

    Software sets a load point (`load`, `pattern`, `duration`), pulses `control.start` (which also clears
    the counters) and reads the results once `status.done` is set: cells generated and delivered,
    latency sum / max in cycles (generation to last beat delivered, including any wait for flow control),
    checker errors, switch drops and network collisions. One cell time = `beats` cycles (`info`).
    """
    def __init__(self, n=4, data_width=128, voq_cells=8, iterations=2):
        check_ports(n)
        self.switch = sw = RIFLSwitch(n, data_width, voq_cells, iterations)
        for name, v in (("ports", n), ("beats", sw.beats), ("iterations", iterations)):
            if v >> BLOCK_INFO.width(name):
                raise ValueError(f"{name}={v} does not fit the {BLOCK_INFO.width(name)}-bit info field")
        self.control = CSRStorage(fields=csr_fields(BLOCK_CONTROL, _DESCRIPTIONS, pulse=("start",)))
        self.load = CSRStorage(fields=[
            CSRField("threshold", size=LOAD_ONE.bit_length(), reset=LOAD_ONE // 2,
                     description="Offered load per input: cells per cell time x 65536 (65536 = every cell time)."),
        ])
        self.pattern = CSRStorage(fields=[
            CSRField("offset", size=8, reset=0,
                     description="0: uniform destinations; else every input sends with this Dst Port 1 value."),
        ])
        self.duration = CSRStorage(fields=[
            CSRField("cycles", size=32, reset=10000, description="Cycles during which the generators offer cells."),
        ])
        self.status = CSRStatus(fields=csr_fields(BLOCK_STATUS, _DESCRIPTIONS))
        self.info = CSRStatus(fields=csr_fields(BLOCK_INFO, _DESCRIPTIONS))

        # # #

        now = Signal(32)
        tick_ct = Signal(max=sw.beats)
        tick = Signal()
        running, done = Signal(), Signal()
        left = Signal(32)
        cycles = Signal(32)
        start = self.control.fields.start
        self.sync += [
            now.eq(now + 1),
            If(tick_ct == sw.beats - 1, tick_ct.eq(0)).Else(tick_ct.eq(tick_ct + 1)),
            If(start, running.eq(1), done.eq(0), left.eq(self.duration.fields.cycles), cycles.eq(0)),
            If(running, left.eq(left - 1), If(left <= 1, running.eq(0))),
            If(~done & ~start, cycles.eq(cycles + 1)),
        ]
        self.comb += tick.eq(tick_ct == 0)
        gens, chks = [], []
        for i in range(n):
            g = SwitchGenerator(sw, i, generator_seed(i), now, tick, running,
                                self.load.fields.threshold, self.pattern.fields.offset)
            c = SwitchChecker(sw, i, now)
            setattr(self, f"gen{i}", g)
            setattr(self, f"chk{i}", c)
            self.comb += [g.clear.eq(start), c.clear.eq(start)]
            gens.append(g)
            chks.append(c)
        tx = sum(g.cells for g in gens)
        rx = sum(c.cells for c in chks)
        drops_total = Signal(32)
        drops_base = Signal(32)                     # the switch's own counters are not cleared by a start
        drops = Signal(32)
        self.comb += [
            drops_total.eq(sum(inp.counters["drop_hops"] + inp.counters["drop_loop"] + inp.counters["drop_full"] +
                               inp.counters["drop_malformed"] for inp in sw.inputs)),
            drops.eq(drops_total - drops_base),
        ]
        idle = Cat(*[g.busy for g in gens]) == 0
        self.sync += [
            If(start, drops_base.eq(drops_total)),
            If(~running & ~start & (left == 0) & idle & (tx == rx + drops), done.eq(1)),
        ]
        self.comb += [
            self.status.fields.done.eq(done & ~start),         # never stale in the cycle a start lands
            self.status.fields.running.eq(running),
            self.info.fields.ports.eq(n),
            self.info.fields.beats.eq(sw.beats),
            self.info.fields.iterations.eq(iterations),
        ]

        def word(value, width=32):
            sig = Signal(width)
            self.comb += sig.eq(value)
            return sig
        add_counter_csrs(self, BLOCK_RESULTS, {
            "cycles": cycles, "tx_cells": word(tx), "rx_cells": word(rx),
            "lat_sum": word(sum(c.lat_sum for c in chks), 64), "lat_max": max_of(self, [c.lat_max for c in chks]),
            "errors": word(sum(c.errors for c in chks)), "drops": drops, "collisions": sw.collisions,
        })


def max_of(module, values):
    out = values[0]
    for v in values[1:]:
        m = Signal(32)
        module.comb += m.eq(Mux(v > out, v, out))
        out = m
    return out

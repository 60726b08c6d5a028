"""SoC block: a small RIFL switch with on-chip traffic generators, checkers and latency/throughput counters."""
from migen import Array, Cat, Constant, If, Mux, Signal

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
TAG_BITS = TS_BITS + SRC_BITS + SEQ_BITS    # beat 0's tag: timestamp, source port, sequence number
LANE_BITS = 64          # cell_payload lane
PAYLOAD_MARK = 0xA5C3   # cell_payload: the constant 16 bits of every lane

_DESCRIPTIONS = {
    "start": "Clear the counters and start a run.",
    "done": "Generation over and every generated cell accounted for.",
    "running": "Generators active.",
    "ports": "Switch ports.", "beats": "Cycles per cell time.", "iterations": "iSLIP iterations.",
}


def generator_seed(port):
    """Distinct non-zero xorshift32 seed of each generator."""
    return ((0x1234567 + 0x9E3779B9 * (port + 1)) & 0xFFFFFFFF) or 1


def cell_payload(module, src, seq, beat, data_width):
    """Beat `beat` of cell `seq` from input `src` as its generator writes it and a checker expects it (but for
    beat 0's first TAG_BITS, the tag): 64-bit lanes, lane l = Cat(seq, src, beat, l, PAYLOAD_MARK) (SEQ_BITS,
    SRC_BITS, 8, 8 and 16 bits), cut to data_width bits."""
    b = Signal(8)
    module.comb += b.eq(beat)
    lanes = Cat(*[Cat(seq, src, b, Constant(lane, 8), Constant(PAYLOAD_MARK, 16))
                  for lane in range(-(-data_width // LANE_BITS))])
    return lanes[:data_width]


class SwitchGenerator(LiteXModule):
    """Traffic source for one switch input: one Bernoulli draw per cell time with probability
    threshold / 65536; destination offset uniform over the N-1 other ports (or fixed); honours the
    per-VOQ flow-control frames of its switch port (a paused cell waits; its latency keeps counting).
    Each cell: cell_payload of (port, sequence number, beat), beat 0 starting with the tag Cat(timestamp,
    port, sequence number); the sequence number counts this input's cells from 0 (cleared by `clear`).
    `sent` marks the cycle of each cell's last beat."""
    def __init__(self, sw, port, seed, now, tick, enable, threshold, offset):
        n, beats = sw.n, sw.beats
        w = index_bits(n)
        sink, fc = sw.sinks[port], sw.fcs[port]
        self.sent = Signal()
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
            sink.data.eq(cell_payload(self, Constant(port, SRC_BITS), seq, beat, len(sink.data))),
            If(beat == 0, sink.data[:TAG_BITS].eq(Cat(ts, Constant(port, SRC_BITS), seq))),
        ]
        finishing = self.sent
        self.comb += finishing.eq(go & (beat == beats - 1))
        self.sync += [
            If(go,
                beat.eq(beat + 1),
                If(finishing, beat.eq(0), busy.eq(0), seq.eq(seq + 1)),
            ),
            # One draw per cell time, also in the cycle a cell finishes, so back-to-back cells keep line rate.
            If((~busy | finishing) & tick & enable & (draw < threshold),
                busy.eq(1), j.eq(pick), ts.eq(now)),
            If(self.clear, seq.eq(0)),
        ]


class SwitchChecker(LiteXModule):
    """Sink for one switch output (ready always 1, one beat a cycle): marks each cell (`cell`, one at each
    `last`), the bad ones among them (`error`), gives its generation-to-delivery latency (`lat`, 0 between
    cells) and keeps the largest (`lat_max`); the SoC block counts the marks. A cell is bad if its
    forwarded header has Remain Hops left or (source + original Dst Port 1) mod N is not this port, a later
    beat's header differs from its first's, its sequence number is not after the last good one from its source
    (a duplicate or a reordered cell; a lost one shows as rx_cells < tx_cells), any data bit but the
    timestamp differs from cell_payload, or `last` is not on beat `beats` - 1 (a truncated cell, or one run on
    into the next: that one is judged with it). The marks follow the last beat by one cycle."""
    def __init__(self, sw, port, now):
        n, beats = sw.n, sw.beats
        w = index_bits(n)
        src = sw.sources[port]
        self.cell = Signal()
        self.error = Signal()
        self.lat = Signal(32)
        self.lat_max = Signal(32)
        self.clear = Signal()

        # # #

        beat, first, end = Signal(max=beats), Signal(), Signal()
        ts, from_r, seq_r, header_r = Signal(TS_BITS), Signal(SRC_BITS), Signal(SEQ_BITS), Signal(len(src.header))
        got_src, got_seq, tag_src, tag_seq = Signal(SRC_BITS), Signal(SEQ_BITS), Signal(SRC_BITS), Signal(SEQ_BITS)
        self.comb += [
            src.ready.eq(1),
            first.eq(beat == 0), end.eq(beat == beats - 1),
            got_src.eq(src.data[TS_BITS:TS_BITS + SRC_BITS]), got_seq.eq(src.data[TS_BITS + SRC_BITS:TAG_BITS]),
            tag_src.eq(Mux(first, got_src, from_r)), tag_seq.eq(Mux(first, got_seq, seq_r)),
        ]
        # Every data bit against cell_payload but beat 0's tag: the payload repeats the tag's source and sequence.
        diff = Signal(len(src.data))
        self.comb += [
            diff.eq(src.data ^ cell_payload(self, tag_src, tag_seq, beat, len(src.data))),
            If(first, diff[:TAG_BITS].eq(0)),
        ]
        # Per source: the lowest sequence number its next good cell may carry (serial arithmetic, SEQ_BITS).
        next_seq = Array(Signal(SEQ_BITS, name=f"next_seq{s}") for s in range(n))
        index, cur, step = Signal(w), Signal(w), Signal(SEQ_BITS)
        self.comb += [index.eq(got_src[:w]), cur.eq(from_r[:w]), step.eq(got_seq - next_seq[index])]
        hop = L2_HEADER.field(src.header, "dst_port5")          # Dst Port 1 of the hop just made, rotated to the end
        head_bad, beat_bad, bad = Signal(), Signal(), Signal()
        lat = Signal(32)
        self.comb += [
            head_bad.eq((L2_HEADER.field(src.header, "remain_hops") != 0) | ((got_src + hop)[:w] != port) |
                        step[-1]),
            beat_bad.eq(Mux(first, head_bad, src.header != header_r) | (diff != 0) | (src.last != end)),
            lat.eq(now - ts),
        ]
        delivered = src.valid & src.last
        self.sync += [
            self.cell.eq(delivered),
            self.error.eq(delivered & (bad | beat_bad)),
            self.lat.eq(Mux(delivered, lat, 0)),
            If(src.valid,
                If(first, ts.eq(src.data[:TS_BITS]), from_r.eq(got_src), seq_r.eq(got_seq), header_r.eq(src.header)),
                If(src.last | end, beat.eq(0)).Else(beat.eq(beat + 1)),
                bad.eq(~src.last & (bad | beat_bad)),
                If(src.last,
                    If(lat > self.lat_max, self.lat_max.eq(lat)),
                    If(~(bad | beat_bad), next_seq[cur].eq(seq_r + 1)),
                ),
            ),
            If(self.clear, self.lat_max.eq(0), *[s.eq(0) for s in next_seq]),
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
        if data_width < TAG_BITS:
            raise ValueError(f"data_width must hold the {TAG_BITS}-bit cell tag, got {data_width!r}")
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
        # One counter per result, fed by every port's events of the cycle (not a sum of per-port counters).
        tx = self.add_count(32, sum(g.sent for g in gens), start)
        rx = self.add_count(32, sum(c.cell for c in chks), start)
        errors = self.add_count(32, sum(c.error for c in chks), start)
        lat_sum = self.add_count(64, sum(c.lat for c in chks), start)
        drops = self.add_count(32, sum(inp.drop for inp in sw.inputs), start)
        idle = Cat(*[g.busy for g in gens]) == 0
        self.sync += If(~running & ~start & (left == 0) & idle & (tx == rx + drops), done.eq(1))
        self.comb += [
            self.status.fields.done.eq(done & ~start),         # never stale in the cycle a start lands
            self.status.fields.running.eq(running),
            self.info.fields.ports.eq(n),
            self.info.fields.beats.eq(sw.beats),
            self.info.fields.iterations.eq(iterations),
        ]

        add_counter_csrs(self, BLOCK_RESULTS, {
            "cycles": cycles, "tx_cells": tx, "rx_cells": rx, "lat_sum": lat_sum,
            "lat_max": max_of(self, [c.lat_max for c in chks]), "errors": errors, "drops": drops,
            "collisions": sw.collisions,
        })

    def add_count(self, width, increment, clear):
        """A `width`-bit counter that adds `increment` every cycle and is cleared by `clear`."""
        count = Signal(width)
        self.sync += If(clear, count.eq(0)).Else(count.eq(count + increment))
        return count


def max_of(module, values):
    """The largest of `values` (32 bits each), through a tree of registered compares: ceil(log2(len)) cycles
    late, so that no chain of compares reaches the CSR read multiplexer (the Colorlight's critical path)."""
    while len(values) > 1:
        level = []
        for a, b in zip(values[0::2], values[1::2]):
            m = Signal(32)
            module.sync += m.eq(Mux(b > a, b, a))
            level.append(m)
        values = level + values[len(level) * 2:]
    return values[0]

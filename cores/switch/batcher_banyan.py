"""Batcher-Banyan self-routing network: a bitonic sorter followed by an omega (shuffle-exchange) banyan."""
from migen import Array, Signal, Cat, Constant, Mux, If

from litex.gen import LiteXModule

from cores.lib.block_ram import BlockRAM
from cores.lib.logic import index_bits
from cores.switch.common import check_ports


class BatcherBanyan(LiteXModule):
    """N x N self-routing network for one beat per port per cycle.

    Inputs per port i: `in_valid[i]`, `in_dst[i]` (log2 N bits), `in_data[i]` (`data_width` bits).
    Outputs per port j: `out_valid[j]`, `out_data[j]`. The bitonic sorter (log2N(log2N+1)/2 stages) orders
    the beats by destination with idle ports last, so the active beats reach the banyan concentrated and
    monotone; the omega banyan (log2 N stages of N/2 2x2 elements, routing on destination bits MSB first)
    then routes them without contention whenever the destinations are distinct (what a matching gives).
    Any 2x2 element that sees two beats wanting the same output counts one event in `collisions` and
    drops the lower beat, so a zero counter proves that no beat was lost (the events are registered, then
    their sum, so a beat's events are counted at most one cycle after the beat leaves). With `pipeline=True` every
    stage is registered, throughput one beat per port per cycle; with `pipeline=False` the network is
    combinational (latency 0).
    The network routes only each beat's (source port, destination, idle) lane, 2 log2 N + 1 bits. With
    `pipeline=True` the data wait in one block RAM per input (written every cycle at a cycle counter, read
    `self.lane_latency` cycles later: no flip-flops for the delay) and reach output j through its N:1
    multiplexer, a tree of ceil(log2 N / 2) registered 4:1 (the last 2:1 when log2 N is odd) stages set by the
    source port the network delivered there, the remaining select bits and valid registered alongside.
    Latency `self.latency` = lane_latency + mux_stages cycles, where lane_latency = sorter + banyan stages
    (at least 3, the block RAM's write-to-read delay: N = 2 delays its lanes by one more register).
    Under ECP5 the block RAMs become DP16KD tiles with `cores.lib.block_ram.ecp5_special_overrides`.
    """
    def __init__(self, n, data_width, pipeline=True):
        check_ports(n)
        if not isinstance(data_width, int) or data_width < 1:
            raise ValueError(f"data_width must be a positive int, got {data_width!r}")
        self.n = n
        self.data_width = data_width
        w = index_bits(n)
        m = w if n > 1 else 0
        sorter_stages = m * (m + 1) // 2
        self.lane_latency = max(sorter_stages + m, BlockRAM.LATENCY + 1) if pipeline else 0
        self.mux_stages = -(-m // 2) if pipeline else 0
        self.latency = self.lane_latency + self.mux_stages
        self.in_valid = [Signal(name=f"in_valid{i}") for i in range(n)]
        self.in_dst = [Signal(w, name=f"in_dst{i}") for i in range(n)]
        self.in_data = [Signal(data_width, name=f"in_data{i}") for i in range(n)]
        self.out_valid = [Signal(name=f"out_valid{j}") for j in range(n)]
        self.out_data = [Signal(data_width, name=f"out_data{j}") for j in range(n)]
        self.collisions = Signal(32)

        # # #

        # A lane packs Cat(src, dst, idle): the sort key (dst, idle) sits in the top bits, idle lanes last.
        # The data do not cross the network: `src` selects them at the outputs.
        lw = w + w + 1
        stage_count = [0]

        def new_stage(values):
            """Register (or wire) one stage's lane values."""
            stage_count[0] += 1
            lanes = [Signal(lw, reset=1 << (lw - 1), name=f"s{stage_count[0]}_lane{p}") for p in range(n)]
            if pipeline:
                self.sync += [lane.eq(v) for lane, v in zip(lanes, values)]
            else:
                self.comb += [lane.eq(v) for lane, v in zip(lanes, values)]
            return lanes

        idle = Constant(1 << (lw - 1), lw)
        lanes = []
        for i in range(n):
            lane = Signal(lw, name=f"in_lane{i}")
            self.comb += lane.eq(Mux(self.in_valid[i], Cat(Constant(i, w), self.in_dst[i], Constant(0, 1)), idle))
            lanes.append(lane)

        def key(lane):
            return lane[w:]

        # Bitonic sorter.
        size = 2
        while size <= n:
            stride = size // 2
            while stride >= 1:
                values = list(lanes)
                for p in range(n):
                    if p & stride:
                        continue
                    a, b = lanes[p], lanes[p | stride]
                    ascending = (p & size) == 0
                    swap = (key(a) > key(b)) if ascending else (key(a) < key(b))
                    values[p] = Mux(swap, b, a)
                    values[p | stride] = Mux(swap, a, b)
                lanes = new_stage(values)
                stride //= 2
            size *= 2

        # Omega banyan: perfect shuffle, then 2x2 elements routing on destination bit (m-1-s).
        events = []
        for s in range(m):
            shuffled = [None] * n
            for p in range(n):
                shuffled[((p << 1) | (p >> (m - 1))) & (n - 1)] = lanes[p]
            values = [None] * n
            for q in range(0, n, 2):
                a, c = shuffled[q], shuffled[q + 1]
                a_v, c_v = ~a[lw - 1], ~c[lw - 1]
                a_bit, c_bit = a[w + m - 1 - s], c[w + m - 1 - s]
                a_up, a_dn = Signal(name=f"b{s}_{q}_a_up"), Signal(name=f"b{s}_{q}_a_dn")
                c_up, c_dn = Signal(name=f"b{s}_{q}_c_up"), Signal(name=f"b{s}_{q}_c_dn")
                hit = Signal(name=f"b{s}_{q}_collision")
                self.comb += [
                    a_up.eq(a_v & ~a_bit), a_dn.eq(a_v & a_bit),
                    c_up.eq(c_v & ~c_bit), c_dn.eq(c_v & c_bit),
                    hit.eq((a_up & c_up) | (a_dn & c_dn)),
                ]
                events.append(hit)
                values[q] = Mux(a_up, a, Mux(c_up, c, idle))
                values[q + 1] = Mux(a_dn, a, Mux(c_dn, c, idle))
            lanes = new_stage(values)
        for _ in range(self.lane_latency - stage_count[0]):
            lanes = new_stage(lanes)

        if not pipeline:
            source = Array(self.in_data)
            for j in range(n):
                self.comb += [self.out_valid[j].eq(~lanes[j][lw - 1]), self.out_data[j].eq(source[lanes[j][:w]])]
        else:
            self._output_multiplexers(lanes, lw)
        # The count is off the data path: events registered, their sum registered, then added (2 cycles late).
        events_r = Signal(len(events))
        hits = Signal(len(events).bit_length())
        self.sync += [events_r.eq(Cat(*events)), hits.eq(sum(events_r[k] for k in range(len(events)))),
                      If(hits != 0, self.collisions.eq(self.collisions + hits))]

    def _output_multiplexers(self, lanes, lw):
        """The data of each input in a block RAM read `lane_latency` cycles after the write, then each
        output's registered 4:1 tree, selected by the source field of the last stage's lane."""
        n, w = self.n, index_bits(self.n)
        lag = self.lane_latency - BlockRAM.LATENCY       # cycles between a word's write and its read address
        depth = 1 << lag.bit_length()                    # > lag: a word is read before it is overwritten
        cycle = Signal(max=depth)
        self.sync += cycle.eq(cycle + 1)
        delayed = []
        for i in range(n):
            ram = BlockRAM(self.data_width, depth)
            setattr(self, f"delay{i}", ram)
            self.comb += [ram.we.eq(1), ram.adr_w.eq(cycle), ram.dat_w.eq(self.in_data[i]),
                          ram.adr_r.eq(cycle - lag)]
            delayed.append(ram.dat_r)
        for j in range(n):
            sel, valid, level = lanes[j][:w], ~lanes[j][lw - 1], delayed
            for s in range(self.mux_stages):
                # no reset: valid says when the data count, and the reset net stays off these registers
                regs = [Signal(self.data_width, reset_less=True, name=f"mux{j}_{s}_{g}")
                        for g in range(-(-len(level) // 4))]
                self.sync += [r.eq(Array(level[4 * g:4 * g + 4])[sel[:2]]) for g, r in enumerate(regs)]
                nvalid = Signal(name=f"mux{j}_{s}_valid")
                self.sync += nvalid.eq(valid)
                if len(sel) > 2:
                    rest = Signal(len(sel) - 2, reset_less=True, name=f"mux{j}_{s}_sel")
                    self.sync += rest.eq(sel[2:])
                    sel = rest
                valid, level = nvalid, regs
            self.comb += [self.out_data[j].eq(level[0]), self.out_valid[j].eq(valid)]

"""Batcher-Banyan self-routing network: a bitonic sorter followed by an omega (shuffle-exchange) banyan."""
from migen import Array, Signal, Cat, Constant, Mux, If

from litex.gen import LiteXModule

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
    drops the lower beat, so a zero counter proves that no beat was lost. With `pipeline=True` every
    stage is registered: latency `self.latency` = number of stages cycles, throughput one beat per port
    per cycle; with `pipeline=False` the network is combinational (latency 0).
    The network routes only each beat's (source port, destination, idle) lane, 2 log2 N + 1 bits; the
    data wait in a delay line of latency - 1 registers per input and reach output j through a registered
    N:1 multiplexer set by the source port the network delivered there (in the cycle of the last stage).
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
        self.latency = (sorter_stages + m) if pipeline else 0
        self.in_valid = [Signal(name=f"in_valid{i}") for i in range(n)]
        self.in_dst = [Signal(w, name=f"in_dst{i}") for i in range(n)]
        self.in_data = [Signal(data_width, name=f"in_data{i}") for i in range(n)]
        self.out_valid = [Signal(name=f"out_valid{j}") for j in range(n)]
        self.out_data = [Signal(data_width, name=f"out_data{j}") for j in range(n)]
        self.collisions = Signal(32)

        # # #

        # A lane packs Cat(src, dst, idle): the sort key (dst, idle) sits in the top bits, idle lanes last.
        # The data do not cross the network: `src` selects them at the outputs.
        data_width_net = data_width
        data_width = w
        lw = data_width + w + 1
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
            return lane[data_width:]

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

        # The data, delayed to reach the output multiplexers in the cycle of the last stage's decision.
        delayed = list(self.in_data)
        for k in range(max(0, self.latency - 1)):
            regs = [Signal(data_width_net, name=f"d{k + 1}_data{i}") for i in range(n)]
            self.sync += [r.eq(d) for r, d in zip(regs, delayed)]
            delayed = regs
        source = Array(delayed)

        # Omega banyan: perfect shuffle, then 2x2 elements routing on destination bit (m-1-s).
        events = []
        final = lanes
        for s in range(m):
            shuffled = [None] * n
            for p in range(n):
                shuffled[((p << 1) | (p >> (m - 1))) & (n - 1)] = lanes[p]
            values = [None] * n
            for q in range(0, n, 2):
                a, c = shuffled[q], shuffled[q + 1]
                a_v, c_v = ~a[lw - 1], ~c[lw - 1]
                a_bit, c_bit = a[data_width + m - 1 - s], c[data_width + m - 1 - s]
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
            final = values
            lanes = new_stage(values)

        # Output j: the data of the source port the last stage delivers there (before that stage's
        # registers), registered with it.
        for j in range(n):
            sel = Signal(max(1, w), name=f"out_src{j}")
            self.comb += sel.eq(final[j][:w] if n > 1 else 0)
            self.comb += self.out_valid[j].eq(~lanes[j][lw - 1])
            if pipeline and self.latency:
                self.sync += self.out_data[j].eq(source[sel])
            else:
                self.comb += self.out_data[j].eq(source[sel])
        if events:
            hits = Signal(max(1, len(events).bit_length()))
            self.comb += hits.eq(sum(events))
            self.sync += If(hits != 0, self.collisions.eq(self.collisions + hits))

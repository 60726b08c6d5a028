"""RIFL switch: VOQ input modules, an iSLIP scheduler and a Batcher-Banyan network, fixed 256-byte cells."""
from migen import Signal, Cat, If

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import FC_LAYOUT, L2_HEADER_BITS, LINK_FC_CHANNEL
from cores.switch.batcher_banyan import BatcherBanyan
from cores.switch.cell_fifo import CellFIFO
from cores.switch.common import (SWITCH_COUNTERS, SWITCH_CSRS, VOQ_COUNTERS, cell_beats, cell_layout,
                                 check_ports)
from cores.switch.islip import ISLIPScheduler
from cores.switch.voq import VOQInput, cell_channel


class RIFLSwitch(LiteXModule):
    """N-port RIFL Layer 2 switch.

    Ports: `sinks[i]` / `sources[j]` carry cells (cores.switch.common.cell_layout(data_width), one cell =
    cell_beats(data_width) beats, `last` on the final one); `fcs[i]` carries the per-VOQ flow-control
    frames of input i back to its upstream sender (cores.rifl.common.FC_LAYOUT); `fc_ins[j]` takes the frames
    that the device downstream of output j sends back (always ready).

    Downstream flow control: each output keeps the paused bitmap of the next device's channels (a next
    switch of `down_ports` ports: one channel per VOQ of its input; an endpoint: LINK_FC_CHANNEL, which
    holds the whole output). A cell's channel there is cores.switch.common.downstream_channel of its
    forwarded header. The scheduler does not grant a VOQ whose head cell's channel is paused, and an
    output never starts a cell for a paused channel (a cell already started is finished), so the next
    device receives at most one cell after its ON frame is seen here. A cell granted before the pause
    waits at the head of its output FIFO (`fc_hold` counts those cycles) and keeps cells behind it waiting.
    Frame channels >= down_ports are ignored and counted in `fc_bad`.

    Timing: time is cut into cell times of `cell_cycles` cycles (default `beats`; more leaves idle cycles
    after each cell, for more iterations than the beats give time for). At the start of each cell time the scheduler
    takes the requests of complete cells (masked by output credits) and decides within 2*iterations+1
    cycles (3*iterations+1 with `pipelined_scheduler`; beats must exceed that); the granted cells cross the
    network during the next cell
    time, one beat per cycle on every port at once, so every port sustains line rate. Each output has a
    FIFO of `out_cells` cells (CellFIFO) and one credit per cell: a cell is only scheduled towards an output with
    room for it, so a slow output back-pressures into its VOQs (and from there, by flow control, into the
    senders) and nothing is lost. The default out_cells covers the credit loop, so a fast output receives
    a cell every cell time.
    Bad cells are dropped and counted by the input modules (`inputs[i].counters`); `collisions` counts network
    contention (always 0 since the scheduler produces matchings); `counters[name]` (cores.lib.counters) for
    each name of cores.switch.common.SWITCH_COUNTERS: `out_overflow` counts cycles in which a beat found a full
    output FIFO (always 0 thanks to the credits). `with_csr`: a CSR per name of SWITCH_CSRS, the inputs'
    counters summed.
    """
    def __init__(self, n=4, data_width=256, voq_cells=8, iterations=2, out_cells=None,
                 on_threshold=None, off_threshold=None, down_ports=None, pipelined_scheduler=False,
                 cell_cycles=None, with_csr=False):
        check_ports(n)
        down_ports = n if down_ports is None else down_ports
        check_ports(down_ports)
        beats = cell_beats(data_width)
        cell_cycles = beats if cell_cycles is None else cell_cycles
        need = (3 if pipelined_scheduler else 2) * iterations + 2
        if not isinstance(cell_cycles, int) or cell_cycles < beats:
            raise ValueError(f"cell_cycles must be an int >= {beats} (the beats of a cell), got {cell_cycles!r}")
        if cell_cycles < need:
            raise ValueError(f"{iterations} iSLIP iterations need a cell time of at least {need} "
                             f"cycles, {data_width}-bit ports give {beats} (raise cell_cycles)")
        if out_cells is not None and (not isinstance(out_cells, int) or out_cells < 1):
            raise ValueError(f"out_cells must be a positive int, got {out_cells!r}")
        self.n, self.beats, self.data_width, self.cell_cycles = n, beats, data_width, cell_cycles
        self.sinks = [stream.Endpoint(cell_layout(data_width)) for _ in range(n)]
        self.sources = [stream.Endpoint(cell_layout(data_width)) for _ in range(n)]
        self.fcs = [stream.Endpoint(FC_LAYOUT) for _ in range(n)]
        self.fc_ins = [stream.Endpoint(FC_LAYOUT) for _ in range(n)]
        self.down_paused = [Signal(down_ports, name=f"down_paused{j}") for j in range(n)]

        # # #

        self.inputs = []
        for i in range(n):
            inp = VOQInput(n, i, data_width, voq_cells, on_threshold, off_threshold, down_ports)
            setattr(self, f"input{i}", inp)
            self.inputs.append(inp)
            self.comb += [self.sinks[i].connect(inp.sink), inp.fc.connect(self.fcs[i])]
        self.scheduler = sched = ISLIPScheduler(n, iterations, pipelined_scheduler)
        self.network = net = BatcherBanyan(n, data_width + L2_HEADER_BITS + 1)
        self.collisions = net.collisions
        # Credit loop: from the cell time of a decision to its credit coming back, the cell is read in the
        # next cell time (+1 memory), crosses the network, the FIFO (+1), leaves (beats - 1) and the
        # credit register (+1): 2 * beats + latency + 2 cycles. A credit back in the cycle a cell time starts
        # counts only at the next start, so the loop holds floor(cycles / cell time) + 1 cells.
        if out_cells is None:
            out_cells = (2 * cell_cycles + net.latency + 2) // cell_cycles + 1
        self.out_cells = out_cells

        # Cell-time counter; scheduling and transfers start at count 0.
        ct = Signal(max=cell_cycles)
        self.sync += If(ct == cell_cycles - 1, ct.eq(0)).Else(ct.eq(ct + 1))

        credit = [Signal(max=out_cells + 1, reset=out_cells, name=f"credit{j}") for j in range(n)]
        eligible = Cat(*[c != 0 for c in credit])

        def blocked(j, channel):
            return self.down_paused[j][LINK_FC_CHANNEL] | (self.down_paused[j] >> channel)[0]
        self.comb += [
            sched.start.eq(ct == 0),
            sched.req.eq(Cat(*[inp.requests & eligible & Cat(*[~blocked(j, inp.head_channel[j]) for j in range(n)])
                               for inp in self.inputs])),
        ]
        for i, inp in enumerate(self.inputs):
            self.comb += [
                inp.grant.eq(sched.done & sched.match_valid[i]),
                inp.grant_port.eq(sched.match[i]),
                inp.tx_start.eq(ct == 0),
                net.in_valid[i].eq(inp.tx_valid),
                net.in_dst[i].eq(inp.tx_dst),
                net.in_data[i].eq(Cat(inp.tx_data, inp.tx_header, inp.tx_last)),
            ]

        holds, bads, overflows = [], [], []
        for j in range(n):
            fifo = CellFIFO(data_width, out_cells, beats)
            setattr(self, f"out_fifo{j}", fifo)
            lane = net.out_data[j]
            taken = Signal(name=f"taken{j}")
            returned = Signal(name=f"returned{j}")
            self.comb += [
                fifo.sink.valid.eq(net.out_valid[j]),
                fifo.sink.data.eq(lane[:data_width]),
                fifo.sink.header.eq(lane[data_width:data_width + L2_HEADER_BITS]),
                fifo.sink.last.eq(lane[-1]),
                fifo.source.connect(self.sources[j], omit={"valid", "ready"}),
                taken.eq(sched.done & (Cat(*[sched.match_valid[i] & (sched.match[i] == j)
                                             for i in range(n)]) != 0)),
                returned.eq(self.sources[j].valid & self.sources[j].ready & self.sources[j].last),
            ]
            self.sync += credit[j].eq(credit[j] - taken + returned)
            overflows.append(fifo.sink.valid & ~fifo.sink.ready)
            # Downstream flow control: a cell starts only if its channel is not paused.
            mid, go, hold = Signal(name=f"mid{j}"), Signal(name=f"go{j}"), Signal(name=f"hold{j}")
            fin, fc_bad = self.fc_ins[j], Signal(2, name=f"fc_bad{j}")
            holds.append(hold)
            bads.append(fc_bad)
            self.comb += [
                go.eq(mid | ~blocked(j, cell_channel(fifo.source.header, down_ports))),
                hold.eq(fifo.source.valid & ~go),
                self.sources[j].valid.eq(fifo.source.valid & go),
                fifo.source.ready.eq(self.sources[j].ready & go),
                fin.ready.eq(1),
                fc_bad.eq(Cat(fin.valid & fin.on_valid & (fin.on_channel >= down_ports),
                              fin.valid & fin.off_valid & (fin.off_channel >= down_ports))),
            ]
            self.sync += [
                If(self.sources[j].valid & self.sources[j].ready, mid.eq(~self.sources[j].last)),
            ]
            self.sync += [If(fin.valid & fin.on_valid & (fin.on_channel == c), self.down_paused[j][c].eq(1)).Elif(
                          fin.valid & fin.off_valid & (fin.off_channel == c), self.down_paused[j][c].eq(0))
                          for c in range(down_ports)]
        add_counters(self, SWITCH_COUNTERS, {
            "cells_out": sum(src.valid & src.ready & src.last for src in self.sources),
            "out_overflow": Cat(*overflows) != 0,
            "fc_hold": sum(holds),
            "fc_bad": sum(b[0] + b[1] for b in bads),
        })

        if with_csr:
            # One 32-bit CSR per counter of SWITCH_CSRS; the inputs' counters are summed.
            values = {**self.counters, "collisions": self.collisions}
            for name, _ in VOQ_COUNTERS:
                values[name] = Signal(32, name=f"total_{name}")
                self.comb += values[name].eq(sum(inp.counters[name] for inp in self.inputs))
            add_counter_csrs(self, SWITCH_CSRS, values)

"""Input module of the RIFL switch: VOQs in one statically partitioned memory (SAMQ), per-VOQ flow control."""
from migen import Signal, Array, If, Cat, Constant, Memory, Mux

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counters
from cores.lib.logic import index_bits, round_robin_pick
from cores.rifl.common import FC_LAYOUT, HOPS_BITS, L2_HEADER, LINK_FC_CHANNEL
from cores.switch.common import VOQ_COUNTERS, cell_beats, cell_layout, check_ports


def forwarded_header(header):
    """The Layer 2 header as it enters the fabric (cores.rifl.common.l2_forward): Remain Hops - 1, the five
    Dst Port fields rotated one byte left (Dst Port 1 moves to Dst Port 5)."""
    def field(name):
        return L2_HEADER.field(header, name)
    return L2_HEADER.value(
        total_hops=field("total_hops"), remain_hops=(field("remain_hops") - 1)[:HOPS_BITS],
        dst_port1=field("dst_port2"), dst_port2=field("dst_port3"), dst_port3=field("dst_port4"),
        dst_port4=field("dst_port5"), dst_port5=field("dst_port1"))


def cell_channel(header, down_ports):
    """RTL of cores.switch.common.downstream_channel: the next device's flow-control channel of a cell whose
    forwarded Layer 2 header is `header` (log2(down_ports) bits)."""
    return Mux(L2_HEADER.field(header, "remain_hops") == 0, LINK_FC_CHANNEL,
               L2_HEADER.field(header, "dst_port1")[:index_bits(down_ports)])


class VOQInput(LiteXModule):
    """One switch input: N virtual output queues of `voq_cells` cells each, statically partitioned in ONE
    memory (SAMQ), written from `sink` at one beat per cycle and read out one beat per cycle.

    `sink` takes cells (see cores.switch.common.cell_layout); it is always ready (a link cannot be
    stalled: upstream is paced by flow control). On the first beat the destination is
    d = (port + Dst Port 1) mod n (cores.rifl.common.dst_port) and the header is rewritten as the
    packet enters the fabric. Cells with Remain Hops 0, with Dst Port 1 = 0 mod n (loop back), for a
    full VOQ, or with a misplaced `last` are dropped and counted (`counters[name]` for each name of
    cores.switch.common.VOQ_COUNTERS, cores.lib.counters; `drop` marks the cycle of any drop). A cell is requested (`requests[d]`)
    only once it is complete. `grant`/`grant_port` reserve the head cell of a VOQ; the next `tx_start`
    streams it on tx_* (one beat per cycle, one cycle after the memory read); the switch never
    raises `grant` and `tx_start` in the same cycle.

    Flow control: VOQ d is paused when its occupancy exceeds `on_threshold` cells and resumed when it
    falls back to `off_threshold`; every change is reported upstream on `fc` as a frame with at most
    one ON (pause) and one OFF (resume) channel, channel = (d - port) mod n (cores.switch.common.fc_channel).
    `head_channel[d]` is the downstream flow-control channel (cell_channel, for a next switch of `down_ports`
    ports) of the next cell VOQ d would send, so that the switch can leave a paused one unscheduled.
    """
    def __init__(self, n, port, data_width, voq_cells=8, on_threshold=None, off_threshold=None, down_ports=None):
        check_ports(n)
        down_ports = n if down_ports is None else down_ports
        check_ports(down_ports)
        beats = cell_beats(data_width)
        if not isinstance(voq_cells, int) or voq_cells < 2 or voq_cells & (voq_cells - 1):
            raise ValueError(f"voq_cells must be a power of two >= 2, got {voq_cells!r}")
        on = voq_cells * 2 // 3 if on_threshold is None else on_threshold
        off = voq_cells // 3 if off_threshold is None else off_threshold
        if not 0 <= off < on < voq_cells:
            raise ValueError(f"need 0 <= off_threshold ({off}) < on_threshold ({on}) < voq_cells ({voq_cells})")
        if not 0 <= port < n:
            raise ValueError(f"port {port} out of range for {n} ports")
        self.on_threshold, self.off_threshold = on, off
        w = index_bits(n)
        qw = index_bits(voq_cells)
        self.sink = stream.Endpoint(cell_layout(data_width))
        self.fc = stream.Endpoint(FC_LAYOUT)
        self.requests = Signal(n)
        self.grant = Signal()
        self.grant_port = Signal(w)
        self.tx_start = Signal()
        self.tx_valid = Signal()
        self.tx_last = Signal()
        self.tx_dst = Signal(w)
        self.tx_header = Signal(len(self.sink.header))
        self.tx_data = Signal(data_width)
        self.occupancy = [Signal(max=voq_cells + 1, name=f"occupancy{d}") for d in range(n)]
        self.paused = Signal(n)
        self.head_channel = [Signal(index_bits(down_ports), name=f"head_channel{d}") for d in range(n)]
        self.drop = Signal()

        # # #

        mem = Memory(data_width, n * voq_cells * beats)
        hdr = Memory(len(self.sink.header), n * voq_cells)
        wr, rd = mem.get_port(write_capable=True), mem.get_port()
        hwr, hrd = hdr.get_port(write_capable=True), hdr.get_port()
        self.specials += mem, hdr, wr, rd, hwr, hrd

        avail = [Signal(max=voq_cells + 1, name=f"avail{d}") for d in range(n)]
        wr_ptr = Array(Signal(qw, name=f"wr_ptr{d}") for d in range(n))
        rd_ptr = Array(Signal(qw, name=f"rd_ptr{d}") for d in range(n))

        commit, cur_v = self.add_write_side(n, port, beats, voq_cells, down_ports, wr, hwr, wr_ptr, rd_ptr)
        release, rv, grant_ok = self.add_read_side(n, beats, voq_cells, rd, hrd, rd_ptr, avail)
        # A cell counts in its VOQ's occupancy from its commit to its last beat read, in avail until it is granted.
        for d in range(n):
            inc = commit & (cur_v == d)
            self.sync += [
                self.occupancy[d].eq(self.occupancy[d] + inc - (release & (rv == d))),
                avail[d].eq(avail[d] + inc - (grant_ok & (self.grant_port == d))),
            ]
        self.comb += self.requests.eq(Cat(*[a != 0 for a in avail]))
        self.add_flow_control(n, port, w, on, off)

    def add_write_side(self, n, port, beats, voq_cells, down_ports, wr, hwr, wr_ptr, rd_ptr):
        """Cells from `sink` into their VOQ's slot (dropped and counted when malformed, for Remain Hops 0, loop
        back or a full VOQ), and the downstream channel of every stored cell. Returns (commit, cur_v): a cell
        completes into VOQ cur_v in this cycle."""
        w, qw, bw = index_bits(n), index_bits(voq_cells), index_bits(beats)
        occ = Array(self.occupancy)
        wbeat = Signal(bw)
        discard = Signal()                                      # malformed cell: drop until `last`
        keep, reason = Signal(), Signal(2)                       # reason: 0 hops, 1 loop, 2 full
        wv, wslot = Signal(w), Signal(qw)
        first = Signal()
        j = L2_HEADER.field(self.sink.header, "dst_port1")
        new_v = Signal(w)
        new_hops0, new_loop, new_full = Signal(), Signal(), Signal()
        cur_keep, cur_reason = Signal(), Signal(2)
        cur_v, cur_slot = Signal(w), Signal(qw)
        end_ok, end_bad = Signal(), Signal()
        commit = Signal()
        self.comb += [
            self.sink.ready.eq(1),
            first.eq(wbeat == 0),
            new_v.eq(port + j[:w]),
            new_hops0.eq(L2_HEADER.field(self.sink.header, "remain_hops") == 0),
            new_loop.eq(j[:w] == 0),
            new_full.eq(occ[new_v] == voq_cells),
            cur_keep.eq(Mux(first, ~(new_hops0 | new_loop | new_full), keep)),
            cur_reason.eq(Mux(first, Mux(new_hops0, 0, Mux(new_loop, 1, 2)), reason)),
            cur_v.eq(Mux(first, new_v, wv)),
            cur_slot.eq(Mux(first, wr_ptr[new_v], wslot)),
            end_ok.eq(self.sink.valid & ~discard & self.sink.last & (wbeat == beats - 1)),
            end_bad.eq(self.sink.valid & ~discard & (self.sink.last != (wbeat == beats - 1))),
            commit.eq(end_ok & cur_keep),
            wr.adr.eq(Cat(wbeat, cur_slot, cur_v)),
            wr.dat_w.eq(self.sink.data),
            wr.we.eq(self.sink.valid & ~discard & cur_keep),
            hwr.adr.eq(Cat(cur_slot, cur_v)),
            hwr.dat_w.eq(forwarded_header(self.sink.header)),
            hwr.we.eq(self.sink.valid & ~discard & cur_keep & first),
        ]
        # Downstream channel of every stored cell, in registers so that every VOQ's head is visible at once.
        chans = [Array(Signal(index_bits(down_ports), name=f"chan{d}_{s}") for s in range(voq_cells)) for d in range(n)]
        self.comb += [self.head_channel[d].eq(chans[d][rd_ptr[d]]) for d in range(n)]
        self.sync += [If(hwr.we & (cur_v == d), chans[d][cur_slot].eq(cell_channel(hwr.dat_w, down_ports)))
                      for d in range(n)]
        self.sync += [
            If(self.sink.valid,
                If(discard,
                    If(self.sink.last, discard.eq(0)),
                ).Else(
                    keep.eq(cur_keep), reason.eq(cur_reason), wv.eq(cur_v), wslot.eq(cur_slot),
                    wbeat.eq(wbeat + 1),
                    If(end_ok | end_bad, wbeat.eq(0)),
                    If(end_bad & ~self.sink.last, discard.eq(1)),
                ),
            ),
            If(commit, wr_ptr[cur_v].eq(wr_ptr[cur_v] + 1)),
        ]
        dropped = end_ok & ~cur_keep
        self.comb += self.drop.eq(dropped | end_bad)
        add_counters(self, VOQ_COUNTERS, {
            "cells_in": commit, "drop_malformed": end_bad,
            "drop_hops": dropped & (cur_reason == 0), "drop_loop": dropped & (cur_reason == 1),
            "drop_full": dropped & (cur_reason == 2),
        })
        return commit, cur_v

    def add_read_side(self, n, beats, voq_cells, rd, hrd, rd_ptr, avail):
        """Reservation of a VOQ's head cell on `grant`, streamed on tx_* from the next `tx_start`. Returns
        (release, rv, grant_ok): the last beat of VOQ rv is read in this cycle; a grant is taken."""
        w, qw, bw = index_bits(n), index_bits(voq_cells), index_bits(beats)
        grant_ok = Signal()
        pend_v, pend_slot, pending = Signal(w), Signal(qw), Signal()
        rv, rslot, rbeat, reading = Signal(w), Signal(qw), Signal(bw), Signal()
        release = Signal()
        self.comb += [
            grant_ok.eq(self.grant & (Array(avail)[self.grant_port] != 0)),
            release.eq(reading & (rbeat == beats - 1)),
            rd.adr.eq(Cat(rbeat, rslot, rv)),
            hrd.adr.eq(Cat(rslot, rv)),
            self.tx_data.eq(rd.dat_r),
            self.tx_header.eq(hrd.dat_r),
        ]
        self.sync += [
            If(grant_ok,
                pending.eq(1), pend_v.eq(self.grant_port), pend_slot.eq(rd_ptr[self.grant_port]),
                rd_ptr[self.grant_port].eq(rd_ptr[self.grant_port] + 1),
            ),
            If(self.tx_start & pending,
                pending.eq(0), reading.eq(1), rbeat.eq(0), rv.eq(pend_v), rslot.eq(pend_slot),
            ).Elif(reading,
                rbeat.eq(rbeat + 1),
                If(release, reading.eq(0)),
            ),
            self.tx_valid.eq(reading),
            self.tx_last.eq(release),
            self.tx_dst.eq(rv),
        ]
        return release, rv, grant_ok

    def add_flow_control(self, n, port, w, on, off):
        """Per-VOQ flow control: hysteresis on occupancy, frames report the difference to what upstream knows."""
        reported = Signal(n)
        for d in range(n):
            self.sync += If(self.occupancy[d] > on, self.paused[d].eq(1)).Elif(
                self.occupancy[d] <= off, self.paused[d].eq(0))
        pend_on, pend_off = Signal(n), Signal(n)
        self.comb += [pend_on.eq(self.paused & ~reported), pend_off.eq(~self.paused & reported)]
        # Lowest pending channel; not first_set, whose priority chain is another netlist (a carry-chain isolate here).
        on_valid, on_idx, on_oh = round_robin_pick(self, pend_on, Constant(0, w), n)
        off_valid, off_idx, off_oh = round_robin_pick(self, pend_off, Constant(0, w), n)
        self.comb += [
            self.fc.valid.eq(on_valid | off_valid),
            self.fc.on_valid.eq(on_valid),
            self.fc.on_channel.eq((on_idx - port)[:w]),
            self.fc.off_valid.eq(off_valid),
            self.fc.off_channel.eq((off_idx - port)[:w]),
        ]
        self.sync += If(self.fc.valid & self.fc.ready, reported.eq((reported | on_oh) & ~off_oh))

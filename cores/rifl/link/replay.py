"""RIFL Layer 1 replay control: send pointer, RETRANS handling, hold-off and confirmation window."""
from migen import *

from litex.gen import LiteXModule

from cores.lib.block_ram import BlockRAM
from cores.lib.counters import add_counters
from cores.rifl.common import EP_REPLAY_COUNTERS, SEQ_BITS


def _seq_lt(module, a, b, limit):
    """(b - a) mod 2^SEQ_BITS in (0, limit)."""
    d = Signal(SEQ_BITS)
    module.comb += d.eq(b - a)
    return (d != 0) & (d < limit)


class RIFLReplayControl(LiteXModule):
    """The replay side of an endpoint: the send pointer rp and the confirmation ack (every frame before ack
    is known to be received).

    Parameters: holdoff H (cycles, holdoff_cycles(rtt)). rp moves on with every numbered frame sent
    (advance) and is rewound to s by an intact RETRANS(s) (retrans, retrans_seq) inside the window
    [ack, tx_seq], which also confirms every frame before s; RETRANS(s) for the same s again within H cycles
    is ignored. A rewind sets marker_pending until the transmitter sends the REPLAY marker (marker_sent).
    Without RETRANS, H + 1 cycles without `disturbed` confirm every frame sent H cycles ago (a delay line of
    rp). ce: as for RIFLTransmitter, for the history's block RAM. seq_start: rp and ack at reset (as
    RIFLEndpoint's; the history needs none: it is rewritten every H cycles, and the confirmation by time waits H + 1
    cycles after link-up). Latency: a RETRANS rewinds rp and
    confirms two cycles after it (checked, then applied from registers); advance and the confirmation by
    time act in the next cycle.
    """
    def __init__(self, holdoff, ce=None, seq_start=0):
        H = holdoff
        self.tx_seq = tx_seq = Signal(SEQ_BITS)
        self.advance = Signal()
        self.marker_sent = Signal()
        self.retrans = Signal()
        self.retrans_seq = seq = Signal(SEQ_BITS)
        self.disturbed = Signal()
        self.rp = rp = Signal(SEQ_BITS, reset=seq_start)
        self.ack = ack = Signal(SEQ_BITS, reset=seq_start)
        self.marker_pending = Signal()   # a REPLAY marker must precede the replayed frames

        # # #

        # seq in [ack, tx_seq]: tx_seq - ack < 2^(SEQ_BITS - 1) (the transmitter's guard), so seq - ack and
        # tx_seq - seq both in the lower half of the id space is the same test, one subtraction deep.
        in_window = Signal()
        above_ack, below_tx = Signal(SEQ_BITS), Signal(SEQ_BITS)
        self.comb += [
            above_ack.eq(seq - ack),
            below_tx.eq(tx_seq - seq),
            in_window.eq(~above_ack[-1] & ~below_tx[-1]),
        ]
        holdoff = Signal(max=H + 1)
        base = Signal(SEQ_BITS, reset=seq_start)
        # Sent pointer history: `sent` is rp of H + 1 cycles ago (a delay line of H entries in block RAM,
        # read at the oldest entry, the next to be written: two cycles later it is the RAM's output register).
        self.hist = hist = BlockRAM(SEQ_BITS, H, ce)
        hptr, hptr_next = Signal(max=H), Signal(max=H)
        sent = hist.dat_r
        self.comb += [
            hptr_next.eq(Mux(hptr == H - 1, 0, hptr + 1)),
            hist.adr_w.eq(hptr), hist.dat_w.eq(rp), hist.we.eq(1), hist.adr_r.eq(hptr_next),
        ]
        self.sync += hptr.eq(hptr_next)
        quiet = Signal(max=H + 2)
        # A RETRANS is checked in its cycle and acted on in the next (take, confirm, from registers). Its
        # check sees the state of the cycle before, where nothing it uses can have moved but tx_seq (one
        # more: the window only grows) and the hold-off (one more: counted as expired at 1).
        fresh = Signal()     # not a repeated request for the replay of the last hold-off
        self.comb += fresh.eq((holdoff <= 1) | (seq != base))
        take, confirm = Signal(), Signal()
        take_seq = Signal(SEQ_BITS, reset=seq_start)
        self.sync += [
            take.eq(self.retrans & in_window & fresh),
            confirm.eq(self.retrans & in_window & (above_ack != 0)),
            take_seq.eq(seq),
        ]
        self.sync += [
            If(holdoff != 0, holdoff.eq(holdoff - 1)),
            If(self.advance, rp.eq(rp + 1)),
            If(self.marker_sent, self.marker_pending.eq(0)),
            If(confirm, ack.eq(take_seq)),
            If(take,
                rp.eq(take_seq), base.eq(take_seq), holdoff.eq(H), self.marker_pending.eq(1),
            ),
            If(self.disturbed,
                quiet.eq(0),
            ).Elif(quiet != H + 1,
                quiet.eq(quiet + 1),
            ).Elif(_seq_lt(self, ack, sent, 1 << (SEQ_BITS - 1)),
                ack.eq(sent),
            ),
        ]
        add_counters(self, EP_REPLAY_COUNTERS, {"replays": self.retrans & in_window & fresh,
                                             "bad_retrans": self.retrans & ~in_window})

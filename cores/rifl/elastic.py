"""Clock compensation for a RIFL link between two oscillators: an elastic buffer between the recovered
(write) clock of the line and the local (read) clock of the endpoint, adding and removing IDLE frames."""
from migen import ClockDomainsRenamer, If, Memory, Mux, Signal
from migen.genlib.cdc import GrayCounter, MultiReg

from litex.gen import LiteXModule

from cores.rifl.common import ELASTIC_BAND, ELASTIC_COUNTERS, ELASTIC_DEPTH, check_frame_bits, idle_tag
from cores.lib.counters import COUNTER_BITS, add_counter_csrs, add_counters


def _gray_to_binary(module, gray):
    binary = Signal(len(gray))
    module.comb += binary[-1].eq(gray[-1])
    for i in reversed(range(len(gray) - 1)):
        module.comb += binary[i].eq(binary[i + 1] ^ gray[i])
    return binary


def _is_idle(module, frame, frame_bits):
    tag, width = idle_tag(frame_bits)
    idle = Signal()
    module.comb += idle.eq(frame[frame_bits - width:] == tag)
    return idle


class RIFLElasticBuffer(LiteXModule):
    """Frames from the line's clock domain (`cd_write`: wr_frame, one a cycle) to the endpoint's
    (`cd_read`: rd_frame, one a cycle), through `depth` frames of LUT RAM with Gray-coded pointers.
    wr_ce / rd_ce (default 1): a frame is written / read only in those cycles (a SERDES's frame slots).

    The read side starts once the buffer is half full. The write side drops an IDLE frame while its view
    of the level is at least depth/2 + band; the read side repeats the IDLE at its head while its view is
    at most depth/2 - band (views lag by a few cycles each way; the band keeps the two from acting at once).
    With the far end's transmitter sending an IDLE at least every CC_INTERVAL_FRAMES slots, +-CC_PPM_MAX ppm
    clocks never overflow or empty the buffer. Should they (no IDLEs, clocks out of range), a full buffer
    drops the frame and an empty one gives an all-zero frame (invalid sync: the receiver recovers as from a
    line error); both are counted as slips.
    Counters (read domain): ELASTIC_COUNTERS. Latency: about depth/2 frames plus 3 cycles.
    """
    def __init__(self, frame_bits, depth=ELASTIC_DEPTH, band=ELASTIC_BAND, cd_write="rx", cd_read="sys",
                 with_csr=False):
        check_frame_bits(frame_bits)
        if not isinstance(depth, int) or depth < 4 * band or depth & (depth - 1):
            raise ValueError(f"elastic buffer depth must be a power of two of at least 4 * band ({4 * band}), "
                             f"got {depth!r}")
        F, aw = frame_bits, (depth - 1).bit_length()
        self.wr_frame = Signal(F)
        self.rd_frame = Signal(F)
        self.wr_ce = Signal(reset=1)
        self.rd_ce = Signal(reset=1)
        self.level = Signal(aw + 1)          # read side's view

        # # #

        mid = depth // 2
        mem = Memory(F, depth)
        wport = mem.get_port(write_capable=True, clock_domain=cd_write)
        rport = mem.get_port(async_read=True, clock_domain=cd_read)
        self.specials += mem, wport, rport
        wptr = ClockDomainsRenamer(cd_write)(GrayCounter(aw + 1))
        rptr = ClockDomainsRenamer(cd_read)(GrayCounter(aw + 1))
        removed = ClockDomainsRenamer(cd_write)(GrayCounter(COUNTER_BITS))
        overflow = ClockDomainsRenamer(cd_write)(GrayCounter(COUNTER_BITS))
        self.submodules += wptr, rptr, removed, overflow

        # Write side.
        rptr_w = Signal(aw + 1)
        self.specials += MultiReg(rptr.q, rptr_w, cd_write)
        wlevel = Signal(aw + 1)
        w_idle = _is_idle(self, self.wr_frame, F)
        drop, full = Signal(), Signal()
        self.comb += [
            wlevel.eq(wptr.q_binary - _gray_to_binary(self, rptr_w)),
            full.eq(wlevel >= depth),
            drop.eq(w_idle & (wlevel >= mid + band)),
            wport.adr.eq(wptr.q_binary[:aw]), wport.dat_w.eq(self.wr_frame),
            wport.we.eq(self.wr_ce & ~drop & ~full),
            wptr.ce.eq(self.wr_ce & ~drop & ~full),
            removed.ce.eq(self.wr_ce & drop),
            overflow.ce.eq(self.wr_ce & ~drop & full),
        ]

        # Read side.
        wptr_r = Signal(aw + 1)
        removed_r, overflow_r = Signal(COUNTER_BITS), Signal(COUNTER_BITS)
        self.specials += [MultiReg(wptr.q, wptr_r, cd_read), MultiReg(removed.q, removed_r, cd_read),
                          MultiReg(overflow.q, overflow_r, cd_read)]
        started, empty, repeat, underflow = Signal(), Signal(), Signal(), Signal()
        r_idle = _is_idle(self, rport.dat_r, F)
        rsync = getattr(self.sync, cd_read)
        self.comb += [
            self.level.eq(_gray_to_binary(self, wptr_r) - rptr.q_binary),
            empty.eq(self.level == 0),
            repeat.eq(r_idle & (self.level <= mid - band)),
            underflow.eq(self.rd_ce & started & empty),
            rport.adr.eq(rptr.q_binary[:aw]),
            rptr.ce.eq(self.rd_ce & started & ~empty & ~repeat),
        ]
        rsync += [
            If(self.level >= mid, started.eq(1)),
            If(self.rd_ce, self.rd_frame.eq(Mux(started & ~empty, rport.dat_r, 0))),
        ]
        self.read_counters = counters = ClockDomainsRenamer(cd_read)(LiteXModule())
        add_counters(counters, [ELASTIC_COUNTERS[1], ("underflows", "reads of an empty buffer")],
                     {"inserted": self.rd_ce & started & ~empty & repeat, "underflows": underflow})
        self.counters = {
            "removed": _gray_to_binary(self, removed_r),
            "inserted": counters.counters["inserted"],
            "slips": Signal(COUNTER_BITS),
        }
        self.comb += self.counters["slips"].eq(counters.counters["underflows"] + _gray_to_binary(self, overflow_r))
        if with_csr:
            add_counter_csrs(self, ELASTIC_COUNTERS)

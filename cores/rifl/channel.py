"""Simulation channel for RIFL: fixed latency, random frame errors, error bursts, link down."""
from migen import *

from litex.gen import LiteXModule

from cores.lib.counters import add_counters
from cores.lib.logic import xorshift32
from cores.rifl.common import CHANNEL_COUNTERS, check_frame_bits

ERROR_BURST_MAX = 12   # bursts up to the CRC degree are always detected


class RIFLChannel(LiteXModule):
    """One direction of a serial link, carrying one F-bit frame a cycle.

    latency: cycles from sink_frame to source_frame (0 = combinational).
    Error model (per frame, hardware PRNG): each cycle a 32-bit xorshift draw below `threshold`
    corrupts the frame: `burst` consecutive bits (1..12, 0 counts as 1) are inverted at a random position
    (wrapping inside the frame). For a bit error rate p the per-frame threshold is 2^32 (1 - (1 - p)^F):
    a frame with two or more independent bit errors (probability about (pF)^2 / 2) is modelled as one.
    `down` replaces every frame by zeros (loss of signal: invalid sync headers).
    Counters (CHANNEL_COUNTERS, `counters[name]`): errors (corrupted frames).
    with_slip: the line is no longer frame-aligned: the output is the bit stream delayed by `slip` bits
    (0..F-1), taken from the last two frames; changing `slip` repeats or drops bits (a bit slip).
    """
    def __init__(self, frame_bits, latency=0, seed=1, with_slip=False):
        check_frame_bits(frame_bits)
        if not isinstance(latency, int) or latency < 0:
            raise ValueError(f"latency must be a non-negative number of cycles, got {latency!r}")
        if not 0 < seed < 2**32:
            raise ValueError("seed must be a non-zero 32-bit value")
        F = frame_bits
        self.sink_frame = Signal(F)
        self.source_frame = Signal(F)
        self.threshold = Signal(32)
        self.burst = Signal(4)
        self.down = Signal()

        # # #

        # Delay line.
        delayed = Signal(F)
        if latency == 0:
            self.comb += delayed.eq(self.sink_frame)
        elif latency <= 4:
            stages = [self.sink_frame] + [Signal(F) for _ in range(latency - 1)] + [delayed]
            self.sync += [stages[k + 1].eq(stages[k]) for k in range(latency)]
        else:
            mem = Memory(F, latency - 1)
            port = mem.get_port(write_capable=True, async_read=True)
            self.specials += mem, port
            ptr = Signal(max=latency)
            self.comb += [port.adr.eq(ptr), port.dat_w.eq(self.sink_frame), port.we.eq(1)]
            self.sync += [
                If(ptr == latency - 2, ptr.eq(0)).Else(ptr.eq(ptr + 1)),
                delayed.eq(port.dat_r),
            ]

        # PRNGs: one draw decides, another places the error.
        rng_hit = Signal(32, reset=seed)
        rng_pos = Signal(32, reset=(seed * 0x9E3779B1) % 2**32 or 1)
        self.sync += [rng_hit.eq(xorshift32(self, rng_hit)), rng_pos.eq(xorshift32(self, rng_pos))]

        # The error of the next cycle is computed and registered from the PRNG state.
        hit = Signal()
        self.comb += hit.eq(rng_hit < self.threshold)
        nburst = Signal(4)
        self.comb += If((self.burst == 0), nburst.eq(1)).Elif(self.burst > ERROR_BURST_MAX,
            nburst.eq(ERROR_BURST_MAX)).Else(nburst.eq(self.burst))
        ones = Signal(ERROR_BURST_MAX)
        self.comb += Case(nburst, {k: ones.eq((1 << k) - 1) for k in range(1, ERROR_BURST_MAX + 1)})
        pos = rng_pos[:log2_int(F)]
        shifted = Cat(ones, C(0, 2 * F - ERROR_BURST_MAX)) << pos
        errmask = Signal(F)
        self.sync += errmask.eq(Mux(hit, shifted[:F] | shifted[F:2 * F], 0))
        line = Signal(F)
        self.comb += line.eq(Mux(self.down, 0, delayed ^ errmask))
        if with_slip:
            self.slip = Signal(max=F)
            prev = Signal(F)
            self.sync += prev.eq(line)
            self.comb += self.source_frame.eq((Cat(line, prev) >> self.slip)[:F])
        else:
            self.comb += self.source_frame.eq(line)
        add_counters(self, CHANNEL_COUNTERS, {"errors": (errmask != 0) & ~self.down})

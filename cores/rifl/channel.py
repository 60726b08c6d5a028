"""Simulation channel for RIFL: fixed latency, error bursts or independent bit errors, forced undetectable
errors, link down."""
from functools import reduce
from operator import xor

from migen import *

from litex.gen import LiteXModule

from cores.lib.counters import add_counters
from cores.lib.logic import xorshift32
from cores.rifl.common import (CHANNEL_COUNTERS, CHANNEL_RANDOM, CHANNEL_RANDOM_MAX_BITS, CHECK_BITS, CRC12_POLY,
                               SYNC_DATA, check_frame_bits)
from cores.rifl.link import crc12_bits

ERROR_BURST_MAX = 12   # bursts up to the CRC degree are always detected


def forced_codeword(frame_bits):
    """The error pattern `force` applies: the CRC-12 generator moved into the payload (bits 20..32 of the
    frame), a codeword, so the frame still passes its check with one payload byte pair changed."""
    check_frame_bits(frame_bits)
    return ((1 << CHECK_BITS) | CRC12_POLY) << (CHECK_BITS + 8)


class RIFLChannel(LiteXModule):
    """One direction of a serial link, carrying one F-bit frame a cycle.

    latency: cycles from sink_frame to source_frame (0 = combinational).
    Error models (`mode`, hardware PRNGs, one draw a frame):
    * CHANNEL_BURST: a draw below `threshold` corrupts the frame: `burst` consecutive bits (1..12, 0 counts
      as 1) are inverted at a random position (wrapping inside the frame). For a bit error rate p the
      threshold is software.rifl.demo.frame_error_threshold(p, F): a frame with two or more bit errors is modelled as one burst,
      which CRC-12 always detects.
    * CHANNEL_RANDOM: independent bit errors. The draw gives the number K of bit errors of the frame (K >= k
      when it is below `thresholds[k-1]`; at most CHANNEL_RANDOM_MAX_BITS), each at
      its own random position (two errors drawn at one position cancel); software.rifl.demo.random_thresholds.
    `force`: the next data frame gets forced_codeword(F), an undetectable error. `down` replaces every frame
    by zeros (loss of signal: invalid sync headers).
    Counters (CHANNEL_COUNTERS, `counters[name]`): errors (corrupted frames), bit_errors (bits inverted),
    undetected (frames whose error pattern is a CRC-12 codeword: its syndrome, linear in the pattern, is 0;
    counted one cycle after the frame).
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
        K = CHANNEL_RANDOM_MAX_BITS
        self.sink_frame = Signal(F)
        self.source_frame = Signal(F)
        self.mode = Signal()
        self.threshold = Signal(32)
        self.burst = Signal(4)
        self.thresholds = [Signal(32, name=f"threshold{k + 1}") for k in range(K)]
        self.force = Signal()
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

        # PRNGs: one draw decides, the others place the errors.
        def prng(k):
            rng = Signal(32, reset=(seed * (0x9E3779B1 + 2 * (k - 1))) % 2**32 or 1 if k else seed)
            self.sync += rng.eq(xorshift32(self, rng))
            return rng
        rng_hit = prng(0)
        rng_pos = [prng(k + 1) for k in range(K)]
        pos = [r[:log2_int(F)] for r in rng_pos]

        # The error of the next cycle is computed and registered from the PRNG state.
        # Burst model.
        hit = Signal()
        self.comb += hit.eq(rng_hit < self.threshold)
        nburst = Signal(4)
        self.comb += If((self.burst == 0), nburst.eq(1)).Elif(self.burst > ERROR_BURST_MAX,
            nburst.eq(ERROR_BURST_MAX)).Else(nburst.eq(self.burst))
        ones = Signal(ERROR_BURST_MAX)
        self.comb += Case(nburst, {k: ones.eq((1 << k) - 1) for k in range(1, ERROR_BURST_MAX + 1)})
        shifted = Cat(ones, C(0, 2 * F - ERROR_BURST_MAX)) << pos[0]
        # Random model: K >= k + 1 for every threshold above the draw.
        more = [Signal(name=f"more{k + 1}") for k in range(K)]
        self.comb += [more[k].eq(rng_hit < self.thresholds[k]) for k in range(K)]
        flips = [Mux(more[k], C(1, F) << pos[k], 0) for k in range(K)]
        errmask = Signal(F)
        nbits = Signal(max=max(K, ERROR_BURST_MAX) + 1)
        self.sync += [
            If(self.mode == CHANNEL_RANDOM,
                errmask.eq(reduce(xor, flips)),
                nbits.eq(sum(more)),
            ).Else(
                errmask.eq(Mux(hit, shifted[:F] | shifted[F:2 * F], 0)),
                nbits.eq(Mux(hit, nburst, 0)),
            ),
        ]
        # Forced codeword on the next data frame (sync header bits are sent in clear).
        pending = Signal()
        forced = Signal()
        self.comb += forced.eq(pending & (delayed[F - 2:] == SYNC_DATA) & ~self.down)
        self.sync += If(self.force, pending.eq(1)).Elif(forced, pending.eq(0))
        error = Signal(F)
        self.comb += error.eq(errmask ^ Mux(forced, forced_codeword(F), 0))
        line = Signal(F)
        self.comb += line.eq(Mux(self.down, 0, delayed ^ error))
        if with_slip:
            self.slip = Signal(max=F)
            prev = Signal(F)
            self.sync += prev.eq(line)
            self.comb += self.source_frame.eq((Cat(line, prev) >> self.slip)[:F])
        else:
            self.comb += self.source_frame.eq(line)

        # Undetectable errors: the syndrome of the error pattern alone (CRC of its body XOR its check bits).
        err_q = Signal()
        syn_q = Signal(CHECK_BITS)
        self.sync += [
            err_q.eq((error != 0) & ~self.down),
            *[syn_q[k].eq(bit ^ error[k]) for k, bit in enumerate(crc12_bits(error[CHECK_BITS:]))],
        ]
        add_counters(self, CHANNEL_COUNTERS, {
            "errors": (error != 0) & ~self.down,
            "bit_errors": Mux(self.down, 0, nbits + Mux(forced, bin(forced_codeword(F)).count("1"), 0)),
            "undetected": err_q & (syn_q == 0),
        })

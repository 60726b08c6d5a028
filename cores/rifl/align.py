"""RIFL bit alignment: finds the frame boundary in a line that is shifted by an arbitrary number of bits."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStatus, CSRField

from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import (
    ALIGN_COUNTERS, ALIGN_LOCK_FRAMES, ALIGN_UNLOCK_FRAMES, CHECK_BITS, CTRL_FC, CTRL_HEADER, CTRL_IDLE, CTRL_PAUSE,
    CTRL_PAYLOAD_BITS, CTRL_REPLAY, CTRL_RETRANS, SYNC_CTRL, SYNC_DATA, check_frame_bits, payload_bits, scrambler_mask)
from cores.rifl.link import crc12_bits

ALIGNER_LATENCY = 2    # cycles from rx_bits to rx_frame (the window register, the output register)
OFFSET_CYCLES = 3      # cycles an offset is tried for while hunting (the window, the check, the decision)


class RIFLAligner(LiteXModule):
    """Bit aligner between a line of F-bit words at an unknown bit offset (`rx_bits`, MSB first, e.g. a
    SERDES gearbox) and RIFLEndpoint.rx_frame (`rx_frame`).

    The frame is taken at bit offset `offset` from the last two words. Hunting: an offset is kept while
    its frames are intact unnumbered control frames (sync 10, meta 00, known code, zero payload tail,
    CRC syndrome 0: at least 29 checked bits at F = 64) and locked after `lock_frames` of them in a row,
    else the next offset is tried (OFFSET_CYCLES = 3 cycles an offset: the window register, the check
    register, the decision); while hunting `rx_frame` is 0 (no signal), so the endpoint sends PAUSE and the
    remote answers with control frames only, which is what the hunt recognises. Locked: `unlock_frames` bad
    frames in a row (invalid sync header, or an unnumbered control frame failing its check) restart the hunt.
    Latency: ALIGNER_LATENCY = 2 cycles (window, register); one frame a cycle. A full sweep takes 3F cycles.
    """
    def __init__(self, frame_bits=256, lock_frames=ALIGN_LOCK_FRAMES, unlock_frames=ALIGN_UNLOCK_FRAMES,
                 with_csr=False):
        check_frame_bits(frame_bits)
        for name, v in (("lock_frames", lock_frames), ("unlock_frames", unlock_frames)):
            if not isinstance(v, int) or not 1 <= v <= 255:
                raise ValueError(f"{name} must be 1..255 frames, got {v!r}")
        F = frame_bits
        pbits = payload_bits(F)
        self.rx_bits = Signal(F)
        self.rx_frame = Signal(F)
        self.locked = Signal()
        self.offset = Signal(max=F)

        # # #

        prev = Signal(F)
        sel = Signal(F)
        sel_offset = Signal(max=F)
        self.sync += [
            prev.eq(self.rx_bits),
            sel.eq((Cat(self.rx_bits, prev) >> self.offset)[:F]),
            sel_offset.eq(self.offset),
        ]
        # Checks on the selected frame.
        body = Signal(F - CHECK_BITS)
        self.comb += body.eq(sel[CHECK_BITS:] ^ scrambler_mask(pbits))
        syn = Signal(CHECK_BITS)
        self.comb += [syn[k].eq(bit ^ sel[k]) for k, bit in enumerate(crc12_bits(body))]
        sync = body[-2:]
        meta = body[pbits:pbits + 2]
        code = CTRL_HEADER.field(body[pbits - CTRL_HEADER.bits:pbits], "code")
        unnumbered = Signal()
        intact = Signal()
        bad = Signal()
        self.comb += [
            unnumbered.eq((sync == SYNC_CTRL) & (code != CTRL_FC)),
            intact.eq(unnumbered & (meta == 0) & (syn == 0) & (body[:pbits - CTRL_PAYLOAD_BITS] == 0) &
                      ((code == CTRL_IDLE) | (code == CTRL_PAUSE) | (code == CTRL_RETRANS) | (code == CTRL_REPLAY))),
            bad.eq(((sync != SYNC_CTRL) & (sync != SYNC_DATA)) | (unnumbered & (syn != 0))),
            self.rx_frame.eq(Mux(self.locked, sel, 0)),
        ]
        # the checks registered (the CRC syndrome is the deep part), with the offset they are of
        chk_intact, chk_bad, chk_offset = Signal(), Signal(), Signal(max=F)
        self.sync += [chk_intact.eq(intact), chk_bad.eq(bad), chk_offset.eq(sel_offset)]
        good = Signal(max=lock_frames + 1)
        nbad = Signal(max=unlock_frames + 1)
        trying = Signal()    # hunting, and the checks are of the offset under test
        self.comb += trying.eq(~self.locked & (chk_offset == self.offset))
        self.sync += [
            If(~self.locked,
                If(trying,
                    If(chk_intact,
                        If(good == lock_frames - 1,
                            self.locked.eq(1), good.eq(0), nbad.eq(0),
                        ).Else(
                            good.eq(good + 1),
                        ),
                    ).Else(
                        good.eq(0),
                        If(self.offset == F - 1, self.offset.eq(0)).Else(self.offset.eq(self.offset + 1)),
                    ),
                ),
            ).Else(
                If(chk_bad,
                    If(nbad == unlock_frames - 1,
                        self.locked.eq(0), nbad.eq(0),
                    ).Else(
                        nbad.eq(nbad + 1),
                    ),
                ).Else(
                    nbad.eq(0),
                ),
            ),
        ]
        add_counters(self, ALIGN_COUNTERS, {
            "slips": trying & ~chk_intact,
            "locks": trying & chk_intact & (good == lock_frames - 1),
            "unlocks": self.locked & chk_bad & (nbad == unlock_frames - 1),
        })

        if with_csr:
            self._status = CSRStatus(fields=[
                CSRField("locked", size=1, description="a bit offset is locked"),
                CSRField("offset", size=bits_for(F - 1), offset=8, description="bit offset in use or being tried"),
            ])
            self.comb += [self._status.fields.locked.eq(self.locked), self._status.fields.offset.eq(self.offset)]
            add_counter_csrs(self, ALIGN_COUNTERS)

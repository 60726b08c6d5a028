"""RIFL Layer 1 receiver (RIFLReceiver): the frame check (RIFLFrameCheck: descrambler, CRC syndrome, decoding),
the decision, the receive buffer with the flow-control hysteresis (RIFLReceiveBuffer) and the link state
(RIFLLinkState: alignment, remote up)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.buffers import BlockRAMFIFO
from cores.lib.counters import add_counters
from cores.rifl.common import (
    ALIGN_DOWN_FRAMES, ALIGN_UP_FRAMES, CHECK_BITS, CTRL_FC, CTRL_HEADER, CTRL_IDLE, CTRL_PAUSE, CTRL_REPLAY,
    CTRL_RETRANS, EP_RX_COUNTERS, FC_LAYOUT, FC_OFF_DEN, FC_OFF_NUM, FC_ON_DEN, FC_ON_NUM, LINK_FC_CHANNEL,
    META_ALL_VALID, META_EOP, RX_CRC_PARTS, SEQ_BITS, SYNC_CTRL, SYNC_DATA, payload_bytes, scrambler_mask,
    user_layout)
from cores.rifl.link.crc import crc12_parts, xor_tree


def _ctrl_fields(payload):
    """The CTRL_HEADER fields of a control payload."""
    top = payload[len(payload) - CTRL_HEADER.bits:]
    return {name: CTRL_HEADER.field(top, name) for name in CTRL_HEADER.order}


class RIFLLinkState(LiteXModule):
    """The link state of a receiver. rx_aligned: set by a valid sync header (sync_valid) after ALIGN_UP_FRAMES
    valid ones in a row, cleared by ALIGN_DOWN_FRAMES invalid ones in a row. remote_up: set by any intact
    frame (~fail) but PAUSE (pause), cleared by a PAUSE or while not aligned. link_up = rx_aligned & remote_up,
    one cycle later; `down`: it goes down in this cycle's edge."""
    def __init__(self):
        self.sync_valid = Signal()
        self.pause = Signal()
        self.fail = Signal()
        self.rx_aligned = Signal()
        self.remote_up = Signal()
        self.link_up = Signal()
        self.down = Signal()

        # # #

        good = Signal(max=ALIGN_UP_FRAMES + 1)
        bad = Signal(max=ALIGN_DOWN_FRAMES + 1)
        self.sync += [
            If(self.sync_valid,
                bad.eq(0),
                If(good == ALIGN_UP_FRAMES, self.rx_aligned.eq(1)).Else(good.eq(good + 1)),
            ).Else(
                good.eq(0),
                If(bad == ALIGN_DOWN_FRAMES - 1, self.rx_aligned.eq(0)).Else(bad.eq(bad + 1)),
            ),
            If(~self.rx_aligned | self.pause,
                self.remote_up.eq(0),
            ).Elif(~self.fail,
                self.remote_up.eq(1),
            ),
            self.link_up.eq(self.rx_aligned & self.remote_up),
        ]
        self.comb += self.down.eq(self.link_up & ~(self.rx_aligned & self.remote_up))


class RIFLFrameCheck(LiteXModule):
    """Stages A to C of a receiver: stage A registers rx_frame, stage B descrambles it and computes the CRC
    syndrome in RX_CRC_PARTS registered parts (the check bits XOR'd into the first), stage C joins them,
    decodes the frame and compares syndrome and id with rx_seq and rx_seq + 1 (rx_seq moves on by at most one
    a frame: the decision picks the comparison with the rx_seq it has).

    Parameters: frame_bits F. Input rx_seq: the id of the next frame expected; rx_seq_next = rx_seq + 1.
    Outputs, registered (stage C): body (the descrambled CRC-covered body), sync_valid (a valid sync header),
    numbered frames data and fc (intact if the syndrome is their id), numbered = data | fc; the intact
    unnumbered ones idle, pause, retrans, marker (REPLAY), unnum_ok = any of them; disturbs (an intact
    RETRANS, or an intact unnumbered frame with `recovering` set); syn_eq, seq_eq: [0] syndrome / id field ==
    rx_seq, [1] == rx_seq + 1. Latency: 3 cycles.
    """
    def __init__(self, frame_bits):
        F = frame_bits
        pbits = 8 * payload_bytes(F)
        bbits = F - CHECK_BITS
        self.rx_frame = Signal(F)
        self.rx_seq = rx_seq = Signal(SEQ_BITS)
        self.rx_seq_next = rx_seq_next = Signal(SEQ_BITS)
        self.body = Signal(bbits)
        self.sync_valid = Signal()
        self.data = Signal()
        self.fc = Signal()
        self.numbered = Signal()
        self.idle = Signal()
        self.pause = Signal()
        self.retrans = Signal()
        self.marker = Signal()
        self.unnum_ok = Signal()
        self.disturbs = Signal()
        self.syn_eq = Signal(2)
        self.seq_eq = Signal(2)

        # # #

        # Stage A: register the line.
        mask = scrambler_mask(pbits)
        ra = Signal(F)
        self.sync += ra.eq(self.rx_frame)
        # Stage B: descramble; the CRC in RX_CRC_PARTS registered parts (the check bits in the first).
        b_body = Signal(bbits)
        b_parts = [Signal(CHECK_BITS) for _ in range(RX_CRC_PARTS)]
        b_syn = Signal(CHECK_BITS)
        rx_body_a = Signal(bbits)
        self.comb += rx_body_a.eq(ra[CHECK_BITS:] ^ mask)
        parts = crc12_parts(rx_body_a, RX_CRC_PARTS)
        self.sync += [
            b_body.eq(rx_body_a),
            *[b_parts[0][k].eq(bit ^ ra[k]) for k, bit in enumerate(parts[0])],
            *[b_parts[p][k].eq(bit) for p in range(1, RX_CRC_PARTS) for k, bit in enumerate(parts[p])],
        ]
        self.comb += b_syn.eq(xor_tree(b_parts))
        # Stage C: decode the frame, compare syndrome and id with rx_seq and rx_seq + 1.
        b_f = _ctrl_fields(b_body[:pbits])
        b_sync = b_body[bbits - 2:]
        b_ctrl = b_sync == SYNC_CTRL
        b_unnum = b_ctrl & (b_syn == 0)
        self.comb += rx_seq_next.eq(rx_seq + 1)
        self.sync += [
            self.body.eq(b_body),
            self.sync_valid.eq((b_sync == SYNC_DATA) | b_ctrl),
            self.data.eq(b_sync == SYNC_DATA),
            self.fc.eq(b_ctrl & (b_f["code"] == CTRL_FC)),
            self.idle.eq(b_unnum & (b_f["code"] == CTRL_IDLE)),
            self.pause.eq(b_unnum & (b_f["code"] == CTRL_PAUSE)),
            self.retrans.eq(b_unnum & (b_f["code"] == CTRL_RETRANS)),
            self.marker.eq(b_unnum & (b_f["code"] == CTRL_REPLAY)),
            self.numbered.eq((b_sync == SYNC_DATA) | (b_ctrl & (b_f["code"] == CTRL_FC))),
            self.unnum_ok.eq(b_unnum & ((b_f["code"] == CTRL_IDLE) | (b_f["code"] == CTRL_PAUSE) |
                                        (b_f["code"] == CTRL_RETRANS) | (b_f["code"] == CTRL_REPLAY))),
            self.disturbs.eq(b_unnum & ((b_f["code"] == CTRL_RETRANS) | b_f["recovering"])),
            self.syn_eq.eq(Cat(b_syn == rx_seq, b_syn == rx_seq_next)),
            self.seq_eq.eq(Cat(b_f["seq"] == rx_seq, b_f["seq"] == rx_seq_next)),
        ]


class RIFLReceiveBuffer(LiteXModule):
    """The receive buffer of a receiver: a BlockRAMFIFO of rx_depth user beats, with the flow-control hysteresis
    fc_want (set above 2/3, cleared below 1/3 of rx_depth).

    Parameters: frame_bits F, rx_depth, ce (as for RIFLTransmitter, for the FIFO's read registers). Input: we
    (write the frame of payload and meta; ready: there is room). source: user_layout(F), the payload's bytes
    (sent MSB first) as data bytes 0 up, nbytes from meta (P if all valid, else the last payload byte), last
    from meta. Latency: 4 cycles (the BlockRAMFIFO).
    """
    def __init__(self, frame_bits, rx_depth, ce=None):
        P = payload_bytes(frame_bits)
        pbits = 8 * P
        self.we = Signal()
        self.payload = payload = Signal(pbits)
        self.meta = meta = Signal(2)
        self.ready = Signal()
        self.source = stream.Endpoint(user_layout(frame_bits))
        self.fc_want = Signal()

        # # #

        self.fifo = fifo = BlockRAMFIFO(user_layout(frame_bits), rx_depth, re=ce)
        self.comb += fifo.source.connect(self.source)
        rx_bytes = [payload[pbits - 8 * (k + 1):pbits - 8 * k] for k in range(P)]
        self.comb += [
            fifo.sink.valid.eq(self.we),
            self.ready.eq(fifo.sink.ready),
            fifo.sink.data.eq(Cat(*rx_bytes)),
            fifo.sink.nbytes.eq(Mux(meta & META_ALL_VALID, P, rx_bytes[P - 1])),
            fifo.sink.last.eq((meta & META_EOP) != 0),
        ]
        hi = rx_depth * FC_ON_NUM // FC_ON_DEN
        lo = rx_depth * FC_OFF_NUM // FC_OFF_DEN
        self.sync += If(fifo.level > hi, self.fc_want.eq(1)).Elif(fifo.level < lo, self.fc_want.eq(0))


class RIFLReceiver(LiteXModule):
    """The receive half of an endpoint. Stages A to C (submodule `check`, RIFLFrameCheck) register rx_frame,
    descramble it, compute the CRC syndrome, decode the frame and compare syndrome and id with rx_seq (and
    rx_seq + 1); stage D decides: a numbered frame whose syndrome is the expected id rx_seq is accepted
    (data into the receive buffer, flow control into remote_xoff); an intact IDLE/PAUSE/RETRANS/REPLAY frame is
    processed; anything else, or an IDLE/REPLAY announcing another id, starts a recovery (`recovering`),
    during which numbered frames are accepted only right after a REPLAY marker for rx_seq.

    Parameters: frame_bits F; rx_depth: receive buffer (frames; submodule `buffer`, RIFLReceiveBuffer), with
    the flow-control hysteresis fc_want (ON above 2/3, OFF below 1/3 of it). fc_source: every accepted
    flow-control frame (FC_LAYOUT, a one-cycle pulse: the user is always ready); the link-level ones (channel
    LINK_FC_CHANNEL) also set and clear remote_xoff. Link state (submodule `state`, RIFLLinkState): rx_aligned
    (sync headers), remote_up (intact non-PAUSE frames), link_up. To the replay control: retrans / retrans_seq
    (an intact RETRANS and its id) and disturbed (anything that stops the confirmation by time). source:
    user_layout(F). ce: as for RIFLTransmitter, for the receive buffer. seq_start: rx_seq at reset (as
    RIFLEndpoint's). Latency: 4 cycles plus the receive buffer (a BlockRAMFIFO, 4).
    """
    def __init__(self, frame_bits, rx_depth, ce=None, seq_start=0):
        F = frame_bits
        pbits = 8 * payload_bytes(F)
        self.rx_frame = Signal(F)
        self.source = source = stream.Endpoint(user_layout(F))
        self.fc_source = fc_source = stream.Endpoint(FC_LAYOUT)
        self.link_up = Signal()
        self.rx_aligned = Signal()
        self.remote_up = Signal()
        self.recovering = Signal()
        self.remote_xoff = Signal()
        self.rx_seq = rx_seq = Signal(SEQ_BITS, reset=seq_start)     # id of the next frame expected
        self.fc_want = Signal()                     # the receive buffer wants the remote paused
        self.retrans = Signal()
        self.retrans_seq = Signal(SEQ_BITS)
        self.disturbed = Signal()

        # # #

        # Stages A to C: descramble, CRC syndrome, decode, compare with rx_seq and rx_seq + 1.
        self.check = check = RIFLFrameCheck(F)
        self.comb += check.rx_frame.eq(self.rx_frame), check.rx_seq.eq(rx_seq)
        # Stage D: decide.
        moved = Signal()     # rx_seq moved on at the last edge
        syn_ok, seq_ok = Signal(), Signal()
        self.comb += [
            syn_ok.eq(Mux(moved, check.syn_eq[1], check.syn_eq[0])),
            seq_ok.eq(Mux(moved, check.seq_eq[1], check.seq_eq[0])),
        ]
        meta = check.body[pbits:pbits + 2]
        payload = check.body[:pbits]
        f = _ctrl_fields(payload)
        ok_data, ok_fc = Signal(), Signal()
        fail = Signal()
        self.comb += [
            ok_data.eq(check.data & syn_ok),
            ok_fc.eq(check.fc & syn_ok),
            fail.eq(~((check.numbered & syn_ok) | check.unnum_ok)),
            self.retrans.eq(check.retrans),
            self.retrans_seq.eq(f["seq"]),
            self.disturbed.eq(fail | check.disturbs | self.recovering | ~self.link_up),
        ]

        armed = Signal()     # recovering receiver saw the REPLAY marker for its expected id
        accept = Signal()    # numbered frames may be accepted now

        # Receive buffer.
        self.buffer = buffer = RIFLReceiveBuffer(F, rx_depth, ce)
        self.comb += [
            buffer.we.eq(ok_data & accept), buffer.payload.eq(payload), buffer.meta.eq(meta),
            buffer.source.connect(source), self.fc_want.eq(buffer.fc_want),
        ]
        # An IDLE announcing more frames than we received, or a replay that does not start at the expected
        # id, means something is missing or stale: recover.
        gap = Signal()
        self.comb += gap.eq((check.idle | check.marker) & ~seq_ok)
        # While recovering, numbered frames are accepted only right after a REPLAY marker for the expected
        # id (armed; any failure disarms). Frames that overtook the error could otherwise pass the check
        # when a line error happens to turn their id into the expected one (the id is XOR'd into the CRC).
        self.comb += accept.eq(~self.recovering | armed)
        fc_on = f["fc_on_valid"] & (f["fc_on_channel"] == LINK_FC_CHANNEL)
        self.sync += [
            moved.eq(0),
            If(fail | gap,
                self.recovering.eq(1), armed.eq(0),
            ).Elif((ok_data | ok_fc) & ~accept,
                # not armed: the frame is dropped (counted in rx_discarded)
            ).Elif(ok_data,
                armed.eq(0),
                If(buffer.ready,
                    rx_seq.eq(check.rx_seq_next), moved.eq(1), self.recovering.eq(0),
                ).Else(
                    self.recovering.eq(1),
                ),
            ).Elif(ok_fc,
                armed.eq(0),
                rx_seq.eq(check.rx_seq_next), moved.eq(1), self.recovering.eq(0),
                If(fc_on,
                    self.remote_xoff.eq(1),
                ).Elif(f["fc_off_valid"] & (f["fc_off_channel"] == LINK_FC_CHANNEL),
                    self.remote_xoff.eq(0),
                ),
            ).Elif(check.idle,
                self.recovering.eq(0), armed.eq(0),
            ).Elif(check.marker,
                armed.eq(1),
            ),
        ]
        # A numbered frame with the expected id, right after fail | gap (which it excludes) in the decision.
        in_order = accept & (ok_data | ok_fc)
        link_level = Signal()
        self.comb += [
            link_level.eq((~f["fc_on_valid"] | (f["fc_on_channel"] == LINK_FC_CHANNEL)) &
                          (~f["fc_off_valid"] | (f["fc_off_channel"] == LINK_FC_CHANNEL))),
            fc_source.valid.eq(in_order & ok_fc),
            *[getattr(fc_source, name).eq(f["fc_" + name]) for name, _ in FC_LAYOUT],
        ]

        # Alignment (sync headers) and link state.
        self.state = state = RIFLLinkState()
        self.comb += [
            state.sync_valid.eq(check.sync_valid), state.pause.eq(check.pause), state.fail.eq(fail),
            self.rx_aligned.eq(state.rx_aligned), self.remote_up.eq(state.remote_up), self.link_up.eq(state.link_up),
        ]
        add_counters(self, EP_RX_COUNTERS, {
            "rx_frames": in_order & (ok_fc | buffer.ready),
            "rx_errors": self.link_up & (fail | gap) & ~self.recovering,
            "rx_discarded": self.link_up & (((fail | gap) & self.recovering) | ((ok_data | ok_fc) & ~accept)),
            "rx_overflow": in_order & ok_data & ~buffer.ready,
            "fc_on_rcvd": in_order & ok_fc & fc_on,
            "fc_voq_rcvd": fc_source.valid & ~link_level,
            "link_downs": state.down,
        })

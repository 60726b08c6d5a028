"""RIFL Layer 1 endpoint: framer, verification, NACK replay, link bring-up and ON/OFF flow control.

RIFLEndpoint is three submodules: RIFLTransmitter (slot choice, replay buffer, CRC, scrambler), RIFLReceiver
(checks, decision, receive buffer, flow-control hysteresis; its RIFLLinkState: alignment and link state) and
RIFLReplayControl (send pointer, RETRANS handling, hold-off, confirmation window).
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStatus, CSRField

from cores.lib.block_ram import BlockRAM
from cores.lib.buffers import BlockRAMFIFO
from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import (
    ALIGN_DOWN_FRAMES, ALIGN_UP_FRAMES, CHECK_BITS, RX_CRC_PARTS, CRC12_POLY, CTRL_FC, CTRL_HEADER, CTRL_IDLE,
    CTRL_PAUSE, CTRL_REPLAY, CTRL_RETRANS, EP_COUNTERS, FC_LAYOUT, EP_REPLAY_COUNTERS, EP_RX_COUNTERS, EP_TX_COUNTERS,
    FC_OFF_DEN, FC_OFF_NUM, FC_ON_DEN, FC_ON_NUM, LINK_FC_CHANNEL, META_ALL_VALID, META_EOP, SEQ_BITS, SYNC_CTRL, SYNC_DATA, check_frame_bits,
    holdoff_cycles, payload_bytes, replay_log2, rx_depth_for, rx_depth_min, scrambler_mask, user_layout)

STATUS = [
    ("link_up", "link up: aligned and the remote hears us"),
    ("rx_aligned", "receiver sees valid sync headers"),
    ("remote_up", "remote is not sending PAUSE"),
    ("recovering", "receiver is waiting for a replay"),
    ("remote_xoff", "remote asked us to pause (flow control ON)"),
]


def crc12_matrix(nbits):
    """For each CRC bit, the input bit positions (bit 0 = last bit sent) that XOR into it."""
    cols, r = [], CRC12_POLY                   # r_i = x^(i+12) mod P: CRC of the unit vector at bit i
    for _ in range(nbits):
        cols.append(r)
        r = ((r << 1) ^ (CRC12_POLY if r & 0x800 else 0)) & 0xFFF
    return [[i for i in range(nbits) if (cols[i] >> b) & 1] for b in range(CHECK_BITS)]


def _xor_tree(terms):
    """Balanced XOR of a list of expressions."""
    while len(terms) > 1:
        terms = [terms[i] ^ terms[i + 1] if i + 1 < len(terms) else terms[i] for i in range(0, len(terms), 2)]
    return terms[0]


def crc12_bits(body):
    """CRC-12 of a Migen signal, MSB first: one XOR tree a bit (bit 0 first). Used in synchronous
    statements, one statement a bit, so the Migen simulator evaluates each tree once a cycle and the
    Verilog stays within tool line limits."""
    return [_xor_tree([body[i] for i in taps]) for taps in crc12_matrix(len(body))]


def crc12_parts(body, parts):
    """The XOR trees of crc12_bits, each split into `parts` trees over near-equal shares of its inputs:
    [[part p of CRC bit k for k in range(CHECK_BITS)] for p in range(parts)] (the CRC is their XOR)."""
    out = [[] for _ in range(parts)]
    for taps in crc12_matrix(len(body)):
        for p in range(parts):
            share = taps[p * len(taps) // parts:(p + 1) * len(taps) // parts]
            out[p].append(_xor_tree([body[i] for i in share]) if share else 0)
    return out


def _ctrl_payload(pbits, **fields):
    """Control payload: the CTRL_HEADER fields at the top of the payload, zeros below."""
    return Cat(C(0, pbits - CTRL_HEADER.bits), CTRL_HEADER.value(**fields))


def _seq_lt(module, a, b, limit):
    """(b - a) mod 2^SEQ_BITS in (0, limit)."""
    d = Signal(SEQ_BITS)
    module.comb += d.eq(b - a)
    return (d != 0) & (d < limit)


def _ctrl_fields(payload):
    """The CTRL_HEADER fields of a control payload."""
    top = payload[len(payload) - CTRL_HEADER.bits:]
    return {name: CTRL_HEADER.field(top, name) for name in CTRL_HEADER.order}


class RIFLTransmitter(LiteXModule):
    """The transmit half of an endpoint: chooses the frame of each slot, keeps new numbered frames in the
    replay buffer (2^log2n frames, at tx_seq) and puts body ^ scrambler mask and CRC ^ frame id on tx_frame.

    Slot priority: PAUSE (receiver not aligned) > IDLE (remote not up) > RETRANS (receiver recovering, every
    other slot) > REPLAY marker (marker_pending) > replay (rp != tx_seq) > flow-control frame (fc_want
    changed; window open) > per-VOQ flow-control frame (fc_sink; window open) > new data (window open, remote
    not paused) > IDLE, the window being open with fewer than 2^log2n - 2 unconfirmed frames a cycle before; with cc_interval, an IDLE goes before the replay and everything after it once
    cc_interval - 1 slots passed without one (clock compensation, cores.rifl.elastic). Inputs: the receiver's state
    (rx_aligned, remote_up, recovering, remote_xoff, rx_seq, fc_want) and the replay control's (rp, ack,
    marker_pending). Outputs: tx_seq (id of the next new numbered frame), advance (a numbered frame was sent
    at rp), marker_sent (a REPLAY marker was sent). sink: user_layout(F), one beat a slot. fc_sink: FC_LAYOUT
    frames of another flow-control user (a switch input's VOQs), each sent as one numbered FC frame.
    ce: the clock enable of a CEInserter around the transmitter, for the replay buffer's read registers
    (None: none). Latency: 4 cycles (select, replay-buffer read, body mux, CRC and scrambler).
    """
    def __init__(self, frame_bits, log2n, cc_interval=None, ce=None):
        if cc_interval is not None and (not isinstance(cc_interval, int) or cc_interval < 2):
            raise ValueError(f"cc_interval must be None or at least 2 slots, got {cc_interval!r}")
        F = frame_bits
        P = payload_bytes(F)
        pbits = 8 * P
        bbits = F - CHECK_BITS                      # CRC-covered body: sync, meta, payload
        self.sink = sink = stream.Endpoint(user_layout(F))
        self.fc_sink = fc_sink = stream.Endpoint(FC_LAYOUT)
        self.tx_frame = Signal(F)
        self.rx_aligned = Signal()
        self.remote_up = Signal()
        self.recovering = Signal()
        self.remote_xoff = Signal()
        self.rx_seq = Signal(SEQ_BITS)
        self.fc_want = Signal()
        self.rp = rp = Signal(SEQ_BITS)
        self.ack = ack = Signal(SEQ_BITS)
        self.marker_pending = Signal()
        self.tx_seq = tx_seq = Signal(SEQ_BITS)
        self.advance = Signal()
        self.marker_sent = Signal()

        # # #

        mask = scrambler_mask(pbits)
        toggle = Signal()
        fc_sent = Signal()           # last ON/OFF state sent
        self.sync += toggle.eq(~toggle)

        # Replay buffer.
        self.ram = ram = BlockRAM(bbits, 1 << log2n, ce)     # read data two cycles after the address

        # Stage 0: choose the slot.
        replaying = Signal()
        # The window is open with fewer than 2^log2n - 2 unconfirmed frames in the cycle before (a register:
        # tx_seq moves on by at most one a cycle and ack only forwards, so fewer than 2^log2n - 1 now).
        guard_ok = Signal(reset=1)
        sink_ok = Signal()
        link_fc = Signal()           # the link-level flow-control state to send changed
        up, retrans_slot = Signal(), Signal()
        self.comb += [
            up.eq(self.rx_aligned & self.remote_up),
            retrans_slot.eq(self.recovering & ~toggle),
            replaying.eq(rp != tx_seq),
            link_fc.eq(self.fc_want != fc_sent),
            # 1 <= nbytes <= P as a table of the few nbytes values (LUTs; yosys maps `<=` to a carry chain)
            Case(sink.nbytes, {k: sink_ok.eq(1) for k in range(1, P + 1)}),
        ]
        self.sync += guard_ok.eq((tx_seq - ack)[:SEQ_BITS] < (1 << log2n) - 2)
        sel_ctrl, sel_replay, sel_fc, sel_voq, sel_data = Signal(), Signal(), Signal(), Signal(), Signal()
        ctrl_code = Signal(4)
        cc_due = Signal()
        if cc_interval is not None:
            since_idle = Signal(max=cc_interval)
            self.sync += If(sel_ctrl & (ctrl_code == CTRL_IDLE), since_idle.eq(0)).Elif(
                since_idle != cc_interval - 1, since_idle.eq(since_idle + 1))
            self.comb += cc_due.eq(since_idle == cc_interval - 1)
        self.comb += [
            If(~self.rx_aligned,
                sel_ctrl.eq(1), ctrl_code.eq(CTRL_PAUSE),
            ).Elif(~self.remote_up,
                sel_ctrl.eq(1), ctrl_code.eq(CTRL_IDLE),
            ).Elif(retrans_slot,
                sel_ctrl.eq(1), ctrl_code.eq(CTRL_RETRANS),
            ).Elif(self.marker_pending,
                sel_ctrl.eq(1), ctrl_code.eq(CTRL_REPLAY),
            ).Elif(cc_due & ~replaying,
                sel_ctrl.eq(1), ctrl_code.eq(CTRL_IDLE),
            ).Elif(replaying,
                sel_replay.eq(1),
            ).Elif(link_fc & guard_ok,
                sel_fc.eq(1),
            ).Elif(fc_sink.valid & guard_ok,
                sel_fc.eq(1), sel_voq.eq(1),
            ).Elif(sink.valid & sink_ok & guard_ok & ~self.remote_xoff,
                sel_data.eq(1),
            ).Else(
                sel_ctrl.eq(1), ctrl_code.eq(CTRL_IDLE),
            ),
            sink.ready.eq(sel_data | (sink.valid & ~sink_ok)),
            fc_sink.ready.eq(sel_voq),
            self.advance.eq(sel_replay | sel_data | sel_fc),
            self.marker_sent.eq(sel_ctrl & (ctrl_code == CTRL_REPLAY)),
        ]
        # New data body.
        data_bytes = [sink.data[8 * k:8 * k + 8] for k in range(P)]
        all_valid = Signal()
        self.comb += all_valid.eq(sink.nbytes == P)
        data_payload = Cat(Mux(all_valid, data_bytes[P - 1], sink.nbytes), *reversed(data_bytes[:P - 1]))
        data_body = Cat(data_payload, all_valid, sink.last, C(SYNC_DATA, 2))
        # The new numbered frame if one goes out now: the link-level flow-control frame, else a per-VOQ one,
        # else data (the slot choice's order among them, without its other conditions).
        fc_first = Signal()
        self.comb += fc_first.eq(link_fc | fc_sink.valid)
        fc_body = Cat(_ctrl_payload(pbits, code=C(CTRL_FC, 4), seq=tx_seq,
                                    fc_on_valid=Mux(link_fc, self.fc_want, fc_sink.on_valid),
                                    fc_on_channel=Mux(link_fc, LINK_FC_CHANNEL, fc_sink.on_channel),
                                    fc_off_valid=Mux(link_fc, ~self.fc_want, fc_sink.off_valid),
                                    fc_off_channel=Mux(link_fc, LINK_FC_CHANNEL, fc_sink.off_channel)),
                      C(0, 2), C(SYNC_CTRL, 2))
        # The control frame's id field, from the slot conditions (RETRANS: rx_seq, REPLAY: rp, else tx_seq).
        ctrl_body = Cat(_ctrl_payload(pbits, code=ctrl_code,
                                      seq=Mux(up & retrans_slot, self.rx_seq,
                                              Mux(up & self.marker_pending, rp, tx_seq)),
                                      recovering=self.recovering),
                        C(0, 2), C(SYNC_CTRL, 2))
        new_body, s1_new = Signal(bbits), Signal(bbits)
        # The replay buffer takes the registered new_body (s1_new) at the registered tx_seq (s1_seq) every
        # cycle: the slot of frame s1_seq - 2^log2n, which the guard has confirmed; it keeps the frame once
        # tx_seq moves on. So the slot choice and the frame's fields stay off the block RAM's inputs. It reads at
        # rp, which meets the write when rp = s1_seq: no replay (rp = tx_seq, the read data is not used), or a
        # replay of the frame sent in the cycle before, which then is on the line two cycles later (s3_body):
        # `hit` keeps it there instead of taking the read data.
        s1_seq = Signal(log2n)
        hit, s1_hit, s2_hit = Signal(), Signal(), Signal()
        self.comb += [
            new_body.eq(Mux(fc_first, fc_body, data_body)),
            ram.adr_w.eq(s1_seq),
            ram.dat_w.eq(s1_new),
            ram.we.eq(1),
            ram.adr_r.eq(rp[:log2n]),
            hit.eq(rp[:log2n] == s1_seq),
        ]
        self.sync += s1_seq.eq(tx_seq[:log2n]), s1_hit.eq(hit), s2_hit.eq(s1_hit)
        # Stage 1 registers.
        s1_replay, s1_ctrl = Signal(), Signal()
        s1_ctrl_body = Signal(bbits)
        s1_id = Signal(SEQ_BITS)
        self.sync += [
            s1_replay.eq(sel_replay),
            s1_ctrl.eq(sel_ctrl),
            s1_new.eq(new_body),
            s1_ctrl_body.eq(ctrl_body),
            s1_id.eq(rp),
            If(sel_data | sel_fc, tx_seq.eq(tx_seq + 1)),
            If(sel_fc & ~sel_voq, fc_sent.eq(self.fc_want)),
        ]
        add_counters(self, EP_TX_COUNTERS, {
            "tx_frames": sel_data | sel_fc, "tx_replayed": sel_replay, "tx_ctrl": sel_ctrl,
            "tx_bad": sink.valid & ~sink_ok, "fc_on_sent": sel_fc & ~sel_voq & self.fc_want,
            "fc_off_sent": sel_fc & ~sel_voq & ~self.fc_want, "fc_voq_sent": sel_voq,
        })
        # Stage 1: the replay buffer reads; the control body or the new body (registered, so the slot choice
        # drives only 1-bit selects). Stage 2: the replay buffer's output (its output register) or that body.
        # Stage 3: CRC XOR frame id, scramble, onto the line.
        s2_replay, s2_body = Signal(), Signal(bbits)
        s2_id, s3_id = Signal(SEQ_BITS), Signal(SEQ_BITS)
        s3_body = Signal(bbits)
        self.sync += [
            s2_replay.eq(s1_replay),
            s2_body.eq(Mux(s1_ctrl, s1_ctrl_body, s1_new)),
            s2_id.eq(Mux(s1_ctrl, 0, s1_id)),
            If(~(s2_replay & s2_hit), s3_body.eq(Mux(s2_replay, ram.dat_r, s2_body))),
            s3_id.eq(s2_id),
            self.tx_frame[CHECK_BITS:].eq(s3_body ^ mask),
            *[self.tx_frame[k].eq(bit ^ s3_id[k]) for k, bit in enumerate(crc12_bits(s3_body))],
        ]


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


class RIFLReceiver(LiteXModule):
    """The receive half of an endpoint. Stage A registers rx_frame, stage B descrambles and computes the CRC
    syndrome in parts, stage C joins them, decodes the frame and compares syndrome and id with rx_seq (and
    rx_seq + 1), stage D decides: a numbered frame whose syndrome is the expected id rx_seq is accepted
    (data into the receive buffer, flow control into remote_xoff); an intact IDLE/PAUSE/RETRANS/REPLAY frame is
    processed; anything else, or an IDLE/REPLAY announcing another id, starts a recovery (`recovering`),
    during which numbered frames are accepted only right after a REPLAY marker for rx_seq.

    Parameters: frame_bits F; rx_depth: receive buffer (frames), with the flow-control hysteresis fc_want
    (ON above 2/3, OFF below 1/3 of it). fc_source: every accepted flow-control frame (FC_LAYOUT, a
    one-cycle pulse: the user is always ready); the link-level ones (channel LINK_FC_CHANNEL) also set and
    clear remote_xoff. Link state (submodule `state`, RIFLLinkState): rx_aligned (sync
    headers), remote_up (intact non-PAUSE frames), link_up. To the replay control: retrans / retrans_seq (an intact RETRANS and its id) and
    disturbed (anything that stops the confirmation by time). source: user_layout(F). ce: as for
    RIFLTransmitter, for the receive buffer. Latency: 4 cycles plus the receive buffer (a BlockRAMFIFO, 4).
    """
    def __init__(self, frame_bits, rx_depth, ce=None):
        F = frame_bits
        P = payload_bytes(F)
        pbits = 8 * P
        bbits = F - CHECK_BITS
        self.rx_frame = Signal(F)
        self.source = source = stream.Endpoint(user_layout(F))
        self.fc_source = fc_source = stream.Endpoint(FC_LAYOUT)
        self.link_up = Signal()
        self.rx_aligned = Signal()
        self.remote_up = Signal()
        self.recovering = Signal()
        self.remote_xoff = Signal()
        self.rx_seq = rx_seq = Signal(SEQ_BITS)     # id of the next frame expected
        self.fc_want = Signal()                     # the receive buffer wants the remote paused
        self.retrans = Signal()
        self.retrans_seq = Signal(SEQ_BITS)
        self.disturbed = Signal()

        # # #

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
        self.comb += b_syn.eq(_xor_tree(b_parts))
        # Stage C: decode the frame and compare syndrome and id with rx_seq and rx_seq + 1 (rx_seq moves on
        # by at most one a frame: stage D picks the comparison with the rx_seq it has, `moved`).
        b_f = _ctrl_fields(b_body[:pbits])
        b_sync = b_body[bbits - 2:]
        b_ctrl = b_sync == SYNC_CTRL
        b_unnum = b_ctrl & (b_syn == 0)
        rx_seq_next = Signal(SEQ_BITS)
        self.comb += rx_seq_next.eq(rx_seq + 1)
        c_body = Signal(bbits)
        c_sync_valid = Signal()
        c_data, c_fc = Signal(), Signal()                    # numbered: data, flow control (intact if syn_ok)
        c_idle, c_pause, c_retrans, c_marker = Signal(), Signal(), Signal(), Signal()    # intact unnumbered
        c_numbered, c_unnum_ok = Signal(), Signal()          # c_data | c_fc; any intact unnumbered frame
        c_disturbs = Signal()                                # RETRANS, or unnumbered with `recovering`
        c_syn_eq, c_seq_eq = Signal(2), Signal(2)            # [0]: == rx_seq, [1]: == rx_seq + 1
        self.sync += [
            c_body.eq(b_body),
            c_sync_valid.eq((b_sync == SYNC_DATA) | b_ctrl),
            c_data.eq(b_sync == SYNC_DATA),
            c_fc.eq(b_ctrl & (b_f["code"] == CTRL_FC)),
            c_idle.eq(b_unnum & (b_f["code"] == CTRL_IDLE)),
            c_pause.eq(b_unnum & (b_f["code"] == CTRL_PAUSE)),
            c_retrans.eq(b_unnum & (b_f["code"] == CTRL_RETRANS)),
            c_marker.eq(b_unnum & (b_f["code"] == CTRL_REPLAY)),
            c_numbered.eq((b_sync == SYNC_DATA) | (b_ctrl & (b_f["code"] == CTRL_FC))),
            c_unnum_ok.eq(b_unnum & ((b_f["code"] == CTRL_IDLE) | (b_f["code"] == CTRL_PAUSE) |
                                     (b_f["code"] == CTRL_RETRANS) | (b_f["code"] == CTRL_REPLAY))),
            c_disturbs.eq(b_unnum & ((b_f["code"] == CTRL_RETRANS) | b_f["recovering"])),
            c_syn_eq.eq(Cat(b_syn == rx_seq, b_syn == rx_seq_next)),
            c_seq_eq.eq(Cat(b_f["seq"] == rx_seq, b_f["seq"] == rx_seq_next)),
        ]
        # Stage D: decide.
        moved = Signal()     # rx_seq moved on at the last edge
        syn_ok, seq_ok = Signal(), Signal()
        self.comb += [syn_ok.eq(Mux(moved, c_syn_eq[1], c_syn_eq[0])), seq_ok.eq(Mux(moved, c_seq_eq[1], c_seq_eq[0]))]
        meta = c_body[pbits:pbits + 2]
        payload = c_body[:pbits]
        f = _ctrl_fields(payload)
        ok_data, ok_fc = Signal(), Signal()
        fail = Signal()
        self.comb += [
            ok_data.eq(c_data & syn_ok),
            ok_fc.eq(c_fc & syn_ok),
            fail.eq(~((c_numbered & syn_ok) | c_unnum_ok)),
            self.retrans.eq(c_retrans),
            self.retrans_seq.eq(f["seq"]),
            self.disturbed.eq(fail | c_disturbs | self.recovering | ~self.link_up),
        ]

        armed = Signal()     # recovering receiver saw the REPLAY marker for its expected id
        accept = Signal()    # numbered frames may be accepted now

        # Receive buffer.
        self.fifo = fifo = BlockRAMFIFO(user_layout(F), rx_depth, re=ce)
        self.comb += fifo.source.connect(source)
        rx_bytes = [payload[pbits - 8 * (k + 1):pbits - 8 * k] for k in range(P)]
        self.comb += [
            fifo.sink.valid.eq(ok_data & accept),
            fifo.sink.data.eq(Cat(*rx_bytes)),
            fifo.sink.nbytes.eq(Mux(meta & META_ALL_VALID, P, rx_bytes[P - 1])),
            fifo.sink.last.eq((meta & META_EOP) != 0),
        ]
        # An IDLE announcing more frames than we received, or a replay that does not start at the expected
        # id, means something is missing or stale: recover.
        gap = Signal()
        self.comb += gap.eq((c_idle | c_marker) & ~seq_ok)
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
                If(fifo.sink.ready,
                    rx_seq.eq(rx_seq_next), moved.eq(1), self.recovering.eq(0),
                ).Else(
                    self.recovering.eq(1),
                ),
            ).Elif(ok_fc,
                armed.eq(0),
                rx_seq.eq(rx_seq_next), moved.eq(1), self.recovering.eq(0),
                If(fc_on,
                    self.remote_xoff.eq(1),
                ).Elif(f["fc_off_valid"] & (f["fc_off_channel"] == LINK_FC_CHANNEL),
                    self.remote_xoff.eq(0),
                ),
            ).Elif(c_idle,
                self.recovering.eq(0), armed.eq(0),
            ).Elif(c_marker,
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

        # Flow control hysteresis on the receive buffer.
        hi = rx_depth * FC_ON_NUM // FC_ON_DEN
        lo = rx_depth * FC_OFF_NUM // FC_OFF_DEN
        self.sync += If(fifo.level > hi, self.fc_want.eq(1)).Elif(fifo.level < lo, self.fc_want.eq(0))

        # Alignment (sync headers) and link state.
        self.state = state = RIFLLinkState()
        self.comb += [
            state.sync_valid.eq(c_sync_valid), state.pause.eq(c_pause), state.fail.eq(fail),
            self.rx_aligned.eq(state.rx_aligned), self.remote_up.eq(state.remote_up), self.link_up.eq(state.link_up),
        ]
        add_counters(self, EP_RX_COUNTERS, {
            "rx_frames": in_order & (ok_fc | fifo.sink.ready),
            "rx_errors": self.link_up & (fail | gap) & ~self.recovering,
            "rx_discarded": self.link_up & (((fail | gap) & self.recovering) | ((ok_data | ok_fc) & ~accept)),
            "rx_overflow": in_order & ok_data & ~fifo.sink.ready,
            "fc_on_rcvd": in_order & ok_fc & fc_on,
            "fc_voq_rcvd": fc_source.valid & ~link_level,
            "link_downs": state.down,
        })


class RIFLReplayControl(LiteXModule):
    """The replay side of an endpoint: the send pointer rp and the confirmation ack (every frame before ack
    is known to be received).

    Parameters: holdoff H (cycles, holdoff_cycles(rtt)). rp moves on with every numbered frame sent
    (advance) and is rewound to s by an intact RETRANS(s) (retrans, retrans_seq) inside the window
    [ack, tx_seq], which also confirms every frame before s; RETRANS(s) for the same s again within H cycles
    is ignored. A rewind sets marker_pending until the transmitter sends the REPLAY marker (marker_sent).
    Without RETRANS, H + 1 cycles without `disturbed` confirm every frame sent H cycles ago (a delay line of
    rp). ce: as for RIFLTransmitter, for the history's block RAM. Latency: a RETRANS rewinds rp and
    confirms two cycles after it (checked, then applied from registers); advance and the confirmation by
    time act in the next cycle.
    """
    def __init__(self, holdoff, ce=None):
        H = holdoff
        self.tx_seq = tx_seq = Signal(SEQ_BITS)
        self.advance = Signal()
        self.marker_sent = Signal()
        self.retrans = Signal()
        self.retrans_seq = seq = Signal(SEQ_BITS)
        self.disturbed = Signal()
        self.rp = rp = Signal(SEQ_BITS)
        self.ack = ack = Signal(SEQ_BITS)
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
        base = Signal(SEQ_BITS)
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
        take_seq = Signal(SEQ_BITS)
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


class RIFLEndpoint(LiteXModule):
    """One end of a RIFL link: user stream in/out, one F-bit frame to/from the channel every cycle.

    Parameters: frame_bits F (power of two, 64..2048); rtt = channel round trip in cycles (sum of both
    channel latencies), which sets the replay hold-off H = rtt + PIPELINE_RTT_CYCLES, the replay buffer
    (2^replay_log2(rtt) frames) and the receive buffer (rx_depth, default rx_depth_for(rtt) frames).
    sink/source: user_layout(F) with `last`; one beat = one frame, one beat a cycle at line rate.
    fc_sink/fc_source: per-VOQ flow-control frames (FC_LAYOUT) to and from the remote, numbered and replayed
    like data (fc_source pulses: always ready). A switch port uses them for its VOQs; a sender for the pause
    of its packets' VOQs at the next switch.
    tx_frame/rx_frame: the frame-aligned parallel line (MSB sent first). Submodules: tx (RIFLTransmitter),
    rx (RIFLReceiver), replay (RIFLReplayControl). cc_interval: an IDLE at least every cc_interval slots,
    for a far end behind a RIFLElasticBuffer (None: only when idle; CC_INTERVAL_FRAMES for +-CC_PPM_MAX ppm
    clocks). ce: the clock enable of a CEInserter around the endpoint, which does not reach the read registers
    of its block RAMs (cores.lib.block_ram.BlockRAM); None: none. Latency: 4 cycles TX, 4 cycles RX plus
    the receive FIFO (4 cycles).
    """
    def __init__(self, frame_bits=256, rtt=16, rx_depth=None, with_csr=False, cc_interval=None, ce=None):
        check_frame_bits(frame_bits)
        if not isinstance(rtt, int) or rtt < 0:
            raise ValueError(f"rtt must be a non-negative number of cycles, got {rtt!r}")
        rx_depth = rx_depth_for(rtt) if rx_depth is None else rx_depth
        if not isinstance(rx_depth, int) or rx_depth < rx_depth_min(rtt):
            raise ValueError(f"rx_depth must be at least {rx_depth_min(rtt)} frames for rtt {rtt}, got {rx_depth!r}")
        F = frame_bits
        log2n = replay_log2(rtt)
        H = holdoff_cycles(rtt)
        self.frame_bits, self.rtt, self.holdoff, self.replay_depth, self.rx_depth = F, rtt, H, 1 << log2n, rx_depth

        self.sink = sink = stream.Endpoint(user_layout(F))
        self.source = source = stream.Endpoint(user_layout(F))
        self.fc_sink = stream.Endpoint(FC_LAYOUT)
        self.fc_source = stream.Endpoint(FC_LAYOUT)
        self.tx_frame = Signal(F)
        self.rx_frame = Signal(F)
        self.link_up = Signal()
        self.rx_aligned = Signal()
        self.remote_up = Signal()
        self.recovering = Signal()
        self.remote_xoff = Signal()

        # # #

        self.tx = tx = RIFLTransmitter(F, log2n, cc_interval, ce)
        self.rx = rx = RIFLReceiver(F, rx_depth, ce)
        self.replay = replay = RIFLReplayControl(H, ce)
        self.comb += [
            sink.connect(tx.sink), self.tx_frame.eq(tx.tx_frame),
            rx.source.connect(source), rx.rx_frame.eq(self.rx_frame),
            self.fc_sink.connect(tx.fc_sink), rx.fc_source.connect(self.fc_source),
            [getattr(self, name).eq(getattr(rx, name)) for name, _ in STATUS],
            [getattr(tx, name).eq(getattr(rx, name))
             for name in ("rx_aligned", "remote_up", "recovering", "remote_xoff", "rx_seq", "fc_want")],
            [getattr(tx, name).eq(getattr(replay, name)) for name in ("rp", "ack", "marker_pending")],
            [getattr(replay, name).eq(getattr(tx, name)) for name in ("tx_seq", "advance", "marker_sent")],
            [getattr(replay, name).eq(getattr(rx, name)) for name in ("retrans", "retrans_seq", "disturbed")],
        ]
        parts = {**tx.counters, **rx.counters, **replay.counters}
        self.counters = {name: parts[name] for name, _ in EP_COUNTERS}

        if with_csr:
            self._status = CSRStatus(fields=[CSRField(name, size=1, description=desc) for name, desc in STATUS])
            self.comb += [getattr(self._status.fields, name).eq(getattr(self, name)) for name, _ in STATUS]
            add_counter_csrs(self, EP_COUNTERS)

"""RIFL Layer 1 transmitter (RIFLTransmitter): slot choice; replay buffer, CRC and scrambler (RIFLTxPipeline)."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.block_ram import BlockRAM
from cores.lib.counters import add_counters
from cores.rifl.common import (
    CHECK_BITS, CTRL_FC, CTRL_HEADER, CTRL_IDLE, CTRL_PAUSE, CTRL_REPLAY, CTRL_RETRANS, EP_TX_COUNTERS, FC_LAYOUT,
    LINK_FC_CHANNEL, SEQ_BITS, SYNC_CTRL, SYNC_DATA, payload_bytes, scrambler_mask, user_layout)
from cores.rifl.link.crc import crc12_bits


def _ctrl_payload(pbits, **fields):
    """Control payload: the CTRL_HEADER fields at the top of the payload, zeros below."""
    return Cat(C(0, pbits - CTRL_HEADER.bits), CTRL_HEADER.value(**fields))


def _data_body(module, sink, P):
    """The CRC-covered body of a data frame from a user beat (user_layout, P payload bytes): its bytes sent
    first to last, the last one replaced by nbytes unless all P are valid; meta (all valid, last); SYNC_DATA."""
    data_bytes = [sink.data[8 * k:8 * k + 8] for k in range(P)]
    all_valid = Signal()
    module.comb += all_valid.eq(sink.nbytes == P)
    data_payload = Cat(Mux(all_valid, data_bytes[P - 1], sink.nbytes), *reversed(data_bytes[:P - 1]))
    return Cat(data_payload, all_valid, sink.last, C(SYNC_DATA, 2))


def _clock_compensation(module, cc_interval, idle_sent):
    """cc_due: cc_interval - 1 slots passed without an IDLE (idle_sent: one goes out now); never with
    cc_interval None."""
    cc_due = Signal()
    if cc_interval is not None:
        since_idle = Signal(max=cc_interval)
        module.sync += If(idle_sent, since_idle.eq(0)).Elif(
            since_idle != cc_interval - 1, since_idle.eq(since_idle + 1))
        module.comb += cc_due.eq(since_idle == cc_interval - 1)
    return cc_due


class RIFLTxPipeline(LiteXModule):
    """Stages 1 to 3 of a transmitter: the replay buffer (2^log2n frames) and the frame onto the line.

    Inputs, from the slot choice (stage 0) of each cycle: replay (send the frame at rp from the replay
    buffer), ctrl (send ctrl_body, with frame id 0), else new_body (the new numbered frame, id rp = tx_seq, or
    an unused body); rp, tx_seq. Stage 1 registers them and reads the replay buffer, stage 2 takes its output
    register or the registered body, stage 3 puts body ^ scrambler mask and CRC ^ frame id on tx_frame.
    Parameters: frame_bits F, log2n, ce (as for RIFLTransmitter, for the replay buffer's read registers),
    seq_start (the id its registers hold at reset, as RIFLEndpoint's). Latency: 3 cycles.
    """
    def __init__(self, frame_bits, log2n, ce=None, seq_start=0):
        F = frame_bits
        bbits = F - CHECK_BITS                      # CRC-covered body: sync, meta, payload
        self.replay = Signal()
        self.ctrl = Signal()
        self.ctrl_body = Signal(bbits)
        self.new_body = Signal(bbits)
        self.rp = rp = Signal(SEQ_BITS)
        self.tx_seq = Signal(SEQ_BITS)
        self.tx_frame = Signal(F)

        # # #

        mask = scrambler_mask(8 * payload_bytes(F))
        self.ram = ram = BlockRAM(bbits, 1 << log2n, ce)     # read data two cycles after the address
        s1_new = Signal(bbits)
        # The replay buffer takes the registered new_body (s1_new) at the registered tx_seq (s1_seq) every
        # cycle: the slot of frame s1_seq - 2^log2n, which the guard has confirmed; it keeps the frame once
        # tx_seq moves on. So the slot choice and the frame's fields stay off the block RAM's inputs. It reads at
        # rp, which meets the write when rp = s1_seq: no replay (rp = tx_seq, the read data is not used), or a
        # replay of the frame sent in the cycle before, which then is on the line two cycles later (s3_body):
        # `hit` keeps it there instead of taking the read data.
        s1_seq = Signal(log2n, reset=seq_start % (1 << log2n))
        hit, s1_hit, s2_hit = Signal(), Signal(), Signal()
        self.comb += [
            ram.adr_w.eq(s1_seq),
            ram.dat_w.eq(s1_new),
            ram.we.eq(1),
            ram.adr_r.eq(rp[:log2n]),
            hit.eq(rp[:log2n] == s1_seq),
        ]
        self.sync += s1_seq.eq(self.tx_seq[:log2n]), s1_hit.eq(hit), s2_hit.eq(s1_hit)
        # Stage 1: the replay buffer reads; the control body or the new body (registered, so the slot choice
        # drives only 1-bit selects). Stage 2: the replay buffer's output (its output register) or that body.
        # Stage 3: CRC XOR frame id, scramble, onto the line.
        s1_replay, s1_ctrl = Signal(), Signal()
        s1_ctrl_body = Signal(bbits)
        s1_id = Signal(SEQ_BITS, reset=seq_start)
        s2_replay, s2_body = Signal(), Signal(bbits)
        s2_id, s3_id = Signal(SEQ_BITS, reset=seq_start), Signal(SEQ_BITS, reset=seq_start)
        s3_body = Signal(bbits)
        self.sync += [
            s1_replay.eq(self.replay),
            s1_ctrl.eq(self.ctrl),
            s1_new.eq(self.new_body),
            s1_ctrl_body.eq(self.ctrl_body),
            s1_id.eq(rp),
            s2_replay.eq(s1_replay),
            s2_body.eq(Mux(s1_ctrl, s1_ctrl_body, s1_new)),
            s2_id.eq(Mux(s1_ctrl, 0, s1_id)),
            If(~(s2_replay & s2_hit), s3_body.eq(Mux(s2_replay, ram.dat_r, s2_body))),
            s3_id.eq(s2_id),
            self.tx_frame[CHECK_BITS:].eq(s3_body ^ mask),
            *[self.tx_frame[k].eq(bit ^ s3_id[k]) for k, bit in enumerate(crc12_bits(s3_body))],
        ]


class RIFLTransmitter(LiteXModule):
    """The transmit half of an endpoint: chooses the frame of each slot (stage 0); its submodule `pipeline`
    (RIFLTxPipeline) keeps new numbered frames in the replay buffer (2^log2n frames, at tx_seq) and puts
    body ^ scrambler mask and CRC ^ frame id on tx_frame.

    Slot priority: PAUSE (receiver not aligned) > IDLE (remote not up) > RETRANS (receiver recovering, every
    other slot) > REPLAY marker (marker_pending) > replay (rp != tx_seq) > flow-control frame (fc_want
    changed; window open) > per-VOQ flow-control frame (fc_sink; window open) > new data (window open, remote
    not paused) > IDLE, the window being open with fewer than 2^log2n - 2 unconfirmed frames a cycle before;
    with cc_interval, an IDLE goes before the replay and everything after it once cc_interval - 1 slots
    passed without one (clock compensation, cores.rifl.elastic). Inputs: the receiver's state (rx_aligned,
    remote_up, recovering, remote_xoff, rx_seq, fc_want) and the replay control's (rp, ack, marker_pending).
    Outputs: tx_seq (id of the next new numbered frame), advance (a numbered frame was sent at rp),
    marker_sent (a REPLAY marker was sent). sink: user_layout(F), one beat a slot. fc_sink: FC_LAYOUT frames
    of another flow-control user (a switch input's VOQs), each sent as one numbered FC frame. ce: the clock
    enable of a CEInserter around the transmitter, for the replay buffer's read registers (None: none).
    seq_start: tx_seq at reset (as RIFLEndpoint's). Latency: 4 cycles (select, replay-buffer read, body mux, CRC and scrambler).
    """
    def __init__(self, frame_bits, log2n, cc_interval=None, ce=None, seq_start=0):
        if cc_interval is not None and (not isinstance(cc_interval, int) or cc_interval < 2):
            raise ValueError(f"cc_interval must be None or at least 2 slots, got {cc_interval!r}")
        F = frame_bits
        P = payload_bytes(F)
        pbits = 8 * P
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
        self.tx_seq = tx_seq = Signal(SEQ_BITS, reset=seq_start)
        self.advance = Signal()
        self.marker_sent = Signal()

        # # #

        toggle = Signal()
        fc_sent = Signal()           # last ON/OFF state sent
        self.sync += toggle.eq(~toggle)

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
        cc_due = _clock_compensation(self, cc_interval, sel_ctrl & (ctrl_code == CTRL_IDLE))
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
        data_body = _data_body(self, sink, P)
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
        # Stages 1 to 3: the replay buffer, CRC and scrambler.
        self.pipeline = pipeline = RIFLTxPipeline(F, log2n, ce, seq_start)
        self.comb += [
            pipeline.replay.eq(sel_replay),
            pipeline.ctrl.eq(sel_ctrl),
            pipeline.ctrl_body.eq(ctrl_body),
            pipeline.new_body.eq(Mux(fc_first, fc_body, data_body)),
            pipeline.rp.eq(rp),
            pipeline.tx_seq.eq(tx_seq),
            self.tx_frame.eq(pipeline.tx_frame),
        ]
        self.sync += [
            If(sel_data | sel_fc, tx_seq.eq(tx_seq + 1)),
            If(sel_fc & ~sel_voq, fc_sent.eq(self.fc_want)),
        ]
        add_counters(self, EP_TX_COUNTERS, {
            "tx_frames": sel_data | sel_fc, "tx_replayed": sel_replay, "tx_ctrl": sel_ctrl,
            "tx_bad": sink.valid & ~sink_ok, "fc_on_sent": sel_fc & ~sel_voq & self.fc_want,
            "fc_off_sent": sel_fc & ~sel_voq & ~self.fc_want, "fc_voq_sent": sel_voq,
        })

"""RIFL Layer 1 endpoint: the transmitter, the receiver and the replay control joined, with the status and
counter CSRs."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStatus, CSRField

from cores.lib.counters import add_counter_csrs
from cores.rifl.common import (
    EP_COUNTERS, FC_LAYOUT, SEQ_BITS, check_frame_bits, holdoff_cycles, replay_log2, rx_depth_for, rx_depth_min, user_layout)
from cores.rifl.link.replay import RIFLReplayControl
from cores.rifl.link.rx import RIFLReceiver
from cores.rifl.link.tx import RIFLTransmitter


STATUS = [
    ("link_up", "link up: aligned and the remote hears us"),
    ("rx_aligned", "receiver sees valid sync headers"),
    ("remote_up", "remote is not sending PAUSE"),
    ("recovering", "receiver is waiting for a replay"),
    ("remote_xoff", "remote asked us to pause (flow control ON)"),
]


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
    the receive FIFO (4 cycles). seq_start: the frame id of the first numbered frame (0 by default; both ends
    must agree); another value puts the id's wrap-around from 2^SEQ_BITS - 1 to 0 within reach of a short
    simulation or proof.
    """
    def __init__(self, frame_bits=256, rtt=16, rx_depth=None, with_csr=False, cc_interval=None, ce=None,
                 seq_start=0):
        check_frame_bits(frame_bits)
        if not isinstance(rtt, int) or rtt < 0:
            raise ValueError(f"rtt must be a non-negative number of cycles, got {rtt!r}")
        rx_depth = rx_depth_for(rtt) if rx_depth is None else rx_depth
        if not isinstance(rx_depth, int) or rx_depth < rx_depth_min(rtt):
            raise ValueError(f"rx_depth must be at least {rx_depth_min(rtt)} frames for rtt {rtt}, got {rx_depth!r}")
        if not isinstance(seq_start, int) or not 0 <= seq_start < 1 << SEQ_BITS:
            raise ValueError(f"seq_start must be a frame id in [0, {1 << SEQ_BITS}), got {seq_start!r}")
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

        self.tx = tx = RIFLTransmitter(F, log2n, cc_interval, ce, seq_start)
        self.rx = rx = RIFLReceiver(F, rx_depth, ce, seq_start)
        self.replay = replay = RIFLReplayControl(H, ce, seq_start)
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

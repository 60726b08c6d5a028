"""The RIFL link bench: two endpoints joined by two channel models, the gateware under every RIFL link
simulation (tests/harness/rifl.py, the benchmark) and under the SoC loopback block (soc_block.py)."""
from litex.gen import LiteXModule

from cores.rifl.align import ALIGNER_LATENCY, RIFLAligner
from cores.rifl.channel import RIFLChannel
from cores.rifl.l2 import L2Reassembler, L2Segmenter
from cores.rifl.link import RIFLEndpoint

SEEDS = (3, 7)        # default PRNG seeds of the channels A->B and B->A


class RIFLLinkBench(LiteXModule):
    """Endpoints `a` and `b`, channel `ab` (a.tx_frame -> b.rx_frame) and channel `ba` (b -> a).

    Parameters: frame_bits F; latency: cycles of each channel (the endpoints' rtt is twice that, plus both
    aligners' latency with slip); seeds: the PRNG seeds of ab and ba; rx_depth: the endpoints' receive
    buffer (default for their rtt); seq_start: both endpoints' first frame id.
    with_slip: the channels shift the line by their `slip` input (bits) and a RIFLAligner (`al_a`, `al_b`)
    finds the frame boundary in front of each endpoint.
    l2_data_width: a Layer 2 segmenter `seg` feeds a.sink and a reassembler `rea` takes b.source, with
    upper-layer beats of that width (seg.sink, rea.source); otherwise the endpoints' user streams are free.
    Error injection, link downs and slips: the channels' threshold, burst, down and slip inputs.
    """
    def __init__(self, frame_bits=256, latency=8, seeds=SEEDS, rx_depth=None, with_slip=False,
                 l2_data_width=None, seq_start=0):
        if len(seeds) != 2:
            raise ValueError(f"seeds: one per channel (A->B, B->A), got {seeds!r}")
        F = frame_bits
        rtt = 2 * latency + (2 * ALIGNER_LATENCY if with_slip else 0)

        # # #

        self.a = a = RIFLEndpoint(F, rtt=rtt, rx_depth=rx_depth, seq_start=seq_start)
        self.b = b = RIFLEndpoint(F, rtt=rtt, rx_depth=rx_depth, seq_start=seq_start)
        self.ab = ab = RIFLChannel(F, latency, seed=seeds[0], with_slip=with_slip)
        self.ba = ba = RIFLChannel(F, latency, seed=seeds[1], with_slip=with_slip)
        self.comb += [ab.sink_frame.eq(a.tx_frame), ba.sink_frame.eq(b.tx_frame)]
        if with_slip:
            self.al_a = al_a = RIFLAligner(F)
            self.al_b = al_b = RIFLAligner(F)
            self.comb += [
                al_b.rx_bits.eq(ab.source_frame), b.rx_frame.eq(al_b.rx_frame),
                al_a.rx_bits.eq(ba.source_frame), a.rx_frame.eq(al_a.rx_frame),
            ]
        else:
            self.comb += [b.rx_frame.eq(ab.source_frame), a.rx_frame.eq(ba.source_frame)]
        if l2_data_width is not None:
            self.seg = seg = L2Segmenter(F, l2_data_width)
            self.rea = rea = L2Reassembler(F, l2_data_width)
            self.comb += [seg.source.connect(a.sink), b.source.connect(rea.sink)]

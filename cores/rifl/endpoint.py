"""A RIFL network endpoint: the Layer 2 segmenter and reassembler on a Layer 1 endpoint, with the sender
honouring the per-VOQ pauses of the switch it is attached to."""
from migen import Cat, If, Mux, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counters
from cores.rifl.common import (FC_GATE_COUNTERS, FC_LAYOUT, L2_DST_PORT1_BYTE, L2_HEADER_BYTES, L2_LENGTH_BYTES,
                               L2_MAX_PACKET_BYTES, L2_RX_CONTEXTS, SEGMENT_BYTES, check_switch_ports,
                               l2_header_unpack, payload_bytes, user_layout)
from cores.rifl.l2 import L2Reassembler, L2Segmenter
from cores.rifl.link import RIFLEndpoint


def fc_gate_channel(header, down_ports):
    """The flow-control channel RIFLFCGate holds a packet of Layer 2 header `header` on (an int,
    l2_header_pack): its Dst Port 1 mod down_ports."""
    return l2_header_unpack(header)[2][0] % down_ports


class RIFLFCGate(LiteXModule):
    """Holds an upper-layer packet whose VOQ at the next switch is paused.

    sink/source: user_layout(frame_bits), the L2Segmenter's Layer 2 packets (segments; the header in the
    first 6 bytes of each, the upper-layer length prefix after the header of a packet's first segment).
    fc_sink: the flow-control frames of the next switch (FC_LAYOUT, always ready): channel c paused by an
    ON, resumed by an OFF; a packet's channel is its Dst Port 1 mod down_ports (the switch input's VOQ
    channel, cores.switch.common.fc_channel; fc_gate_channel). The gate decides before the first beat of a
    packet's first segment and then lets all its segments pass (it counts them from the length prefix, as
    the segmenter does): a packet is never split by a pause, so the VOQ above its ON threshold takes up to
    a whole packet more (voq_sizing's max_packet). Counter `held`: cycles a packet waited.
    Latency: 0 (combinational).
    """
    def __init__(self, frame_bits, down_ports):
        check_switch_ports(down_ports)
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.source = source = stream.Endpoint(user_layout(frame_bits))
        self.fc_sink = fc = stream.Endpoint(FC_LAYOUT)
        self.paused = paused = Signal(down_ports)

        # # #

        P = payload_bytes(frame_bits)
        at = 8 * L2_DST_PORT1_BYTE
        channel = sink.data[at:at + (down_ports - 1).bit_length()]
        # The length prefix: bytes L2_HEADER_BYTES.. of the first segment, in beat len_beat.
        len_beat, len_at = divmod(L2_HEADER_BYTES, P)
        assert (L2_HEADER_BYTES + L2_LENGTH_BYTES - 1) // P == len_beat
        length = Signal(8 * L2_LENGTH_BYTES)
        padded = Signal(8 * L2_LENGTH_BYTES + 1)         # 17 bits: no wrap in Verilog (see L2Segmenter)
        self.comb += [
            length.eq(Cat(*reversed([sink.data[8 * (len_at + i):8 * (len_at + i + 1)]
                                     for i in range(L2_LENGTH_BYTES)]))),
            padded.eq(length + L2_LENGTH_BYTES + SEGMENT_BYTES - 1),
        ]
        mid = Signal()                                   # inside a segment
        beat = Signal(max=len_beat + 2)                  # beats of this segment so far (saturating)
        first = Signal()                                 # this segment begins an upper-layer packet
        left = Signal(8 * L2_LENGTH_BYTES - 7)           # segments of the packet after the current one
        go, take, cur_first = Signal(), Signal(), Signal()
        self.comb += [
            go.eq(mid | (left != 0) | ~(paused >> channel)[0]),
            sink.connect(source, omit={"valid", "ready"}),
            source.valid.eq(sink.valid & go),
            sink.ready.eq(source.ready & go),
            take.eq(source.valid & source.ready),
            cur_first.eq(Mux(mid, first, left == 0)),
            fc.ready.eq(1),
        ]
        self.sync += [
            If(take,
                mid.eq(~source.last),
                first.eq(cur_first),
                If(source.last, beat.eq(0)).Elif(beat != len_beat + 1, beat.eq(beat + 1)),
                If(cur_first & (beat == len_beat),
                    left.eq((padded >> 8) - 1),
                ).Elif(source.last & ~cur_first,
                    left.eq(left - 1),
                ),
            ),
            *[If(fc.valid & fc.on_valid & (fc.on_channel == c), paused[c].eq(1)).Elif(
                 fc.valid & fc.off_valid & (fc.off_channel == c), paused[c].eq(0)) for c in range(down_ports)],
        ]
        add_counters(self, FC_GATE_COUNTERS, {"held": sink.valid & ~go})


class RIFLHost(LiteXModule):
    """A host on a RIFL network: upper-layer packets in and out over one RIFL link.

    sink: the L2Segmenter's (data_width-bit beats, params length and route); its Layer 2 packets pass the
    RIFLFCGate (`gate`: per-VOQ pauses of the next switch, of down_ports ports) into the RIFLEndpoint
    (`endpoint`, frame_bits, rtt); what the endpoint receives goes through the L2Reassembler (n_sources
    contexts, max_packet bytes) to source (params length, header, reply). tx_frame/rx_frame: the line.
    link: instead of a RIFLEndpoint on a frame line, any Layer 1 link with the endpoint's user streams
    (sink, source, fc_source), `endpoint` and link_up, e.g. cores.rifl.serdes.RIFLSerDesLink (no
    tx_frame/rx_frame then).
    Throughput: line rate both ways for data_width >= 8 * payload bytes.
    """
    def __init__(self, frame_bits=256, data_width=256, rtt=16, down_ports=4, n_sources=L2_RX_CONTEXTS,
                 max_packet=L2_MAX_PACKET_BYTES, rx_timeout=None, link=None):
        if link is None:
            self.endpoint = link = RIFLEndpoint(frame_bits, rtt)
            self.tx_frame = link.tx_frame
            self.rx_frame = link.rx_frame
        else:
            self.link = link
            self.endpoint = link.endpoint
        self.segmenter = seg = L2Segmenter(frame_bits, data_width)
        kw = {} if rx_timeout is None else {"timeout": rx_timeout}
        self.reassembler = rsm = L2Reassembler(frame_bits, data_width, n_sources, max_packet, **kw)
        self.gate = gate = RIFLFCGate(frame_bits, down_ports)
        self.sink = seg.sink
        self.source = rsm.source
        self.link_up = link.link_up

        # # #

        self.comb += [
            seg.source.connect(gate.sink), gate.source.connect(link.sink), link.fc_source.connect(gate.fc_sink),
            link.source.connect(rsm.sink),
        ]

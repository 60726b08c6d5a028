"""The RIFL switch on RIFL links: a line card per port (Layer 1 endpoint, cells to and from Layer 2 packets,
per-VOQ flow control over the link) around the RIFLSwitch."""
from migen import Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.buffers import SkidBuffer
from cores.lib.counters import add_counters
from cores.rifl.common import (FC_LAYOUT, L2_LENGTH_BYTES, L2_NET_MAX_PACKET, L2_PACKET_BYTES, SEGMENT_BYTES,
                               holdoff_cycles, payload_bytes)
from cores.rifl.l2 import L2Deframer, L2Framer
from cores.rifl.link import RIFLEndpoint
from cores.rifl_net.common import LINE_CARD_COUNTERS
from cores.switch.common import cell_layout, check_ports
from cores.switch.switch import RIFLSwitch


def cell_frames(frame_bits):
    """Frame slots a Layer 2 packet (one cell) takes on a link: the link's cell time in cycles."""
    return -(-L2_PACKET_BYTES // payload_bytes(frame_bits))


def voq_sizing(frame_bits, rtt, max_packet=L2_NET_MAX_PACKET):
    """(voq_cells, on_threshold, off_threshold) for VOQs fed over a link of round trip `rtt` frame slots
    by senders of upper-layer packets of at most `max_packet` bytes. Above ON the VOQ must take every cell
    the sender starts until it sees the pause: the ON frame's trip may wait behind a replay and be
    replayed itself, about 3 hold-offs (3 H), so the headroom is 3 H in cells, plus the cell in flight,
    plus a whole packet being started (a sender's RIFLFCGate never splits a packet). OFF is half of ON."""
    packet_cells = (max_packet + L2_LENGTH_BYTES + SEGMENT_BYTES - 1) // SEGMENT_BYTES
    headroom = -(-3 * holdoff_cycles(rtt) // cell_frames(frame_bits)) + 1 + packet_cells
    cells = 1 << (headroom + 4 - 1).bit_length()
    on = cells - headroom
    return cells, on, on // 2


class RIFLLineCard(LiteXModule):
    """One switch port on a RIFL link.

    The L1 endpoint (`endpoint`, RIFLEndpoint(frame_bits, rtt)) receives Layer 2 packets that the deframer
    (cores.rifl.l2.L2Deframer) turns into cells on `cell_source` (for the switch input, always ready: the
    receive buffer never fills); cells from the switch output on `cell_sink` leave as Layer 2 packets
    (L2Framer), one beat a frame slot. `fc_sink`: the input's per-VOQ flow-control frames, sent to the remote
    as numbered frames (replayed like data); `fc_source`: the frames the remote sends (for the switch's
    fc_ins: the remote's VOQs, or LINK_FC_CHANNEL from an endpoint's receive buffer).
    Counters: the endpoint's (cores.rifl.common.EP_COUNTERS) and LINE_CARD_COUNTERS.
    """
    def __init__(self, frame_bits=256, data_width=256, rtt=16, rx_depth=None):
        self.endpoint = ep = RIFLEndpoint(frame_bits, rtt, rx_depth)
        self.tx_frame = ep.tx_frame
        self.rx_frame = ep.rx_frame
        self.link_up = ep.link_up
        self.cell_source = stream.Endpoint(cell_layout(data_width))
        self.cell_sink = stream.Endpoint(cell_layout(data_width))
        self.fc_sink = stream.Endpoint(FC_LAYOUT)
        self.fc_source = stream.Endpoint(FC_LAYOUT)

        # # #

        self.deframer = deframer = L2Deframer(frame_bits, data_width)
        self.framer = framer = L2Framer(frame_bits, data_width)
        # The endpoint's slot choice (flow control, replay, window) decides its sink's ready: the skid keeps it
        # out of the framer's packer (no latency, one beat a cycle).
        self.skid = skid = SkidBuffer(ep.sink.description)
        # The switch's ready (its VOQ's room) reaches only this skid's flag, not the deframer's packer.
        self.cell_skid = cell_skid = SkidBuffer(self.cell_source.description)
        self.comb += [
            ep.source.connect(deframer.sink), deframer.source.connect(cell_skid.sink),
            cell_skid.source.connect(self.cell_source),
            self.cell_sink.connect(framer.sink), framer.source.connect(skid.sink), skid.source.connect(ep.sink),
            self.fc_sink.connect(ep.fc_sink), ep.fc_source.connect(self.fc_source),
        ]
        add_counters(self, LINE_CARD_COUNTERS, {"malformed": deframer.events["malformed"]})
        self.counters = {**ep.counters, **self.counters}


class RIFLSwitchNode(LiteXModule):
    """An n-port RIFL switch on RIFL links: RIFLSwitch (`switch`) with a RIFLLineCard on every port
    (`cards[i]`: tx_frames[i] / rx_frames[i] are the port's line).

    Port i's card feeds input i and takes output i; input i's per-VOQ flow-control frames go back over
    port i, and the frames received on port i pause and resume output i. Parameters: frame_bits, rtt (the
    links' round trip, frame slots), data_width (256: the fabric's cell time of 8 cycles is shorter than a
    link's cell time of cell_frames(256) = 9 slots), iterations, down_ports (port count of the neighbour
    switches), max_packet (the senders' largest upper-layer packet), voq_cells / on / off (default
    voq_sizing(frame_bits, rtt, max_packet)), cell_cycles (RIFLSwitch's; 10 for 4 iterations: a fabric slower
    than the links).
    """
    def __init__(self, n=4, frame_bits=256, rtt=16, data_width=256, iterations=2, down_ports=None,
                 voq_cells=None, on_threshold=None, off_threshold=None, cell_cycles=None,
                 max_packet=L2_NET_MAX_PACKET):
        check_ports(n)
        cells, on, off = voq_sizing(frame_bits, rtt, max_packet)
        voq_cells = cells if voq_cells is None else voq_cells
        on_threshold = on if on_threshold is None else on_threshold
        off_threshold = off if off_threshold is None else off_threshold
        self.n = n
        self.voq_cells, self.on_threshold, self.off_threshold = voq_cells, on_threshold, off_threshold
        self.tx_frames = [Signal(frame_bits, name=f"tx_frame{i}") for i in range(n)]
        self.rx_frames = [Signal(frame_bits, name=f"rx_frame{i}") for i in range(n)]

        # # #

        self.switch = sw = RIFLSwitch(n, data_width, voq_cells, iterations, on_threshold=on_threshold,
                                      off_threshold=off_threshold, down_ports=down_ports, cell_cycles=cell_cycles)
        self.cards = []
        for i in range(n):
            card = RIFLLineCard(frame_bits, data_width, rtt)
            setattr(self, f"card{i}", card)
            self.cards.append(card)
            self.comb += [
                self.tx_frames[i].eq(card.tx_frame), card.rx_frame.eq(self.rx_frames[i]),
                card.cell_source.connect(sw.sinks[i]), sw.sources[i].connect(card.cell_sink),
                sw.fcs[i].connect(card.fc_sink), card.fc_source.connect(sw.fc_ins[i]),
            ]

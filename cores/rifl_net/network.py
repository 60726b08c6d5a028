"""A RIFL network in one piece of RTL: RIFLHosts and RIFLSwitchNodes of a topology, every link a pair of
RIFLChannels (latency, errors, down), for the network simulations (sim/verilated/rifl_net.py)."""
from litex.gen import LiteXModule

from cores.rifl.channel import RIFLChannel
from cores.rifl.common import L2_NET_MAX_PACKET, L2_RX_CONTEXTS, L2_RX_CONTEXTS_MAX
from cores.rifl.endpoint import RIFLHost
from cores.rifl_net.line_card import RIFLSwitchNode, cell_frames


def net_contexts(hosts):
    """Reassembly contexts a host of a `hosts`-host network gets by default: two a source, within
    [L2_RX_CONTEXTS, L2_RX_CONTEXTS_MAX]. A completed packet holds its context until it has left while the
    other sources start new ones: with one a source, packets of 4 cells and more stalled the receiving
    hosts (N = 8, 1024-byte packets, load 0.99: utilisation 0.867 instead of 0.952); single-cell traffic
    runs cycle for cycle the same either way."""
    return max(L2_RX_CONTEXTS, min(L2_RX_CONTEXTS_MAX, 2 * (hosts - 1)))


class RIFLNetwork(LiteXModule):
    """The hosts, switches and links of `topology` (cores.rifl_net.topology.Topology).

    hosts[h]: RIFLHost(frame_bits, data_width, rtt = 2 latency, down_ports, n_sources, max_packet);
    switches[s]: RIFLSwitchNode(n, frame_bits, rtt, data_width, iterations, cell_cycles); the fabric's cell
    time `cell_cycles` defaults to the links' (cell_frames(frame_bits) slots, more if the iterations need
    it): no speedup, as in the spec's evaluation. Link k (topology.links[k] = (a, b))
    has channels[2k] (a -> b) and channels[2k + 1] (b -> a), each RIFLChannel(frame_bits, latency) with
    its own seed; `channel_names[c]` is "l<k>_ab" / "l<k>_ba"; `receivers[c]` the RIFLEndpoint channel c feeds.
    n_sources (default net_contexts(hosts)): each host's reassembly contexts.
    """
    def __init__(self, topology, frame_bits=256, latency=8, data_width=256, iterations=2, n_sources=None,
                 max_packet=L2_NET_MAX_PACKET, seed=1, cell_cycles=None, **switch_kw):
        if not isinstance(latency, int) or latency < 1:
            raise ValueError(f"latency must be a positive number of cycles, got {latency!r}")
        self.topology = topology
        n_sources = net_contexts(topology.hosts) if n_sources is None else n_sources
        self.n_sources = n_sources
        rtt = 2 * latency
        down = topology.down_ports()
        if cell_cycles is None:
            cell_cycles = max(cell_frames(frame_bits), 2 * iterations + 2)
        self.cell_cycles = cell_cycles
        self.hosts = []
        for h in range(topology.hosts):
            host = RIFLHost(frame_bits, data_width, rtt, down, n_sources, max_packet)
            setattr(self, f"host{h}", host)
            self.hosts.append(host)
        self.switches = []
        for s, n in enumerate(topology.switches):
            node = RIFLSwitchNode(n, frame_bits, rtt, data_width, iterations, down, cell_cycles=cell_cycles,
                                  max_packet=max_packet,
                                  **switch_kw)
            setattr(self, f"switch{s}", node)
            self.switches.append(node)

        # # #

        def line(end):
            if end[0] == "h":
                host = self.hosts[end[1]]
                return host.tx_frame, host.rx_frame, host.endpoint
            node = self.switches[end[1]]
            return node.tx_frames[end[2]], node.rx_frames[end[2]], node.cards[end[2]].endpoint
        self.channels, self.channel_names, self.receivers = [], [], []
        for k, (a, b) in enumerate(topology.links):
            (a_tx, a_rx, a_ep), (b_tx, b_rx, b_ep) = line(a), line(b)
            for d, (tx, rx, ep) in (("ab", (a_tx, b_rx, b_ep)), ("ba", (b_tx, a_rx, a_ep))):
                self.receivers.append(ep)
                ch = RIFLChannel(frame_bits, latency, seed=(seed * 7919 + 2 * k + (d == "ba")) % 2**32 or 1)
                setattr(self, f"l{k}_{d}", ch)
                self.channels.append(ch)
                self.channel_names.append(f"l{k}_{d}")
                self.comb += [ch.sink_frame.eq(tx), rx.eq(ch.source_frame)]

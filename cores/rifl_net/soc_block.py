"""RIFL network SoC block: n hosts on one RIFL switch over lossy links, with on-chip Layer 2 traffic
generators and checkers and CSRs for error rates, link state and counters."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus

from cores.lib.counters import add_counter_csrs
from cores.lib.header import csr_fields
from cores.rifl.common import CHANNEL_RANDOM_MAX_BITS, CHK_COUNTERS, l2_deliver
from cores.rifl_net.common import NET_CONTROL, NET_LENGTH_BITS, NET_MIN_LENGTH, net_block_counters
from cores.rifl_net.network import RIFLNetwork
from cores.rifl_net.topology import one_switch
from cores.rifl_net.traffic import L2TrafficChecker, L2TrafficGenerator

_NET_DESCRIPTIONS = {
    "enable": "generators run (each ends its current packet on 0)",
    "random": "channels make independent bit errors (ber<l> thresholds 1..4), else 1-bit bursts (threshold 1)",
}


class RIFLNetBlock(LiteXModule):
    """A RIFL network on chip: n hosts (RIFLHost: L2 segmenter and reassembler on an L1 endpoint) on one
    n-port RIFLSwitchNode, every link two RIFLChannels of `latency` cycles (RIFLNetwork), each host with an
    L2TrafficGenerator (to the other hosts in turn) and an L2TrafficChecker. Parameters: n, frame_bits,
    data_width (the hosts' upper layer and the fabric), latency.
    CSRs: control (NET_CONTROL: enable, random = independent bit errors, else 1-bit bursts), limit
    (packets per generator, 0 = unlimited), ber<l> for every link l (4 x 32 bits: the channel thresholds of
    both directions, software.rifl.demo.random_thresholds; bits 0-31 the per-frame threshold of bursts),
    down (bit c: channel c carries no signal), force (a 1 written to bit c: channel c's next data frame gets
    the undetectable codeword), status (link_up of every host), cycles, and net_block_counters(n)."""
    def __init__(self, n=4, frame_bits=64, data_width=64, latency=8):
        topo = one_switch(n)
        channels = 2 * len(topo.links)
        self.control = CSRStorage(fields=csr_fields(NET_CONTROL, _NET_DESCRIPTIONS))
        self.limit = CSRStorage(32, description="packets each generator sends (0 = unlimited)")
        self.bers = []
        for k in range(len(topo.links)):
            ber = CSRStorage(32 * CHANNEL_RANDOM_MAX_BITS, name=f"ber{k}",
                             description=f"link {k} error thresholds, both directions (threshold k at bits 32k)")
            setattr(self, f"ber{k}", ber)
            self.bers.append(ber)
        self.down = CSRStorage(channels, description="bit c: channel c carries no signal")
        self.force = CSRStorage(channels, description="writing a 1 to bit c forces a codeword on channel c")
        self.status = CSRStatus(n, description="bit h: host h's link is up")
        self.cycles = CSRStatus(32, description="cycles since reset")

        # # #

        self.net = net = RIFLNetwork(topo, frame_bits, latency, data_width, n_sources=max(4, n - 1),
                                     max_packet=NET_MIN_LENGTH + 2**NET_LENGTH_BITS)
        cycles = Signal(32)
        self.sync += cycles.eq(cycles + 1)
        self.comb += self.cycles.status.eq(cycles)
        control = lambda name: NET_CONTROL.field(self.control.storage, name)
        self.gens, self.chks = [], []
        for h, host in enumerate(net.hosts):
            others = [(h + 1 + j) % n for j in range(n - 1)]
            gen = L2TrafficGenerator(h, [topo.route(h, d) for d in others], data_width)
            headers = [l2_deliver(topo.route(s, h)) if s != h else 0 for s in range(n)]
            chk = L2TrafficChecker(n, headers, data_width)
            setattr(self, f"gen{h}", gen)
            setattr(self, f"chk{h}", chk)
            self.gens.append(gen)
            self.chks.append(chk)
            self.comb += [
                gen.source.connect(host.sink), host.source.connect(chk.sink),
                gen.enable.eq(control("enable")), gen.limit.eq(self.limit.storage),
                self.status.status[h].eq(host.link_up),
            ]
        for c, ch in enumerate(net.channels):
            thr = self.bers[c // 2].storage
            self.comb += [
                ch.mode.eq(control("random")),
                ch.threshold.eq(thr[:32]), ch.burst.eq(1),
                *[t.eq(thr[32 * k:32 * k + 32]) for k, t in enumerate(ch.thresholds)],
                ch.down.eq(self.down.storage[c]),
                ch.force.eq(self.force.re & self.force.storage[c]),
            ]
        node = net.switches[0]
        endpoints = [host.endpoint for host in net.hosts] + [card.endpoint for card in node.cards]
        values = {}
        for h in range(n):
            values[f"h{h}_sent"] = self.gens[h].counters["sent"]
            for name, _ in CHK_COUNTERS:
                values[f"h{h}_{name}"] = self.chks[h].counters[name]
        sums = {"cells_in": [inp.counters["cells_in"] for inp in node.switch.inputs],
                "drop_full": [inp.counters["drop_full"] for inp in node.switch.inputs],
                "cells_out": [node.switch.counters["cells_out"]],
                "fc_voq_frames": [card.counters["fc_voq_sent"] for card in node.cards],
                "replays": [ep.counters["replays"] for ep in endpoints],
                "rx_errors": [ep.counters["rx_errors"] for ep in endpoints],
                "link_downs": [ep.counters["link_downs"] for ep in endpoints]}
        for name, parts in sums.items():
            values[name] = Signal(32, name=f"total_{name}")
            self.comb += values[name].eq(sum(parts))
        for c, ch in enumerate(net.channels):
            values[f"c{c}_errors"] = ch.counters["errors"]
            values[f"c{c}_undetected"] = ch.counters["undetected"]
        self.counters = values
        add_counter_csrs(self, net_block_counters(n, channels), values)

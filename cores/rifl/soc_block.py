"""RIFL SoC block: the link bench (two Layer 1 endpoints looped through two channel models) with on-chip
traffic generators and checkers in both directions and CSRs for error rates, link state and counters."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect.csr import CSRStorage, CSRStatus

from cores.lib.counters import add_counter_csrs
from cores.lib.header import csr_fields
from cores.rifl.common import (LOOPBACK_CONTROL, LOOPBACK_COUNTERS, LOOPBACK_DIR_COUNTERS, LOOPBACK_ENDPOINTS,
                               LOOPBACK_EP_COUNTERS, LOOPBACK_STATUS)
from cores.rifl.link_bench import RIFLLinkBench
from cores.rifl.traffic import TrafficChecker, TrafficGenerator

_DESCRIPTIONS = {
    "enable": "generators run (each ends its current packet on 0)",
    "down_ab": "channel A->B carries no signal",
    "down_ba": "channel B->A carries no signal",
    "burst": "bits inverted per error event (1..12)",
    "link_up_a": "endpoint A link up",
    "link_up_b": "endpoint B link up",
}


class RIFLLoopback(LiteXModule):
    """The link bench (endpoints A and B, channels A->B and B->A of `latency` cycles each) with a generator
    and a checker per direction. Parameters: frame_bits (F), latency (channel cycles, each way). CSRs:
    control (LOOPBACK_CONTROL: enable, down_ab, down_ba, burst), err_ab / err_ba (per-frame error threshold,
    probability * 2^32), limit (packets per generator, 0 = unlimited), rx_ready (slow-receiver rate, 0 =
    always ready), cycles, status (LOOPBACK_STATUS: link_up_a/b), and the LOOPBACK_COUNTERS
    (`counters[name]`): <dir>_<name> for dir in ab, ba (sent, delivered, lost, duplicated, out_of_order,
    corrupted, channel_errors) and <ep>_<name> for ep in a, b (LOOPBACK_EP_COUNTERS of the endpoint)."""
    def __init__(self, frame_bits=256, latency=8):
        self.control = CSRStorage(fields=csr_fields(LOOPBACK_CONTROL, _DESCRIPTIONS))
        self.err_ab = CSRStorage(32, description="A->B per-frame error probability * 2^32")
        self.err_ba = CSRStorage(32, description="B->A per-frame error probability * 2^32")
        self.limit = CSRStorage(32, description="packets each generator sends (0 = unlimited)")
        self.rx_ready = CSRStorage(8, description="checkers accept a beat with probability rx_ready/256 (0 = always)")
        self.cycles = CSRStatus(32, description="cycles since reset")
        self.status = CSRStatus(fields=csr_fields(LOOPBACK_STATUS, _DESCRIPTIONS))

        # # #

        self.link = link = RIFLLinkBench(frame_bits, latency, seeds=(0x1D872B41, 0x2F0B3A57))
        self.gen_ab = TrafficGenerator(frame_bits)
        self.gen_ba = TrafficGenerator(frame_bits)
        self.chk_ab = TrafficChecker(frame_bits, seed=0x7F4A7C15)
        self.chk_ba = TrafficChecker(frame_bits, seed=0x3C6EF372)
        cycles = Signal(32)
        self.sync += cycles.eq(cycles + 1)
        self.comb += [
            self.cycles.status.eq(cycles),
            self.status.fields.link_up_a.eq(link.a.link_up),    # a CSRStatus with fields drives .status
            self.status.fields.link_up_b.eq(link.b.link_up),    # from its field signals: drive those
            self.gen_ab.source.connect(link.a.sink), link.b.source.connect(self.chk_ab.sink),
            self.gen_ba.source.connect(link.b.sink), link.a.source.connect(self.chk_ba.sink),
        ]
        control = lambda name: LOOPBACK_CONTROL.field(self.control.storage, name)
        self.counters = {}
        for d, ch, gen, chk, thr in (("ab", link.ab, self.gen_ab, self.chk_ab, self.err_ab),
                                     ("ba", link.ba, self.gen_ba, self.chk_ba, self.err_ba)):
            self.comb += [
                ch.threshold.eq(thr.storage), ch.burst.eq(control("burst")), ch.down.eq(control(f"down_{d}")),
                gen.enable.eq(control("enable")), gen.limit.eq(self.limit.storage),
                chk.ready_rate.eq(self.rx_ready.storage),
            ]
            parts = {**gen.counters, **chk.counters, "channel_errors": ch.counters["errors"]}
            for name, _ in LOOPBACK_DIR_COUNTERS:
                self.counters[f"{d}_{name}"] = parts[name]
        for e, ep in zip(LOOPBACK_ENDPOINTS, (link.a, link.b)):
            for name in LOOPBACK_EP_COUNTERS:
                self.counters[f"{e}_{name}"] = ep.counters[name]
        add_counter_csrs(self, LOOPBACK_COUNTERS)

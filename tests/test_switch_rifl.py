"""RIFL switch RTL: forwarding by relative address, header rewrite, drops, per-VOQ flow control, chains."""
import random
from collections import Counter

import pytest
from migen import Module
from migen.sim import run_simulation, passive

from cores.rifl.common import (l2_header_pack, l2_header_unpack, l2_forward, reply_route, dst_port, port_loops)
from cores.switch.common import downstream_channel
from cores.switch.switch import RIFLSwitch
from tests.harness.streams import collect, packets
from tests.harness.tiers import extended

pytestmark = pytest.mark.long        # the whole file: tens of seconds or more

W = 512                  # 4 beats a cell and one iSLIP iteration: keeps the Migen simulation short
N = 4
K = 1


class Endpoint:
    """An endpoint model: sends cells (honouring per-VOQ flow control of its switch port), receives cells."""
    def __init__(self, eid, rng, gap=0.3, ready=1.0, honour_fc=True, width=W):
        self.eid, self.rng, self.gap, self.ready, self.honour_fc, self.width = eid, rng, gap, ready, honour_fc, width
        self.tx = []                 # (header, [beats]) to send
        self.beats = []              # beats received ({header, data, last})
        self.paused = set()
        self.fc_frames = 0

    @property
    def rx(self):
        """(header, [beats]) of every cell received."""
        cells = packets(self.beats)
        for cell in cells:
            assert len(set(b["header"] for b in cell)) == 1, "header changed inside a cell"
        return [(cell[0]["header"], [b["data"] for b in cell]) for cell in cells]

    def cell(self, header, seq, beats):
        data = [(self.rng.getrandbits(self.width - 32) << 32) | (seq << 16) | self.eid for _ in range(beats)]
        self.tx.append((header, data))
        return data

    def sender(self, sink, fc, n):
        yield fc.ready.eq(1)
        idx, beat = 0, 0
        while idx < len(self.tx):
            if (yield fc.valid):
                self.fc_frames += 1
                if (yield fc.on_valid):
                    self.paused.add((yield fc.on_channel))
                if (yield fc.off_valid):
                    self.paused.discard((yield fc.off_channel))
            header, data = self.tx[idx]
            if beat == 0:
                channel = l2_header_unpack(header)[2][0] % n
                if self.rng.random() < self.gap or (self.honour_fc and channel in self.paused):
                    yield sink.valid.eq(0)
                    yield
                    continue
            yield sink.valid.eq(1)
            yield sink.header.eq(header)
            yield sink.data.eq(data[beat])
            yield sink.last.eq(beat == len(data) - 1)
            yield
            beat += 1
            if beat == len(data):
                beat, idx = 0, idx + 1
        yield sink.valid.eq(0)

    def receiver(self, source):
        return collect(source, self.beats, self.rng, ["header", "data", "last"], self.ready)


def drain(switches, endpoints, expected, cap, then=None):
    """Run until `expected` cells have been received (or `cap` cycles), then a few cell times, then `then`."""
    def gen():
        for _ in range(cap):
            if sum(b["last"] for e in endpoints for b in e.beats) >= expected:
                break
            yield
        for _ in range(4 * switches[0].beats):
            yield
        if then is not None:
            yield from then()
    return gen()


def flows(ep):
    """Received cells grouped by sending endpoint, in arrival order."""
    out = {}
    for header, data in ep.rx:
        out.setdefault(data[0] & 0xFFFF, []).append((header, data))
    return out


def check_counters(sw):
    """No loss anywhere: no full VOQ, no malformed cell, no network collision, no output overflow."""
    for inp in sw.inputs:
        for c in ("drop_full", "drop_malformed"):
            assert (yield inp.counters[c]) == 0, c
    assert (yield sw.collisions) == 0
    assert (yield sw.counters["out_overflow"]) == 0


def test_single_switch_forwarding_and_drops():
    rng = random.Random(11)
    sw = RIFLSwitch(N, W, voq_cells=8, iterations=K)
    eps = [Endpoint(i, rng, gap=0.2, ready=rng.choice([1.0, 0.6])) for i in range(N)]
    expect = {j: {} for j in range(N)}
    bad = {"hops": 0, "loop": 0}
    for i, ep in enumerate(eps):
        for seq in range(14):
            j = rng.randrange(1, 256)
            if rng.random() < 0.1:
                j = rng.choice([0, N, 4 * N])            # loops back: dropped
            remain0 = rng.random() < 0.05
            total = rng.randrange(1, 6)
            header = l2_header_pack(total, 0 if remain0 else total,
                                    [j] + [rng.randrange(256) for _ in range(4)])
            data = ep.cell(header, seq, sw.beats)
            if remain0:
                bad["hops"] += 1
            elif port_loops(j, N):
                bad["loop"] += 1
            else:
                expect[dst_port(i, j, N)].setdefault(i, []).append((l2_forward(header), data))
    total_ok = sum(len(v) for e in expect.values() for v in e.values())
    gens = [ep.sender(sw.sinks[i], sw.fcs[i], N) for i, ep in enumerate(eps)]
    gens += [ep.receiver(sw.sources[i]) for i, ep in enumerate(eps)]
    seen = {}

    def counters():
        for c in ("drop_hops", "drop_loop"):
            seen[c] = 0
            for inp in sw.inputs:
                seen[c] += yield inp.counters[c]
        seen["cells_out"] = yield sw.counters["cells_out"]
        yield from check_counters(sw)
    gens.append(drain([sw], eps, total_ok, 20000, counters))
    run_simulation(sw, gens)
    for j, ep in enumerate(eps):
        assert flows(ep) == expect[j]
    assert seen == {"drop_hops": bad["hops"], "drop_loop": bad["loop"], "cells_out": total_ok}


@pytest.mark.parametrize("width,k,pipelined", [(W, K, False), (256, 2, True)])
def test_line_rate_permutation(width, k, pipelined):
    """A fixed permutation at full load: every output receives a cell every cell time, with every cell's
    contents (also with the pipelined scheduler: 7 of 8 cycles a cell time)."""
    sw = RIFLSwitch(N, width, voq_cells=8, iterations=k, pipelined_scheduler=pipelined)
    rng = random.Random(3)
    eps = [Endpoint(i, rng, gap=0.0, width=width) for i in range(N)]
    cells = 12
    for i, ep in enumerate(eps):
        for seq in range(cells):
            ep.cell(l2_header_pack(1, 1, [1 + (i % 3)]), seq, sw.beats)     # distinct outputs
    gens = [ep.sender(sw.sinks[i], sw.fcs[i], N) for i, ep in enumerate(eps)]
    gens += [ep.receiver(sw.sources[i]) for i, ep in enumerate(eps)]
    stamps = []

    @passive
    def watch():
        t = 0
        while True:
            yield
            t += 1
            if (yield sw.sources[0].valid) and (yield sw.sources[0].last) and (yield sw.sources[0].ready):
                stamps.append(t)
    gens += [watch(), drain([sw], eps, N * cells, 5000)]
    run_simulation(sw, gens)
    for i, ep in enumerate(eps):
        dst = eps[(i + 1 + (i % 3)) % N]
        assert [d for _, d in flows(dst)[i]] == [d for _, d in ep.tx]
    gaps = [b - a for a, b in zip(stamps, stamps[1:])]
    assert gaps and max(gaps[2:]) == sw.beats          # back to back: one cell each cell time


def test_flow_control_slow_outputs_never_overflow():
    """Everybody sends to one slow output: VOQs fill, pause their senders and never overflow."""
    rng = random.Random(5)
    sw = RIFLSwitch(N, W, voq_cells=4, iterations=K)
    eps = [Endpoint(i, rng, gap=0.0, ready=0.25 if i == 0 else 1.0) for i in range(N)]
    count = 0
    for i, ep in enumerate(eps[1:], start=1):
        for seq in range(7):
            ep.cell(l2_header_pack(1, 1, [(0 - i) % N]), seq, sw.beats)       # all to output 0
            count += 1
    peak = [0] * N
    frames = []

    @passive
    def watch():
        while True:
            yield
            for i in range(1, N):
                peak[i] = max(peak[i], (yield sw.inputs[i].occupancy[0]))
                if (yield sw.fcs[i].valid):
                    frames.append((i, (yield sw.fcs[i].on_valid), (yield sw.fcs[i].on_channel),
                                   (yield sw.fcs[i].off_valid), (yield sw.fcs[i].off_channel)))
    gens = [ep.sender(sw.sinks[i], sw.fcs[i], N) for i, ep in enumerate(eps)]
    gens += [ep.receiver(sw.sources[i]) for i, ep in enumerate(eps)]
    gens += [watch(), drain([sw], eps, count, 40000, lambda: check_counters(sw))]
    run_simulation(sw, gens)
    assert len(eps[0].rx) == count
    assert sw.inputs[1].on_threshold < max(peak) <= 4                  # paused, never overflowed
    on_frames = [f for f in frames if f[1]]
    assert on_frames and all(f[2] == (0 - f[0]) % N for f in on_frames)   # channel = Dst Port 1 value
    for i in range(1, N):
        ons = sum(1 for f in frames if f[0] == i and f[1])
        offs = sum(1 for f in frames if f[0] == i and f[3])
        assert ons == offs                                            # every pause was lifted


def test_ignored_flow_control_drops_and_counts():
    rng = random.Random(6)
    sw = RIFLSwitch(N, W, voq_cells=4, iterations=K)
    eps = [Endpoint(i, rng, gap=0.0, ready=0.05 if i == 0 else 1.0, honour_fc=False) for i in range(N)]
    for seq in range(12):
        eps[1].cell(l2_header_pack(1, 1, [3]), seq, sw.beats)
    gens = [eps[1].sender(sw.sinks[1], sw.fcs[1], N), eps[0].receiver(sw.sources[0])]

    def check():
        for _ in range(12 * sw.beats + 20):
            yield
        full = yield sw.inputs[1].counters["drop_full"]
        cells_in = yield sw.inputs[1].counters["cells_in"]
        assert full > 0 and full + cells_in == 12
    run_simulation(sw, gens + [check()])


class Chain(Module):
    """Switches in a line: port N-1 of switch s linked to port 0 of switch s+1, both ways, cells and per-VOQ
    flow-control frames (`fc_link=False`: the frames are consumed and ignored, as by a switch without
    downstream flow control)."""
    def __init__(self, count, voq_cells=8, fc_link=True):
        self.switches = [RIFLSwitch(N, W, voq_cells=voq_cells, iterations=K) for _ in range(count)]
        for s, sw in enumerate(self.switches):
            setattr(self.submodules, f"sw{s}", sw)
        for a, b in zip(self.switches, self.switches[1:]):
            self.comb += [a.sources[N - 1].connect(b.sinks[0]), b.sources[0].connect(a.sinks[N - 1])]
            if fc_link:
                self.comb += [b.fcs[0].connect(a.fc_ins[N - 1]), a.fcs[N - 1].connect(b.fc_ins[0])]
            else:
                self.comb += [a.fcs[N - 1].ready.eq(1), b.fcs[0].ready.eq(1)]


def route(src, dst):
    """Dst Port values from endpoint (switch, port) src to dst along the chain (relative addresses)."""
    (s, p), (t, q) = src, dst
    ports, cur = [], p
    step = 1 if t > s else -1
    while s != t:
        out = N - 1 if step > 0 else 0
        ports.append((out - cur) % N)
        s += step
        cur = 0 if step > 0 else N - 1
    ports.append((q - cur) % N)
    return ports


@pytest.mark.parametrize("count", [2, extended(3)])
def test_chain_routes_and_replies(count):
    rng = random.Random(20 + count)
    top = Chain(count)
    # Endpoints on every port except the chain links.
    places = [(s, p) for s in range(count) for p in range(N)
              if not (p == N - 1 and s < count - 1) and not (p == 0 and s > 0)]
    eps = {pl: Endpoint(k, rng, gap=0.2) for k, pl in enumerate(places)}
    expect = {pl: {} for pl in places}
    sent_to = {pl: Counter() for pl in places}
    sent = 0
    for pl, ep in eps.items():
        for seq in range(3):
            dst = rng.choice([q for q in places if q != pl])
            ports = route(pl, dst)
            header = l2_header_pack(len(ports), len(ports), ports)
            data = ep.cell(header, seq, top.switches[0].beats)
            out = header
            for _ in ports:
                out = l2_forward(out)
            expect[dst].setdefault(ep.eid, []).append((out, data))
            sent_to[pl][dst] += 1
            sent += 1
    gens = []
    for (s, p), ep in eps.items():
        sw = top.switches[s]
        gens += [ep.sender(sw.sinks[p], sw.fcs[p], N), ep.receiver(sw.sources[p])]
    gens.append(drain(top.switches, list(eps.values()), sent, 20000))
    run_simulation(top, gens)
    for pl, ep in eps.items():
        assert flows(ep) == expect[pl]

    # Replies: every endpoint answers each cell it got using reply_route(); the answers reach the senders.
    for ep in eps.values():
        ep.tx, received, ep.beats = [], ep.rx, []
        for k, (header, data) in enumerate(received):
            total, remain, _ = l2_header_unpack(header)
            assert remain == 0
            ep.cell(reply_route(header), k, top.switches[0].beats)
    replies = sum(len(ep.tx) for ep in eps.values())
    top = Chain(count)
    gens = []
    for (s, p), ep in eps.items():
        sw = top.switches[s]
        gens += [ep.sender(sw.sinks[p], sw.fcs[p], N), ep.receiver(sw.sources[p])]
    gens.append(drain(top.switches, list(eps.values()), replies, 20000))
    run_simulation(top, gens)
    by_id = {ep.eid: pl for pl, ep in eps.items()}
    for pl, ep in eps.items():
        assert Counter(by_id[d[0] & 0xFFFF] for _, d in ep.rx) == sent_to[pl]


@pytest.mark.parametrize("fc_link", [extended(True), False])
def test_chain_downstream_flow_control(fc_link):
    """Two switches, three senders on the first, a slow receiver behind the second: the second switch's VOQ
    for the slow output pauses the first switch's output (per channel), which holds those cells, fills its
    own VOQs and pauses the senders. Reference: every cell delivered once, in per-flow order, with the
    header the route model gives, no VOQ overflow, every pause lifted. Without the flow-control link the
    same traffic overflows the second switch's VOQ (the check is not vacuous)."""
    rng = random.Random(40)
    top = Chain(2, voq_cells=4, fc_link=fc_link)
    s0, s1 = top.switches
    senders, receivers = [(0, p) for p in range(N - 1)], [(1, q) for q in range(1, N)]
    slow = (1, 1)
    eps = {pl: Endpoint(k, rng, gap=0.0, ready=0.12 if pl == slow else 1.0) for k, pl in enumerate(senders + receivers)}
    expect = {pl: {} for pl in receivers}
    for pl in senders:
        for seq in range(12):
            dst = slow if rng.random() < 0.6 else rng.choice(receivers[1:])
            ports = route(pl, dst)
            header = l2_header_pack(len(ports), len(ports), ports)
            data = eps[pl].cell(header, seq, s0.beats)
            expect[dst].setdefault(eps[pl].eid, []).append((l2_forward(l2_forward(header)), data))
    sent = sum(len(v) for e in expect.values() for v in e.values())
    gens = []
    for (s, p), ep in eps.items():
        sw = top.switches[s]
        gens += [ep.sender(sw.sinks[p], sw.fcs[p], N), ep.receiver(sw.sources[p])]
    seen = {"peak": 0, "on": Counter(), "off": Counter(), "late": 0}

    @passive
    def watch():
        paused, mid = set(), False                  # the second switch's paused channels, from its frames
        while True:
            yield
            for o in s1.inputs[0].occupancy:
                seen["peak"] = max(seen["peak"], (yield o))
            src = s0.sources[N - 1]
            if (yield src.valid) and (yield src.ready):
                # A cell may start in the cycle an ON frame arrives, never later.
                if not mid and downstream_channel((yield src.header), N) in paused:
                    seen["late"] += 1
                mid = not (yield src.last)
            fc = s1.fcs[0]
            if (yield fc.valid) and (yield fc.ready):
                if (yield fc.on_valid):
                    seen["on"][(yield fc.on_channel)] += 1
                    paused.add((yield fc.on_channel))
                if (yield fc.off_valid):
                    seen["off"][(yield fc.off_channel)] += 1
                    paused.discard((yield fc.off_channel))

    def counters():
        seen.update(drop_full=0, cells_in=[0, 0], cells_out=[0, 0])
        for s, sw in enumerate(top.switches):
            seen["cells_out"][s] = yield sw.counters["cells_out"]
            for inp in sw.inputs:
                seen["drop_full"] += yield inp.counters["drop_full"]
                seen["cells_in"][s] += yield inp.counters["cells_in"]
        seen["fc_hold"] = yield s0.counters["fc_hold"]
        seen["fc_bad"] = yield s0.counters["fc_bad"]
        seen["down_paused"] = yield s0.down_paused[N - 1]
        assert (yield s0.collisions) == 0 and (yield s1.collisions) == 0
    if not fc_link:
        def overflow():
            for _ in range(3000):
                if (yield s1.inputs[0].counters["drop_full"]):
                    break
                yield
            yield from counters()
        run_simulation(top, gens + [watch(), overflow()])
        assert seen["drop_full"] > 0 and seen["on"][1] > 0
        return
    gens += [watch(), drain(top.switches, list(eps.values()), sent, 12000, counters)]
    run_simulation(top, gens)
    for pl in receivers:
        assert flows(eps[pl]) == expect[pl]
    assert seen["drop_full"] == 0 and seen["peak"] <= 4 and seen["late"] == 0
    assert seen["cells_in"] == [sent, sent] and seen["cells_out"] == [sent, sent]
    assert seen["on"][1] > 0 and seen["on"] == seen["off"]            # paused (slow channel) and lifted
    assert seen["fc_hold"] > 0 and seen["fc_bad"] == 0 and seen["down_paused"] == 0


def test_output_link_pause_and_bad_channels():
    """An endpoint's link pause (channel 0) stops its output completely until resumed; out-of-range channels
    are ignored and counted; nothing is lost and order is kept."""
    rng = random.Random(8)
    sw = RIFLSwitch(N, W, voq_cells=8, iterations=K)
    src, dst = Endpoint(1, rng, gap=0.0), Endpoint(0, rng)
    sent = [src.cell(l2_header_pack(1, 1, [N - 1]), seq, sw.beats) for seq in range(6)]    # 1 + 3 = output 0
    seen = {}

    def control():
        fin = sw.fc_ins[0]
        for on, on_ch, off, off_ch in [(1, 0, 0, 0), (1, 9, 1, 200)]:          # pause the link, then a bad frame
            yield fin.valid.eq(1)
            yield fin.on_valid.eq(on)
            yield fin.on_channel.eq(on_ch)
            yield fin.off_valid.eq(off)
            yield fin.off_channel.eq(off_ch)
            yield
        yield fin.valid.eq(0)
        for _ in range(40 * sw.beats):
            yield
        seen["paused_rx"] = len(dst.rx)
        seen["hold"] = yield sw.counters["fc_hold"]
        seen["queued"] = yield sw.inputs[1].occupancy[0]
        seen["bad"] = yield sw.counters["fc_bad"]
        seen["down_paused"] = yield sw.down_paused[0]
        yield fin.valid.eq(1)
        yield fin.on_valid.eq(0)
        yield fin.off_valid.eq(1)
        yield fin.off_channel.eq(0)
        yield
        yield fin.valid.eq(0)
        for _ in range(20 * sw.beats):
            yield
    run_simulation(sw, [src.sender(sw.sinks[1], sw.fcs[1], N), dst.receiver(sw.sources[0]), control()])
    # Paused from the start: never scheduled, so the cells wait in their VOQ, none at the output.
    assert seen["paused_rx"] == 0 and seen["queued"] == 6 and seen["hold"] == 0
    assert seen["down_paused"] == 1 and seen["bad"] == 2
    assert [d for _, d in dst.rx] == sent


def test_downstream_channel_rule():
    assert downstream_channel(l2_header_pack(2, 1, [5, 3]), 4) == 1        # next switch: Dst Port 1 mod N
    assert downstream_channel(l2_header_pack(2, 0, [5, 3]), 4) == 0        # endpoint next: link channel
    with pytest.raises(ValueError):
        downstream_channel(l2_header_pack(1, 1, [1]), 6)


def test_parameters():
    with pytest.raises(ValueError):
        RIFLSwitch(4, 1024, iterations=1)        # 2 beats a cell: no time for an iteration
    with pytest.raises(ValueError):
        RIFLSwitch(4, 512, iterations=1, pipelined_scheduler=True)      # 4 beats < 3k + 2
    with pytest.raises(ValueError):
        RIFLSwitch(4, 256, voq_cells=6)
    with pytest.raises(ValueError):
        RIFLSwitch(4, 256, voq_cells=8, on_threshold=2, off_threshold=3)

"""The RIFL checkers fed every fault they must detect: the L1 TrafficChecker (cores.rifl.traffic) and the
network block's L2TrafficChecker (cores.rifl_net.traffic), each fed its own generator's packets through a
fault-injecting stage (the exact counters expected), and the Python checks of the link and network tests
(tests.harness.rifl.assert_delivered, tests.harness.rifl_net.check_run) fed synthetic records."""
import random
import re
from collections import Counter, namedtuple
from types import SimpleNamespace

import pytest
from migen import Module
from migen.sim import run_simulation

from cores.rifl.common import (CHK_COUNTERS, l2_deliver, l2_header_pack, l2_header_unpack, payload_bytes,
                               reply_route)
from cores.rifl.traffic import TrafficChecker, TrafficGenerator
from cores.rifl_net.topology import one_switch
from cores.rifl_net.traffic import L2TrafficChecker, L2TrafficGenerator
from sim.verilated.rifl_net import Delivery, Packet, Result
from tests.harness import streams
from tests.harness.rifl import assert_delivered, random_beats
from tests.harness.rifl_net import check_run

L1_F, L1_PACKETS = 64, 16
L2_DW, L2_PACKETS, L2_HOSTS, L2_RX = 64, 5, 4, 0      # packets per source; every other host sends to host L2_RX
SETTLE = 32              # cycles after the last beat: the L1 checker's random ready drains its pipe

# Counter changes each fault gives: delivered relative to the packets sent, the fault counters from 0.
EXPECTED = {
    "none": {},
    "drop": dict(delivered=-1, lost=1),
    "drop3": dict(delivered=-3, lost=3),
    "repeat": dict(delivered=1, duplicated=1),               # the copy is intact too
    "swap": dict(lost=1, out_of_order=1),                    # k+1 jumps ahead (lost 1), k then comes back
    "flip": dict(delivered=-1, corrupted=1),
    "length": dict(delivered=-1, corrupted=1),
    "truncate": dict(delivered=-1, corrupted=1),
    "unlast": dict(delivered=-2, lost=1, corrupted=1),       # runs into the next packet, which is never seen
}
L2_EXPECTED = dict(EXPECTED,
                   reply=dict(delivered=-1, corrupted=1),
                   unknown_source=dict(delivered=-1, lost=1, corrupted=1),   # its own flow then misses it
                   header=dict(delivered=-1, corrupted=1))


def expected_counters(sent, fault, table):
    out = {name: 0 for name, _ in CHK_COUNTERS}
    out["delivered"] = sent
    for name, d in table[fault].items():
        out[name] += d
    return out


# The fault-injecting stage: packets (lists of beat dicts) in the order the checker is to see them --------------

# What the faults need of a checker's packets: flow(p) (the sequence a packet belongs to), valid_bits(p, b)
# (bits of beat b inside the packet), tag_bits (beat 0's sequence tag, left intact), lengthen(p, rng).
Kit = namedtuple("Kit", "flow valid_bits tag_bits lengthen")


def flow_rest(pkts, kit, i):
    """Indices of the packets of pkts[i]'s flow from i on."""
    return [j for j in range(i, len(pkts)) if kit.flow(pkts[j]) == kit.flow(pkts[i])]


def pick(rng, pkts, ok):
    choices = [i for i in range(len(pkts)) if ok(i)]
    assert choices, "no packet fits the fault"
    return rng.choice(choices)


def copy(pkts):
    return [[dict(b) for b in p] for p in pkts]


def inject(fault, pkts, rng, kit):
    """pkts with `fault` applied to one packet (chosen so that EXPECTED holds exactly: a dropped, swapped or
    relabelled packet has a later one in its flow, so the checker sees the gap)."""
    pkts = copy(pkts)
    rest = lambda i: flow_rest(pkts, kit, i)
    if fault == "drop":
        del pkts[pick(rng, pkts, lambda i: len(rest(i)) > 1)]
    elif fault == "drop3":
        for i in reversed(rest(pick(rng, pkts, lambda i: len(rest(i)) > 3))[:3]):
            del pkts[i]
    elif fault == "repeat":
        i = pick(rng, pkts, lambda i: True)
        pkts.insert(i + 1, copy([pkts[i]])[0])
    elif fault == "swap":
        i = pick(rng, pkts, lambda i: len(rest(i)) > 1)
        j = rest(i)[1]
        pkts[i], pkts[j] = pkts[j], pkts[i]
    elif fault == "flip":
        bits = [(i, b, bit) for i, p in enumerate(pkts) for b in range(len(p))
                for bit in range(kit.tag_bits if b == 0 else 0, kit.valid_bits(p, b))]
        i, b, bit = rng.choice(bits)
        pkts[i][b]["data"] ^= 1 << bit
    elif fault == "length":
        i = pick(rng, pkts, lambda i: True)
        kit.lengthen(pkts[i], rng)
    elif fault == "truncate":
        i = pick(rng, pkts, lambda i: len(pkts[i]) > 1)
        pkts[i] = pkts[i][:rng.randrange(1, len(pkts[i]))]
        pkts[i][-1]["last"] = 1
    elif fault == "unlast":                       # the packet it runs into is not the last of its flow
        i = pick(rng, pkts, lambda i: i + 1 < len(pkts) and len(rest(i + 1)) > 1)
        pkts[i][-1]["last"] = 0
    elif fault == "reply":
        i = pick(rng, pkts, lambda i: True)
        for b in pkts[i]:
            b["reply"] ^= 1 << rng.randrange(8)
    elif fault == "header":                       # Remain Hops 1 left; the reply the reassembler computes
        i = pick(rng, pkts, lambda i: True)
        total, _, ports = l2_header_unpack(pkts[i][0]["header"])
        for b in pkts[i]:
            b["header"] = l2_header_pack(total, 1, ports)
            b["reply"] = reply_route(b["header"])
    elif fault == "unknown_source":
        i = pick(rng, pkts, lambda i: len(rest(i)) > 1)
        pkts[i][0]["data"] = (pkts[i][0]["data"] & ~0xFFFF) | rng.randrange(L2_HOSTS, 1 << 16)
    else:
        assert fault == "none"
    return pkts


def run_checker(gens, chk, fields, count, stage, seed):
    """Each generator sends `count` packets (taken with random ready); stage(packets per generator, rng) gives
    the beats the checker then takes (random valid). Returns the checker's counters."""
    m = Module()
    m.submodules += gens + [chk]
    rng = random.Random(seed)
    beats, counters = [[] for _ in gens], {}

    def main():
        for g in gens:
            yield g.limit.eq(count)
            yield g.enable.eq(1)
        while any(len(streams.packets(b)) < count for b in beats):
            yield
        yield from streams.send(chk.sink, stage([streams.packets(b) for b in beats], rng), rng, valid_p=0.7)
        for _ in range(SETTLE):
            yield
        for name, sig in chk.counters.items():
            counters[name] = yield sig
    run_simulation(m, [main()] + [streams.collect(g.source, b, random.Random(seed + 1 + k), fields, ready_p=0.8)
                                  for k, (g, b) in enumerate(zip(gens, beats))])
    return counters


# L1: TrafficChecker ------------------------------------------------------------------------------------

def l1_lengthen(p, rng):
    b = p[-1]
    b["nbytes"] = rng.choice([n for n in range(1, payload_bytes(L1_F) + 1) if n != b["nbytes"]])


L1_KIT = Kit(flow=lambda p: 0, valid_bits=lambda p, b: 8 * p[b]["nbytes"], tag_bits=32, lengthen=l1_lengthen)


@pytest.mark.parametrize("fault", sorted(EXPECTED))
def test_traffic_checker_faults(fault):
    """The generator's packets, one fault injected (or none), through the checker with random back-pressure
    (ready_rate): every counter exactly as EXPECTED."""
    def stage(per_gen, rng):
        (pkts,) = per_gen
        return [b for p in inject(fault, pkts, rng, L1_KIT) for b in p]
    chk = TrafficChecker(L1_F)
    chk.comb += chk.ready_rate.eq(160)
    seed = 1 + sorted(EXPECTED).index(fault)
    got = run_checker([TrafficGenerator(L1_F)], chk, ("data", "nbytes", "last"), L1_PACKETS, stage, seed)
    assert got == expected_counters(L1_PACKETS, fault, EXPECTED)


# L2: L2TrafficChecker ----------------------------------------------------------------------------------

TOPO = one_switch(L2_HOSTS)
L2_SOURCES = [s for s in range(L2_HOSTS) if s != L2_RX]
HEADERS = [l2_deliver(TOPO.route(s, L2_RX)) if s != L2_RX else 0 for s in range(L2_HOSTS)]


def l2_valid_bits(p, b):
    return 8 * min(L2_DW // 8, p[0]["length"] - b * (L2_DW // 8))


def l2_lengthen(p, rng):
    d = rng.choice([-1, 1])
    for b in p:
        b["length"] += d


L2_KIT = Kit(flow=lambda p: p[0]["data"] & 0xFFFF, valid_bits=l2_valid_bits, tag_bits=48, lengthen=l2_lengthen)


def l2_delivered(pkts):
    """The generator's beats as the receiving host's reassembler delivers them: the header as the switch
    forwarded it and the reply route the reassembler computes."""
    out = []
    for p in pkts:
        header = l2_deliver(p[0]["route"])
        out.append([dict(data=b["data"], last=b["last"], length=b["length"], header=header,
                         reply=reply_route(header)) for b in p])
    return out


def interleave(rng, flows):
    """The flows' packets merged in a random order that keeps each flow's."""
    flows, out = [list(f) for f in flows], []
    while any(flows):
        out.append(rng.choice([f for f in flows if f]).pop(0))
    return out


@pytest.mark.parametrize("fault", sorted(L2_EXPECTED))
def test_l2_traffic_checker_faults(fault):
    """The generators of the other hosts of a 4-host switch, their packets to host 0 interleaved as the switch
    would (each source's in order), one fault injected: host 0's checker counts exactly as L2_EXPECTED."""
    def stage(per_gen, rng):
        pkts = interleave(rng, [l2_delivered(p) for p in per_gen])
        return [b for p in inject(fault, pkts, rng, L2_KIT) for b in p]
    gens = [L2TrafficGenerator(s, [TOPO.route(s, L2_RX)], L2_DW) for s in L2_SOURCES]
    chk = L2TrafficChecker(L2_HOSTS, HEADERS, L2_DW)
    seed = 100 + sorted(L2_EXPECTED).index(fault)
    got = run_checker(gens, chk, ("data", "last", "length", "route"), L2_PACKETS, stage, seed)
    assert got == expected_counters(len(gens) * L2_PACKETS, fault, L2_EXPECTED)


# Python: the link tests' assert_delivered --------------------------------------------------------------

BEAT_FAULTS = ["drop", "repeat", "swap", "flip", "nbytes", "last"]


def beat_fault(fault, beats, rng):
    """(beats with `fault` at one beat, the index of the first beat that differs)."""
    beats = list(beats)
    i = rng.randrange(len(beats) - 1)
    d, n, last = beats[i]
    if fault == "drop":
        del beats[i]
    elif fault == "repeat":
        beats.insert(i, beats[i])
        return beats, i + 1
    elif fault == "swap":                         # random data: two beats never equal
        beats[i], beats[i + 1] = beats[i + 1], beats[i]
    elif fault == "flip":
        beats[i] = (d ^ (1 << rng.randrange(8 * n)), n, last)
    elif fault == "nbytes":
        beats[i] = (d, n - 1 if n > 1 else 2, last)
    else:
        beats[i] = (d, n, not last)
    return beats, i


@pytest.mark.parametrize("fault", BEAT_FAULTS)
def test_assert_delivered_faults(fault):
    """One direction's beats with one fault: assert_delivered names that direction and the first beat that
    differs; the other direction and the clean case pass."""
    rng = random.Random(BEAT_FAULTS.index(fault))
    traffic = {d: random_beats(rng, L1_F, 40) for d in ("ab", "ba")}
    assert_delivered(traffic, {d: list(b) for d, b in traffic.items()})
    bad, i = beat_fault(fault, traffic["ab"], rng)
    with pytest.raises(AssertionError, match=rf"^ab: {len(bad)} received vs 40 sent, first difference at {i}$"):
        assert_delivered(traffic, {"ab": bad, "ba": list(traffic["ba"])})


# Python: the network tests' check_run against the reference routing --------------------------------------

NET = SimpleNamespace(topology=one_switch(4), voq_cells=8)


def clean_net_run(rng):
    """Two packets from every host to every other, delivered intact, in order per flow, in a random
    interleaving of the flows, with the reference header and reply route and the counters a clean run has."""
    topo = NET.topology
    packets = [Packet(s, 0, rng.randint(8, 300), d) for s in range(topo.hosts) for d in range(topo.hosts) if d != s
               for _ in range(2)]
    seq, flows = Counter(), {}
    for p in packets:
        header = l2_deliver(topo.route(p.src, p.dst))
        flows.setdefault((p.src, p.dst), []).append(
            Delivery(p.dst, 0, p.src, seq[p.src], p.length, header, reply_route(header), True))
        seq[p.src] += 1
    delivered = interleave(rng, flows.values())
    counters = Counter({f"h{h}_rx_delivered": sum(1 for d in delivered if d.host == h) for h in range(topo.hosts)})
    return packets, Result({}, delivered, [], counters, 0)


NET_FAULTS = ["lost", "duplicated", "unknown", "reordered", "corrupted", "length", "host", "header", "reply",
              "switch_drop", "host_error"]


def net_fault(fault, result, rng):
    """(result with `fault`, a regular expression of the report check_run must give)."""
    got, k = list(result.delivered), Counter(result.counters)
    i = rng.randrange(len(got))
    d = got[i]
    if fault == "lost":
        del got[i]
        expect = rf"^lost \[\({d.src}, {d.seq}\)\] \(1\), duplicated \[\], unknown \[\]$"
    elif fault == "duplicated":
        got.insert(i, d)
        expect = rf"^lost \[\] \(0\), duplicated \[\({d.src}, {d.seq}\)\], unknown \[\]$"
    elif fault == "unknown":
        got[i] = d._replace(seq=1000)
        expect = rf"^lost \[\({d.src}, {d.seq}\)\] \(1\), duplicated \[\], unknown \[\({d.src}, 1000\)\]$"
    elif fault == "reordered":
        j = next(j for j in range(len(got)) if j != i and (got[j].src, got[j].host) == (d.src, d.host))
        got[i], got[j] = got[j], got[i]
        expect = rf"^flow \({d.src}, {d.host}\) reordered$"
    elif fault == "corrupted":
        got[i] = d._replace(ok=False)
        expect = r"^1 packets delivered with wrong contents, expected 0"
    elif fault in ("length", "host", "header", "reply"):
        total, _, ports = l2_header_unpack(d.header)
        bad = dict(length=d.length + 1, host=(d.host + 1) % NET.topology.hosts,
                   header=l2_header_pack(total, 1, ports), reply=d.reply ^ 1)[fault]
        got[i] = d._replace(**{fault: bad})
        expect = "^" + re.escape(str(got[i]) if fault != "header" else str((got[i], hex(d.header))))
    elif fault == "switch_drop":
        k["s0_drop_full"] = 1
        expect = r"^\('drop_full', 0, 1\)$"
    else:
        k[f"h{d.host}_rx_timeouts"] = 1
        expect = rf"^\('rx_timeouts', {d.host}, 1\)$"
    return result._replace(delivered=got, counters=k), expect


@pytest.mark.parametrize("fault", NET_FAULTS)
def test_check_run_faults(fault):
    """A synthetic clean network run passes check_run; with one fault it fails with that fault's report (lost,
    duplicated, unknown, reordered flow, wrong contents, the delivery with the wrong length, host, header or
    reply, the counter that counted a drop or an error)."""
    rng = random.Random(NET_FAULTS.index(fault))
    packets, result = clean_net_run(rng)
    check_run(NET, packets, result)
    bad, expect = net_fault(fault, result, rng)
    with pytest.raises(AssertionError, match=expect):
        check_run(NET, packets, bad)


def test_check_run_allows_the_corrupted_it_is_told():
    """`corrupted=1`: one packet with wrong contents passes (a CRC escape), two do not."""
    packets, result = clean_net_run(random.Random(1))
    got = list(result.delivered)
    got[3] = got[3]._replace(ok=False)
    check_run(NET, packets, result._replace(delivered=got), corrupted=1)
    got[5] = got[5]._replace(ok=False)
    with pytest.raises(AssertionError, match="^2 packets delivered with wrong contents, expected 1"):
        check_run(NET, packets, result._replace(delivered=got), corrupted=1)

"""Shared helpers of the RIFL network tests: the Verilated networks (built once per configuration), seeded
traffic, and the check of a run against the topology's reference routing (cores.rifl_net.topology) and
the Layer 2 reference (cores.rifl.common.l2_forward, reply_route)."""
import random
from collections import Counter, defaultdict

from cores.rifl.common import l2_deliver, reply_route
from sim.verilated.rifl_net import ECHO_ASK, SEQ_ORDER, NetModel, Packet

_models = {}


def net_model(topology, **kw):
    """The Verilated network of `topology` (RIFLNetwork keywords), built once per configuration. Built with
    sim.verilated's quick_build: the tests' runs are a few thousand to 10^5 cycles (under a CPU-second each
    at -Os), while the C++ build of these 8-9 MB models is most of a test file's time (the switch's: 53
    CPU-s at -Os, 23 at -O0; the two-level tree's about 4 times less at -O0). Same RTL, same checks."""
    key = (topology.name, tuple(sorted(kw.items())))
    if key not in _models:
        _models[key] = NetModel(topology, quick_build=True, **kw)
    return _models[key]


def random_packets(rng, topology, count, srcs=None, dsts=None, lengths=(8, 2048), t_max=0, echo=False):
    """`count` packets per source host (default every host) to random other hosts of `dsts`, random lengths,
    offered at random cycles below t_max."""
    hosts = range(topology.hosts)
    out = []
    for s in (hosts if srcs is None else srcs):
        choices = [d for d in (hosts if dsts is None else dsts) if d != s]
        times = sorted(rng.randrange(t_max + 1) for _ in range(count))
        out += [Packet(s, t, rng.randint(*lengths), rng.choice(choices), echo) for t in times]
    return out


def expected_packets(topology, packets, result):
    """(src, seq) -> (dst, length, route) of every packet offered, echoes included (their route: the reply the
    receiving RTL computed, their destination: the original sender)."""
    seq, out = Counter(), {}
    for p in packets:
        key = (p.src, seq[p.src] | (ECHO_ASK if p.echo else 0))
        seq[p.src] += 1
        out[key] = (p.dst, p.length, topology.route(p.src, p.dst))
    by_key = {(d.src, d.seq): d for d in result.delivered}
    for host, eseq, src, oseq in result.echoes:
        original = by_key[(src, oseq)]
        out[(host, eseq)] = (src, original.length, original.reply)
    return out


def check_run(model, packets, result, corrupted=0):
    """Every packet (and echo) arrived exactly once, at its destination, intact (but `corrupted` of them), in
    order per flow (a host's packets and echoes share its order), with the header the reference forwarding gives and the reference reply route, which leads
    back to the sender; no VOQ overflowed or dropped a cell and no switch or reassembler dropped anything."""
    topo = model.topology
    exp = expected_packets(topo, packets, result)
    got = Counter((d.src, d.seq) for d in result.delivered)
    lost = sorted(set(exp) - set(got))
    dup = sorted(k for k, v in got.items() if v > 1)
    extra = sorted(set(got) - set(exp))
    assert not lost and not dup and not extra, f"lost {lost[:8]} ({len(lost)}), duplicated {dup[:8]}, unknown {extra[:8]}"
    flows = defaultdict(list)
    bad = []
    for d in result.delivered:
        dst, length, route = exp[(d.src, d.seq)]
        assert d.host == dst and d.length == length, d
        assert d.header == l2_deliver(route), (d, hex(l2_deliver(route)))
        assert d.reply == reply_route(d.header) and topo.follow(d.host, d.reply) == d.src, d
        if not d.ok:
            bad.append(d)
        flows[(d.src, d.host)].append(d.seq & SEQ_ORDER)
    assert len(bad) == corrupted, f"{len(bad)} packets delivered with wrong contents, expected {corrupted}: {bad[:4]}"
    for flow, seqs in flows.items():
        assert seqs == sorted(seqs), f"flow {flow} reordered"
    k = result.counters
    for s in range(len(topo.switches)):
        assert k[f"s{s}_peak"] <= model.voq_cells
        for name in ("drop_full", "drop_hops", "drop_loop", "drop_malformed", "collisions", "out_overflow",
                     "fc_bad", "malformed", "tx_bad"):
            assert k[f"s{s}_{name}"] == 0, (name, s, k[f"s{s}_{name}"])
        assert k[f"s{s}_cells_in"] == k[f"s{s}_cells_out"]
    for h in range(topo.hosts):
        for name in ("rx_no_context", "rx_too_long", "rx_orphans", "rx_untracked", "rx_timeouts", "rx_malformed",
                     "rx_bad_length", "tx_bad_length", "tx_length_errors", "rx_overflow", "tx_bad"):
            assert k[f"h{h}_{name}"] == 0, (name, h, k[f"h{h}_{name}"])
        assert k[f"h{h}_rx_delivered"] == sum(1 for d in result.delivered if d.host == h)
    return flows


def seeded(seed):
    return random.Random(seed)

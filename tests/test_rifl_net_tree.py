"""Two levels of RIFL switches (two 4-port leaves under a 4-port spine, cores.rifl_net.topology.leaf_spine) in
one Verilated network at F = 64 (6-byte frame payloads, 64-bit hosts and fabric: a small model): 3-hop routes
across the spine and 1-hop ones inside a leaf, replies sent back on the reply route the receiving reassembler
computed, errors on every link both ways."""
import pytest

from cores.rifl_net.topology import leaf_spine
from tests.harness.rifl_net import check_run, net_model, random_packets, seeded
from tests.test_rifl_net_switch import ber_events

TOPO = leaf_spine(2, 4)


def test_topology_routes():
    """The reference routes: 3 hops across the spine, 1 inside a leaf, each reaching its host."""
    assert TOPO.hosts == 6 and len(TOPO.switches) == 3
    for s in range(TOPO.hosts):
        for d in range(TOPO.hosts):
            if s != d:
                total = TOPO.route(s, d) >> 44
                assert total == (1 if s // 3 == d // 3 else 3) and TOPO.follow(s, TOPO.route(s, d)) == d


@pytest.mark.long
@pytest.mark.extended
def test_two_levels_with_replies_and_errors():
    """Every host sends to random others, each receiver echoes every packet on its RTL reply route, with
    independent bit errors (BER 1e-4) on all 10 channels and random valid/ready: all packets and all echoes
    arrive once, in order per flow, intact, at the right host."""
    m = net_model(TOPO, frame_bits=64, data_width=64, latency=6)
    rng = seeded(11)
    packets = random_packets(rng, TOPO, 8, lengths=(8, 800), t_max=1500, echo=True)
    r = m.run(packets, ber_events(m, 4e-4), seed=12, valid_p=0.8, ready_p=0.7, max_cycles=400_000)
    check_run(m, packets, r)
    assert len(r.echoes) == len(packets)
    k = r.counters
    assert k["s0_cells_in"] > 0                                     # the spine carried traffic
    assert sum(k[f"c{c}_errors"] for c in range(len(m.channel_names))) > 10
    assert sum(k[f"s{s}_replays"] for s in range(3)) > 0

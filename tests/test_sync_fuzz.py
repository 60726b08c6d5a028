"""Fuzzing a sync node's link (a Verilated SyncNode with one neighbour, stepped by sim.verilated.CycleSim).

The test plays the neighbour and the node's user: rounds of every ident (the node's own trigger and the
neighbour's packet, same mode, random values, in random order), the neighbour sending an ident's next
round only after the node completed the previous one (as a neighbour does), and between them junk
packets on the link (an ident past the node's idents, or a mode past the six), in bursts, at random;
completion back-pressure at random. For every input: each trigger is taken within a cycle bound (no
hang), every round completes once with the reference reduction of its two values and no error, and
every junk packet is counted dropped (`ev_rx_drop`), none completes anything.
"""
import random

from hypothesis import example, given, strategies as st

from cores.sync.common import MODES, N, n_flits, pack
from cores.sync.node import SyncNode
from software.sync.reference import reduce_values
from sim.verilated import CycleSim
from tests.harness.fuzz import record

N_IDENTS, WIDTH = 4, 32
MAX_WAIT = 200             # cycles a trigger or a completion may take
_SIM = []


def node():
    if not _SIM:
        m = SyncNode((N,), None, N_IDENTS, WIDTH)
        ports = {"rx_valid": (m.rx[N].valid, True), "rx_data": (m.rx[N].data, True),
                 "ev_rx_drop": (m.ev_rx_drop, False), "ev_trigger_drop": (m.ev_trigger_drop, False)}
        for f in ("valid", "ready", "ident", "mode", "value"):
            ports["sink_" + f] = (getattr(m.sink, f), f != "ready")
        for f in ("valid", "ready", "ident", "mode", "error", "value"):
            ports["source_" + f] = (getattr(m.source, f), f == "ready")
        _SIM.append(CycleSim(m, ports, name="sync_fuzz_node"))
    return _SIM[0]


junk_packet = st.one_of(
    st.tuples(st.integers(N_IDENTS, 7), st.sampled_from(MODES), st.integers(0, 1), st.integers(0, 2**WIDTH - 1)),
    st.tuples(st.integers(0, 7), st.integers(6, 7), st.integers(0, 1), st.integers(0, 2**WIDTH - 1)))


@given(seed=st.integers(0, 2**31), rounds=st.integers(1, 4), junk=st.lists(junk_packet, max_size=12),
       junk_p=st.sampled_from([0.05, 0.3, 0.8]), ready_p=st.sampled_from([1.0, 0.5, 0.1]))
@example(seed=1, rounds=1, junk=[(7, 7, 1, 2**32 - 1)], junk_p=0.8, ready_p=1.0)
def test_sync_node_link_fuzz(seed, rounds, junk, junk_p, ready_p):
    sim, rng = node(), random.Random(seed)
    # Each ident's rounds: (mode, own value, neighbour value); the reference result of each.
    plan = {s: [(rng.choice(MODES), rng.getrandbits(WIDTH), rng.getrandbits(WIDTH)) for _ in range(rounds)]
            for s in range(N_IDENTS)}
    want = {s: [reduce_values(m, (a, b), WIDTH) for m, a, b in plan[s]] for s in plan}
    got = {s: [] for s in plan}
    trig = {s: 0 for s in plan}            # rounds triggered (the node's own trigger taken)
    sent = {s: 0 for s in plan}            # rounds whose neighbour packet is on its way
    flits, junk_left, junk_sent, drops = [], list(junk), 0, 0
    pending, wait, cycles = None, 0, 0
    sim.step(rx_valid=0, sink_valid=0, source_ready=0)
    while any(len(got[s]) < rounds for s in plan) or flits or junk_left:
        cycles += 1
        assert cycles < 40 * MAX_WAIT * (rounds * N_IDENTS + len(junk) + 1), "the node stopped completing"
        # The neighbour: a packet is whole flits on consecutive cycles; junk or a due round in between.
        if not flits:
            due = [s for s in plan if sent[s] < rounds and sent[s] <= len(got[s])]
            if junk_left and (rng.random() < junk_p or not due):
                flits, junk_sent = pack(*junk_left.pop(0), WIDTH), junk_sent + 1
            elif due and rng.random() < 0.5:
                s = rng.choice(due)
                m, _, b = plan[s][sent[s]]
                flits, sent[s] = pack(s, m, 0, b, WIDTH), sent[s] + 1
        rx = flits.pop(0) if flits else None
        # The user: one trigger at a time, an ident's next round once its last completion came out.
        if pending is None:
            ready_idents = [s for s in plan if trig[s] < rounds and trig[s] <= len(got[s])]
            if ready_idents and rng.random() < 0.5:
                s = rng.choice(ready_idents)
                pending, wait = (s, *plan[s][trig[s]][:2]), 0
        inputs = dict(rx_valid=int(rx is not None), rx_data=rx or 0, source_ready=int(rng.random() < ready_p),
                      sink_valid=int(pending is not None))
        if pending is not None:
            inputs.update(sink_ident=pending[0], sink_mode=pending[1], sink_value=pending[2])
        out = sim.step(**inputs)
        drops += out["ev_rx_drop"]
        assert not out["ev_trigger_drop"]
        if pending is not None:
            if out["sink_ready"]:
                trig[pending[0]] += 1
                pending = None
            else:
                wait += 1
                assert wait < MAX_WAIT, f"trigger {pending} not taken in {MAX_WAIT} cycles"
        if out["source_valid"] and inputs["source_ready"]:
            s = out["source_ident"]
            assert s in plan and trig[s] > len(got[s]) and len(got[s]) < rounds, out
            assert out["source_error"] == 0 and out["source_mode"] == plan[s][len(got[s])][0], out
            got[s].append(out["source_value"])
    for _ in range(6 * n_flits(WIDTH)):             # the last junk packet's drop, then a quiet link
        out = sim.step(rx_valid=0, sink_valid=0, source_ready=1)
        drops += out["ev_rx_drop"]
        assert not out["source_valid"]
    assert got == want
    assert drops == junk_sent == len(junk)
    record("sync_node_link", rounds=rounds * N_IDENTS, junk_packets=len(junk), dropped=drops, cycles=cycles)

"""Fuzzing the MiniSharp core's ports (Verilated, SMALL_CORE) around a live reduction.

Each example runs one reduction (a setup and every rank's chunks, spread over the three ports at random
times) with junk mixed in on every port: random bytes of any length and EtherType, random bytes behind a
MiniSharp header start, the reduction's own data frames truncated inside their payload or carrying a PHY
error, and data frames of collectives that do not exist; output back-pressure at random. For every input:
the run ends (no hang), each port's result frames are exact (reference model: exact FP32 sums) and each
chunk completes once, every received frame is counted, every drop once with its reason, and only the
reduction's own frames are consumed.
"""
import random

from hypothesis import example, given, strategies as st

from cores.minisharp import common as ms
from software.minisharp import packets as P
from tests.harness.fuzz import record
from tests.harness.minisharp import CE, HOST, SW, check_results, port_macs, rand_value, verilated_core

COLL = 0xC0FFEE
PORTS = 3

junk_item = st.one_of(
    st.tuples(st.just("random"), st.binary(min_size=1, max_size=100)),
    st.tuples(st.just("ms_random"), st.binary(min_size=0, max_size=80)),
    st.tuples(st.just("truncate"), st.integers(0, 10**6)),
    st.tuples(st.just("phy_error"), st.integers(0, 10**6)),
    st.tuples(st.just("other_coll"), st.integers(1, 2**16)),
)


@given(seed=st.integers(0, 2**31), n=st.integers(1, 3 * CE), ranks=st.integers(1, 4),
       junk=st.lists(st.tuples(st.integers(0, PORTS - 1), st.integers(0, 4000), junk_item), max_size=12),
       ready_p=st.sampled_from([1.0, 0.6, 0.2]))
@example(seed=1, n=1, ranks=1, junk=[(0, 0, ("random", b"\x00"))], ready_p=1.0)
def test_minisharp_ports_fuzz(seed, n, ranks, junk, ready_p):
    rng = random.Random(seed)
    vecs = [[rand_value(rng, 0.01) for _ in range(n)] for _ in range(ranks)]
    data = [f for k in range(ranks) for _, f in P.chunk_frames(SW, HOST, COLL, k, vecs[k], CE)]
    inputs = [[] for _ in range(PORTS)]
    inputs[0].append((0, P.setup_frame(SW, HOST, COLL, P.setup_record(n, ranks, 0, PORTS - 1))))
    for f in data:
        inputs[rng.randrange(PORTS)].append((300 + rng.randrange(3000), f))
    for port, start, (kind, arg) in junk:
        if kind == "random":
            f, err = arg, False
        elif kind == "ms_random":
            f, err = (SW.to_bytes(6, "big") + HOST.to_bytes(6, "big") + ms.ETHERTYPE.to_bytes(2, "big") + arg), False
        elif kind in ("truncate", "phy_error"):
            live = data[arg % len(data)]
            payload_end = ms.MS_HEADER_BYTES + 4 * (len(P.parse(live, n, CE)["values"]))
            f, err = (live[:1 + arg % (payload_end - 1)], False) if kind == "truncate" else (live, True)
        else:
            f, err = P.data_frame(SW, HOST, COLL ^ arg, 0, 0, [1] * CE), False
        inputs[port].append((start, f, err))
    for port in inputs:
        port.sort(key=lambda item: item[0])
    run = verilated_core().run(inputs, macs=port_macs(PORTS), ready_p=ready_p, seed=seed)

    chunks = ms.num_chunks(n, CE)
    for o in range(PORTS):
        assert sorted(check_results(run, o, COLL, n, vecs, PORTS)) == list(range(chunks))
    c = run.counters
    assert c["setups"] == 1 and c["chunks"] == chunks
    drops = sum(c[f"drop_{name}"] for name, _ in ms.DROP_REASONS)
    assert [c[f"port{i}_rx_frames"] for i in range(PORTS)] == [len(p) for p in inputs]
    assert sum(c[f"port{i}_rx_drops"] for i in range(PORTS)) == drops
    consumed = sum(c[f"port{i}_rx_frames"] - c[f"port{i}_rx_drops"] - c[f"port{i}_fwd_frames"] for i in range(PORTS))
    assert consumed == 1 + len(data)
    assert drops >= sum(1 for _, _, (kind, _) in junk if kind in ("truncate", "phy_error", "other_coll"))
    record("minisharp_ports", examples_frames=sum(len(p) for p in inputs), junk=len(junk), dropped=drops,
           cycles=run.cycles)

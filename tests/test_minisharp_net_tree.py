"""Hierarchical exactness (issue 16): allreduce through 1- and 2-level trees of Verilated MiniSharp switches,
with the ranks placed differently and arrivals shuffled. With exact partials every host gets the flat exact
sum bit for bit (vectors that start with reference.TRAPS); with FP32 partials (output_fmt FP32: rounded at each level) the traps show the difference."""
import random

import pytest

from cores.minisharp import common as ms
from software.minisharp import packets as P
from software.minisharp.reference import TRAPS, add_partials, partial_of, partial_to_fp32, reduce_vectors
from sim.verilated import available
from sim.verilated.minisharp import SMALL_CORE
from tests.harness.minisharp import VTree, rand_value, verilated_core

pytestmark = pytest.mark.skipif(not available(), reason="no Verilated models on this machine")
CE2 = ms.v02_chunk_elements(SMALL_CORE["chunk_elements"])          # the v0.2 chunk of the tests' core
AM = 0x0200000000A0
SPINE, LEAF0, LEAF1 = 0x024D53000100, 0x024D53000200, 0x024D53000300
COLL = 0x5151


def bits(e):
    """2^e as FP32 bits (normal or subnormal)."""
    return (e + 127) << 23 if e >= -126 else 1 << (e + 149)


FLT_MAX = 0x7F7FFFFF


def vectors(n, seed):
    rng = random.Random(seed)
    cols = [list(t) for t in TRAPS] + [[rand_value(rng) for _ in range(4)] for _ in range(n - len(TRAPS))]
    return [[c[k] for c in cols] for k in range(4)]


def data_frames(dst, vec, rank, chunk_elements):
    return [P.data_frame(dst, 0x020000000100 + rank, COLL, rank, c, vec[c * chunk_elements:(c + 1) * chunk_elements],
                         minor=ms.VERSION_MINOR_V02)
            for c in range(ms.num_chunks(len(vec), chunk_elements))]


def setup(dst, n, ranks, first, last, **tree):
    return P.setup_frame(dst, AM, COLL, P.setup_record_v02(n, ranks, first, last, collective=ms.MS_COL_ALLREDUCE,
                                                           **tree))


def results(frames, n):
    """The result vector in a host's COL_RES frames (chunk by chunk), and the chunks seen."""
    res, seen = [0] * n, []
    for f in frames:
        p = P.parse(f, n, CE2)
        if p.get("opcode") == ms.MS_OP_COL_RES and p["collective_id"] == COLL:
            res[p["chunk_index"] * CE2:p["chunk_index"] * CE2 + len(p["values"])] = p["values"]
            seen.append(p["chunk_index"])
    return res, sorted(seen)


def two_level(vecs, placement, exact, seed):
    """2 leaves (ports 0, 1: hosts; port 2: the uplink) and a spine (ports 0, 1: the leaves). placement[k]:
    (leaf, port) of rank k. Returns (the result each host port got, counters)."""
    n = len(vecs[0])
    fmt = ms.MS_FMT_EXACT if exact else ms.MS_FMT_FP32
    tree = VTree({"spine": SPINE, "leaf0": LEAF0, "leaf1": LEAF1},
                 {("leaf0", 2): ("spine", 0), ("leaf1", 2): ("spine", 1)},
                 {(lf, p): 0x020000000100 + p + 16 * i for i, lf in enumerate(("leaf0", "leaf1")) for p in (0, 1)})
    rng = random.Random(seed)
    inputs = {"spine": {2: [(0, setup(SPINE, n, 2, 0, 1, role=ms.MS_ROLE_ROOT, input_fmt=fmt))]}}
    local = {"leaf0": [], "leaf1": []}
    for k, (leaf, port) in enumerate(placement):
        local[leaf].append((k, port))
    for i, leaf in enumerate(("leaf0", "leaf1")):
        mac = (LEAF0, LEAF1)[i]
        inputs[leaf] = {0: [(0, setup(mac, n, len(local[leaf]), 0, 1, role=ms.MS_ROLE_CHILD, uplink_port=2,
                                      parent_rank=i, parent_mac=SPINE, output_fmt=fmt))]}
        frames = [(port, f) for r, (k, port) in enumerate(local[leaf]) for f in data_frames(mac, vecs[k], r, CE2)]
        rng.shuffle(frames)
        for t, (port, f) in enumerate(frames):
            inputs[leaf].setdefault(port, []).append((300 + 40 * t, f))
    return tree.run(inputs, ["leaf0", "leaf1", "spine", "leaf0", "leaf1"], seed=seed)


def fp32_partials_reference(vecs, groups):
    """FP32 partials: each leaf's exact sum rounded to FP32, then the leaves' sums added exactly and rounded."""
    leaf = [reduce_vectors([vecs[k] for k in g]) for g in groups]
    return reduce_vectors(leaf)


@pytest.mark.parametrize("placement,seed", [
    ([("leaf0", 0), ("leaf0", 1), ("leaf1", 0), ("leaf1", 1)], 1),
    ([("leaf0", 0), ("leaf0", 0), ("leaf0", 1), ("leaf1", 1)], 2),      # 3 ranks on leaf0, 2 on one port
])
def test_two_level_exact_partials_bit_exact(placement, seed):
    n = 3 * CE2 + 3
    vecs = vectors(n, seed)
    got, counters = two_level(vecs, placement, exact=True, seed=seed)
    exact = reduce_vectors(vecs)
    for host, frames in got.items():
        res, seen = results(frames, n)
        assert seen == list(range(ms.num_chunks(n, CE2))), host
        assert res == exact, host
    assert len(got) == 4                                  # every host port receives the result
    for name, c in counters.items():
        assert not any(v for k, v in c.items() if k.startswith("drop_")), (name, c)
    assert counters["spine"]["chunks"] == ms.num_chunks(n, CE2)


def test_two_level_fp32_partials_differ_on_the_traps():
    placement = [("leaf0", 0), ("leaf0", 1), ("leaf1", 0), ("leaf1", 1)]
    n = 2 * CE2
    vecs = vectors(n, 3)
    got, _ = two_level(vecs, placement, exact=False, seed=3)
    want = fp32_partials_reference(vecs, [[0, 1], [2, 3]])
    exact = reduce_vectors(vecs)
    for frames in got.values():
        res, _ = results(frames, n)
        assert res == want
    # rounded at each level: double rounding, the intermediate overflow and the cancellation go wrong
    assert [want[i] != exact[i] for i in range(3)] == [True, True, True]
    assert want[1] == ms.FP32_PINF and exact[1] == FLT_MAX and exact[0] == bits(0) + 1


def test_one_level_allreduce_multicasts_to_every_port():
    """A single switch as the root: the ranks on any port, each gets the result (egress: all ports)."""
    n = 2 * CE2 + 1
    vecs = vectors(n, 4)
    rng = random.Random(4)
    vm = verilated_core()
    frames = [(rng.randrange(3), f) for k in range(4) for f in data_frames(SPINE, vecs[k], k, CE2)]
    rng.shuffle(frames)
    inputs = [[(0, setup(SPINE, n, 4, 0, 2, role=ms.MS_ROLE_ROOT))], [], []]
    for t, (p, f) in enumerate(frames):
        inputs[p].append((300 + 40 * t, f))
    run = vm.run(inputs, macs=[(0x020000000100 + p, SPINE + p) for p in range(3)], mac_filter=1, mac=SPINE,
                 ready_p=0.5, seed=4)
    exact = reduce_vectors(vecs)
    for p in range(3):
        res, seen = results(run.outputs[p], n)
        assert seen == [0, 1, 2] and res == exact


def test_partial_reference_matches_flat_sum():
    """The reference's partials: any split of the ranks, added as partials, rounds to the flat exact sum."""
    vecs = vectors(40, 5)
    for split in ([0], [0, 1], [0, 2], [1, 2, 3]):
        rest = [k for k in range(4) if k not in split]
        for i in range(40):
            a = partial_of([vecs[k][i] for k in split])
            b = partial_of([vecs[k][i] for k in rest])
            assert partial_to_fp32(add_partials([a, b])) == reduce_vectors(vecs)[i]


def test_partial_wire_format_round_trip_and_refusals():
    from software.minisharp.reference import decode_partial, encode_partial
    rng = random.Random(6)
    for _ in range(200):
        n = rng.randrange(-(1 << 293), 1 << 293)
        fl = frozenset(f for f in ms.ACC_FLAGS if rng.random() < 0.3)
        el = encode_partial((n, fl))
        assert len(el) == ms.PARTIAL_ELEMENT_BYTES and decode_partial(el) == (n, fl)
    assert encode_partial((-1, frozenset())) == bytes([0]) + b"\xff" * 39
    assert encode_partial((1, frozenset({"nan"}))) == bytes([1]) + bytes(38) + b"\x01"
    for bad in ((1 << 293, frozenset()), (-(1 << 293) - 1, frozenset())):
        with pytest.raises(ValueError):
            encode_partial(bad)
    with pytest.raises(ValueError):
        decode_partial(bytes([0x10]) + bytes(39))                       # a reserved flag bit
    with pytest.raises(ValueError):
        decode_partial((1 << 293).to_bytes(40, "big"))                  # |N| = 2^293

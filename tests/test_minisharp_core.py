"""MiniSharpCore end to end (its Verilated model): reductions, every drop rule, forwarding, back-pressure.

The Migen simulator needs ~0.1 s a cycle for the whole core, so these scenario tests run the same RTL as a
Verilated model (sim/verilated/minisharp.py; built once per configuration, then cached).
Every result is checked against the Fraction reference model, every drop against its counter.
"""
import random

import pytest

from cores.minisharp import common as ms
from software.minisharp import packets as P
from sim.verilated import available
from tests.harness.minisharp import (
    CE, HOST, MAX_RANKS, NAN_BITS, SW, check_results, port_macs, rand_value, verilated_core,
)

pytestmark = pytest.mark.skipif(not available(), reason="no Verilated models on this machine")

def test_reduce_out_of_order_chunks_random_backpressure():
    vm = verilated_core()
    rng = random.Random(11)
    n, r = 29, 4                                      # 4 chunks, the last one 5 elements
    vecs = [[rand_value(rng, 0.01) for _ in range(n)] for _ in range(r)]
    frames = [f for k in range(r) for _, f in P.chunk_frames(SW, HOST, 0xC0FFEE, k, vecs[k], CE)]
    rng.shuffle(frames)
    inputs = [[P.setup_frame(SW, HOST, 0xC0FFEE, P.setup_record(n, r, 0, 2))], [], []]
    for f in frames:
        inputs[rng.randrange(3)].append((200, f))
    run = vm.run(inputs, macs=port_macs(3), ready_p=0.5, seed=3)
    for o in range(3):
        assert sorted(check_results(run, o, 0xC0FFEE, n, vecs, 3)) == [0, 1, 2, 3]
        assert run.counters[f"port{o}_tx_frames"] == 4
    assert run.counters["setups"] == 1 and run.counters["chunks"] == 4
    assert all(v == 0 for k, v in run.counters.items() if k.startswith("drop_"))


def test_interleaved_collectives():
    vm = verilated_core()
    rng = random.Random(12)
    colls = [(1, 17, 3, 0, 0), (0xABCDEF01, 8, 2, 1, 2), (77, 40, 5, 0, 2)]   # id, elements, ranks, egress
    data, levels = {}, {}
    for cid, n, r, _, _ in colls:
        data[cid] = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
        for k in range(r):
            for c, f in P.chunk_frames(SW, HOST, cid, k, data[cid][k], CE):
                levels.setdefault(c, []).append(f)
    frames = []
    for c in sorted(levels):          # collectives interleaved; at most 3 chunks open (4 slots)
        rng.shuffle(levels[c])
        frames += levels[c]
    setups = [P.setup_frame(SW, HOST, cid, P.setup_record(n, r, a, b)) for cid, n, r, a, b in colls]
    inputs = [setups, [], []]
    for f in frames:
        inputs[rng.randrange(3)].append((400, f))
    run = vm.run(inputs, macs=port_macs(3), ready_p=[0.3, 0.9, 0.6], seed=4)
    for cid, n, r, a, b in colls:
        for o in range(3):
            seen = check_results(run, o, cid, n, data[cid], 3)
            want = list(range(ms.num_chunks(n, CE))) if a <= o <= b else []
            assert sorted(seen) == want, (cid, o)
    assert run.counters["chunks"] == sum(ms.num_chunks(n, CE) for _, n, _, _, _ in colls)
    assert all(v == 0 for k, v in run.counters.items() if k.startswith("drop_"))


def test_every_invalid_rule_is_dropped_counted_and_leaves_state_unchanged():
    vm = verilated_core()
    rng = random.Random(13)
    cid, n, r = 5, 12, 2                                # chunks: 8 + 4 elements
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    rec = dict(element_count=n, expected_local=r, egress_first=0, egress_last=0)

    def setup(**over):
        return P.setup_frame(SW, HOST, cid, P.setup_record(**{**rec, **over}))

    def data(rank, chunk, values=None, **kw):
        vals = values if values is not None else vecs[rank][chunk * CE:(chunk + 1) * CE]
        return P.data_frame(SW, HOST, kw.pop("coll", cid), rank, chunk, vals, **kw)

    seq = [(setup(), None), (data(0, 0), None)]
    bad = [
        (bytes(10), "runt"),
        (P.frame(SW, HOST, ms.MS_OP_COL_DATA, pad=False)[:20], "runt"),
        (data(1, 0, major=1), "bad_version"),
        (data(1, 0)[:15] + bytes([0]) + data(1, 0)[16:], "bad_opcode"),
        (data(1, 0)[:15] + bytes([0x77]) + data(1, 0)[16:], "bad_opcode"),
        (data(1, 0, reserved=1), "bad_reserved"),
        (P.setup_frame(SW, HOST, cid, P.setup_record(**rec), reserved=1), "bad_reserved"),
        (setup(reserved0=1), "bad_reserved"),
        (setup(reserved1=1), "bad_reserved"),
        (P.setup_frame(SW, HOST, cid, P.setup_record(**rec)[:10], pad=False), "bad_length"),
        (setup(expected_local=0), "bad_setup"),
        (setup(expected_local=MAX_RANKS + 1), "bad_setup"),
        (setup(element_count=0), "bad_setup"),
        (setup(element_count=65536 * CE + 1), "bad_setup"),
        (setup(egress_first=1, egress_last=0), "bad_setup"),
        (setup(egress_last=3), "bad_setup"),
        (setup(collective=2), "bad_setup"),
        (setup(reduce_op=2), "bad_setup"),
        (setup(input_fmt=2), "bad_setup"),
        (setup(acc_mode=0), "bad_setup"),
        (setup(output_fmt=7), "bad_setup"),
        (data(1, 0, coll=6, values=[NAN_BITS] * CE), "unknown_coll"),
        (data(2, 0, values=[NAN_BITS] * CE), "bad_rank"),
        (data(1, 2, values=[NAN_BITS] * 4), "bad_chunk"),
        # wrong lengths, NaN payloads: any accumulator they touched would turn the result into NaN
        (data(1, 0, values=[NAN_BITS] * (CE - 1), pad=False), "bad_length"),
        (data(1, 0, values=[NAN_BITS] * (CE + 3)), "bad_length"),
        (data(1, 1, values=[NAN_BITS] * 3, pad=False), "bad_length"),
        (data(0, 0, values=[NAN_BITS] * CE), "duplicate"),
        ((data(1, 0, values=[NAN_BITS] * CE), True), "phy_error"),
    ]
    seq += bad
    seq += [(data(0, 1, minor=5), None),        # a newer minor version is accepted
            (data(1, 0), None), (data(1, 1), None)]
    inputs, start = [[], [], []], 0
    for f, _ in seq:
        err = False
        if isinstance(f, tuple):
            f, err = f
        inputs[0].append((start, f, err))
        start += 2 * len(f) + 100                    # strictly sequential: each frame fully handled first
    run = vm.run(inputs, macs=port_macs(3), seed=5)
    want = {}
    for _, reason in bad:
        want[reason] = want.get(reason, 0) + 1
    for name, _ in ms.DROP_REASONS:
        assert run.counters[f"drop_{name}"] == want.get(name, 0), name
    assert run.counters["port0_rx_drops"] == len(bad) and run.counters["port0_rx_frames"] == len(seq)
    assert sorted(check_results(run, 0, cid, n, vecs, 3)) == [0, 1]
    assert run.counters["setups"] == 1 and run.counters["chunks"] == 2
    assert run.outputs[1] == [] and run.outputs[2] == []


def test_context_table_full_and_replace():
    vm = verilated_core()
    rng = random.Random(14)
    frames = [P.setup_frame(SW, HOST, 100 + k, P.setup_record(8, 1, 1, 1)) for k in range(9)]  # 9th: full
    vec = [rand_value(rng) for _ in range(8)]
    frames.append(P.setup_frame(SW, HOST, 103, P.setup_record(8, 2, 0, 0)))                   # replace
    frames.append(P.data_frame(SW, HOST, 103, 0, 0, vec))
    frames.append(P.data_frame(SW, HOST, 103, 1, 0, vec))
    inputs = [[(400 * k, f) for k, f in enumerate(frames)], [], []]
    run = vm.run(inputs, macs=port_macs(3), seed=6)
    assert run.counters["drop_ctx_full"] == 1 and run.counters["setups"] == 9
    assert check_results(run, 0, 103, 8, [vec, vec], 3) == [0]
    assert run.outputs[1] == []


def test_no_free_chunk_slot():
    vm = verilated_core()
    rng = random.Random(15)
    n = 6 * CE
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(2)]
    ch = [dict(P.chunk_frames(SW, HOST, 9, k, vecs[k], CE)) for k in range(2)]
    order = [ch[0][c] for c in range(5)] + [ch[1][c] for c in range(4)] + [ch[0][4], ch[1][4]] + \
            [ch[0][5], ch[1][5]]
    inputs = [[(300 * k, f) for k, f in enumerate([P.setup_frame(SW, HOST, 9, P.setup_record(n, 2, 1, 1))] + order)],
              [], []]
    run = vm.run(inputs, macs=port_macs(3), seed=7)
    assert run.counters["drop_no_slot"] == 1
    assert sorted(check_results(run, 1, 9, n, vecs, 3)) == list(range(6))


def test_forwarding_and_outer_policy():
    vm = verilated_core()
    other = [bytes.fromhex("ffffffffffff02000000000108060001") + bytes(range(50)),
             bytes.fromhex("02000000000202000000000186dd") + bytes(range(100, 180))]
    res = P.res_frame(HOST, SW, 3, 0, [1, 2, 3])
    inputs = [[other[0], res], [other[1]], [other[0]]]
    fwd = [2, 0, 1]
    run = vm.run(inputs, macs=port_macs(3), fwd_map=fwd, policy=ms.MSP_TRANSPARENT, seed=8, ready_p=0.7)
    assert run.outputs[2] == [other[0], res] and run.outputs[0] == [other[1]] and run.outputs[1] == [other[0]]
    assert [run.counters[f"port{i}_fwd_frames"] for i in range(3)] == [2, 1, 1]
    run = vm.run(inputs, macs=port_macs(3), fwd_map=fwd, policy=ms.MSP_MINISHARP_ONLY, seed=8)
    assert run.outputs[2] == [res] and run.outputs[0] == [] and run.outputs[1] == []
    assert run.counters["drop_not_minisharp"] == 3


def test_stalled_port_does_not_corrupt_others():
    vm = verilated_core()
    rng = random.Random(16)
    n, r = 24, 2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    frames = [f for k in range(r) for _, f in P.chunk_frames(SW, HOST, 4, k, vecs[k], CE)]
    inputs = [[P.setup_frame(SW, HOST, 4, P.setup_record(n, r, 0, 2))] + [(300, f) for f in frames], [], []]
    run = vm.run(inputs, macs=port_macs(3), ready_p=[1.0, 0.02, 0.5], seed=9)
    for o in range(3):
        assert sorted(check_results(run, o, 4, n, vecs, 3)) == [0, 1, 2]


@pytest.mark.long
@pytest.mark.extended
def test_wide_64bit_ports():
    vm = verilated_core(num_ports=2, dw=64, lanes=2)
    rng = random.Random(17)
    n, r = 21, 3                                      # last chunk: 5 elements -> half a 64-bit beat
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    frames = [f for k in range(r) for _, f in P.chunk_frames(SW, HOST, 8, k, vecs[k], CE)]
    rng.shuffle(frames)
    inputs = [[P.setup_frame(SW, HOST, 8, P.setup_record(n, r, 0, 1))], []]
    for f in frames:
        inputs[rng.randrange(2)].append((100, f))
    run = vm.run(inputs, macs=port_macs(2), ready_p=0.5, seed=10)
    for o in range(2):
        assert sorted(check_results(run, o, 8, n, vecs, 2)) == [0, 1, 2]
    assert all(v == 0 for k, v in run.counters.items() if k.startswith("drop_"))


def test_100k_values_end_to_end_and_order_independent():
    """100,000+ values through the whole datapath, in two different arrival orders: identical bits."""
    vm = verilated_core()
    rng = random.Random(18)
    n, r = 12_504, 8
    vecs = [[rand_value(rng, 0.0005) for _ in range(n)] for _ in range(r)]
    chunks = [[f for _, f in P.chunk_frames(SW, HOST, 21, k, vecs[k], CE)] for k in range(r)]
    outs = []
    for order_seed in (1, 2):
        orng = random.Random(order_seed)
        inputs = [[P.setup_frame(SW, HOST, 21, P.setup_record(n, r, 0, 0))], [], []]
        for c in range(ms.num_chunks(n, CE)):            # ranks shuffled per chunk, spread over the ports
            group = [chunks[k][c] for k in range(r)]
            orng.shuffle(group)
            for i, f in enumerate(group):
                inputs[(i + c) % 3].append((200, f))
        run = vm.run(inputs, macs=port_macs(3), seed=order_seed, ready_p=0.9)
        assert sorted(check_results(run, 0, 21, n, vecs, 3)) == list(range(ms.num_chunks(n, CE)))
        assert all(v == 0 for k, v in run.counters.items() if k.startswith("drop_"))
        outs.append(sorted(run.outputs[0]))
    assert outs[0] == outs[1]
    assert n * r >= 100_000


@pytest.mark.parametrize("dw", [8, 64])
def test_frame_length_boundaries_at_every_length(dw):
    """Frames of every length 1..72 bytes: a setup frame cut or zero-padded to that length, and a
    non-MiniSharp frame. The ingress compares the length against the thresholds 14, 24, 40 and 60 from
    its byte counter and the last beat's byte count; at 64 bits a threshold falls inside a beat."""
    vm = verilated_core(num_ports=2, dw=64, lanes=2) if dw == 64 else verilated_core()
    full = P.setup_frame(SW, HOST, 9, P.setup_record(16, 1, 0, 0), pad=False)      # 40 bytes
    other = P.frame(SW, HOST, 0, ethertype=0x0800, pad=False) + bytes(64)

    def expected(length):
        """The spec's rules for a MiniSharp COL_SETUP frame of `length` bytes, in priority order."""
        if length < ms.MS_HEADER_BYTES:
            return "runt"
        plen = length - ms.MS_HEADER_BYTES
        if plen < ms.SETUP_RECORD_BYTES or (plen > ms.SETUP_RECORD_BYTES and length > ms.ETH_MIN_FRAME):
            return "bad_length"
        return None

    inputs, start = [[] for _ in range(vm.num_ports)], 0
    for length in range(1, 73):
        for f in ((full + bytes(max(0, length - len(full))))[:length], other[:length]):
            inputs[0].append((start, f))
            start += len(f) + 60
    run = vm.run(inputs, macs=port_macs(vm.num_ports), seed=21)
    lengths = range(1, 73)
    want_runt = sum(expected(n) == "runt" for n in lengths) + sum(n < ms.ETH_HEADER_BYTES for n in lengths)
    assert run.counters["drop_runt"] == want_runt
    assert run.counters["drop_bad_length"] == sum(expected(n) == "bad_length" for n in lengths)
    assert run.counters["setups"] == sum(expected(n) is None for n in lengths)
    assert run.counters["port0_fwd_frames"] == sum(n >= ms.ETH_HEADER_BYTES for n in lengths)
    assert run.outputs[1] == [other[:n] for n in lengths if n >= ms.ETH_HEADER_BYTES]
    drops = sum(v for k, v in run.counters.items() if k.startswith("drop_"))
    assert drops == run.counters["drop_runt"] + run.counters["drop_bad_length"]      # no other reason

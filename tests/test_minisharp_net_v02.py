"""v0.2 addressing and the admin-port mask on the Verilated core: a switch consumes only the frames to its MAC
or the group MAC and forwards the others; setups and teardowns from other ports change nothing."""
import random

import pytest

from cores.minisharp import common as ms
from software.minisharp import packets as P
from sim.verilated import available
from tests.harness.minisharp import CE, HOST, SW, check_results, port_macs, rand_value, verilated_core

pytestmark = pytest.mark.skipif(not available(), reason="no Verilated models on this machine")
MAC = 0x024D5300AB00            # this switch
OTHER = 0x024D5300CD00          # another switch of the tree


def test_mac_filter_consumes_own_and_group_frames_and_forwards_the_rest():
    vm = verilated_core()
    rng = random.Random(31)
    cid, n, r = 40, 2 * CE, 2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    setup = P.setup_frame(MAC, HOST, cid, P.setup_record(n, r, 0, 0))
    mine = [P.data_frame(MAC, HOST, cid, 0, 0, vecs[0][:CE]), P.data_frame(ms.GROUP_MAC, HOST, cid, 1, 0, vecs[1][:CE]),
            P.data_frame(MAC, HOST, cid, 0, 1, vecs[0][CE:]), P.data_frame(MAC, HOST, cid, 1, 1, vecs[1][CE:])]
    # frames for another switch, NaN-filled: any of them reduced here would show in the result
    foreign = [P.setup_frame(OTHER, HOST, cid, P.setup_record(n, 1, 0, 0)),
               P.data_frame(OTHER, HOST, cid, 0, 0, [0x7FC00000] * CE),
               P.teardown_frame(OTHER, HOST, cid),
               P.data_frame(OTHER, HOST, cid, 0, 0, [0x7FC00000] * CE, major=3),     # not ours: not checked here
               P.data_frame(SW, HOST, cid, 1, 1, [0x7FC00000] * CE)]                 # the v0.1 default MAC
    seq = [setup] + foreign[:3] + mine[:2] + foreign[3:] + mine[2:]
    inputs, t = [[], [], []], 0
    for f in seq:
        inputs[1].append((t, f))
        t += 2 * len(f) + 100
    run = vm.run(inputs, macs=port_macs(3), fwd_map=[1, 2, 0], mac_filter=1, mac=MAC)
    assert sorted(check_results(run, 0, cid, n, vecs, 3)) == [0, 1]
    assert run.outputs[2] == foreign                                 # port 1's frames forward to port 2
    assert run.counters["port1_fwd_frames"] == len(foreign) and run.counters["setups"] == 1
    assert not any(v for k, v in run.counters.items() if k.startswith("drop_"))
    # the same frames with the filter off (v0.1): every MiniSharp frame is consumed
    run = vm.run(inputs, macs=port_macs(3), fwd_map=[1, 2, 0])
    assert run.outputs[2] == [] and run.counters["port1_fwd_frames"] == 0


def test_admin_mask_refuses_setup_and_teardown_from_rank_ports():
    """Port 0 is the AM's: a rank on port 1 that replaces the context (different egress, 1 rank) or tears it
    down changes nothing; the reduction completes exactly and both frames are counted as not_admin."""
    vm = verilated_core()
    rng = random.Random(32)
    cid, n, r = 41, CE, 2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    seq = [(0, P.setup_frame(SW, HOST, cid, P.setup_record(n, r, 0, 0))),
           (1, P.data_frame(SW, HOST, cid, 0, 0, vecs[0])),
           (1, P.setup_frame(SW, HOST, cid, P.setup_record(n, 1, 2, 2))),
           (2, P.teardown_frame(SW, HOST, cid)),
           (2, P.data_frame(SW, HOST, cid, 1, 0, vecs[1]))]
    inputs, t = [[], [], []], 0
    for port, f in seq:
        inputs[port].append((t, f))
        t += 2 * len(f) + 100
    run = vm.run(inputs, macs=port_macs(3), admin_ports=0b001)
    assert check_results(run, 0, cid, n, vecs, 3) == [0] and run.outputs[2] == []
    assert {k: v for k, v in run.counters.items() if k.startswith("drop_") and v} == {"drop_not_admin": 2}
    assert run.counters["setups"] == 1 and run.counters["teardowns"] == 0


def test_malformed_v02_input_is_dropped_counted_and_changes_nothing():
    """A spine context (ROOT, EXACT input, 2 children): every malformed v0.2 setup and partial frame is
    dropped under its reason, those that reach a context carry NaNs or huge values (any of them reduced
    would show in the result), and the two good partials then reduce exactly."""
    from software.minisharp.reference import encode_partial, partial_of, reduce_vectors
    vm = verilated_core()
    rng = random.Random(33)
    ce2 = ms.v02_chunk_elements(CE)
    cid, n = 42, ce2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(4)]
    parts = [[encode_partial(partial_of(col)) for col in zip(vecs[2 * c], vecs[2 * c + 1])] for c in range(2)]
    nan_el = encode_partial((0, frozenset({"nan"})))
    huge = encode_partial((1 << 292, frozenset()))

    def rec(**kw):
        base = dict(element_count=n, expected_local=2, egress_first=0, egress_last=0, input_fmt=ms.MS_FMT_EXACT)
        base.update(kw)
        return P.setup_record_v02(**base)

    def pdata(rank, elements, **kw):
        return P.pdata_frame(MAC, HOST, cid, rank, 0, elements, **kw)

    bad_el = bytearray(parts[0][0])
    bad_el[0] |= 0x10                                         # a reserved flag bit
    out_of_range = (1 << 293).to_bytes(40, "big")              # |N| = 2^293
    bad = [
        (P.setup_frame(MAC, HOST, cid, rec(reserved2=1)), "bad_reserved"),
        (P.setup_frame(MAC, HOST, cid, rec(reserved3=1)), "bad_reserved"),
        (P.setup_frame(MAC, HOST, cid, rec(role=3)), "bad_setup"),
        (P.setup_frame(MAC, HOST, cid, rec(role=ms.MS_ROLE_CHILD, uplink_port=3)), "bad_setup"),
        (P.setup_frame(MAC, HOST, cid, rec(output_fmt=ms.MS_FMT_EXACT)), "bad_setup"),        # at a ROOT
        (P.setup_frame(MAC, HOST, cid, rec(element_count=65536 * ce2 + 1)), "bad_setup"),
        (P.setup_frame(MAC, HOST, cid, rec(collective=ms.MS_COL_ALLREDUCE)[:16], minor=1), "bad_setup"),
        (P.setup_frame(MAC, HOST, cid, rec()[:28], pad=False, minor=2), "bad_length"),
        (pdata(0, [nan_el] * (n - 1)), "bad_length"),
        (pdata(0, [nan_el] * (n + 1)), "bad_length"),
        (pdata(0, [nan_el] * n)[:-3], "bad_length"),
        (pdata(0, [bad_el] + parts[0][1:]), "bad_partial"),
        (pdata(0, parts[0][:-1] + [out_of_range]), "bad_partial"),
        (P.data_frame(MAC, HOST, cid, 0, 0, [0x7FC00000] * n, minor=2), "bad_format"),
        (pdata(2, [nan_el] * n), "bad_rank"),
        (P.res_frame(MAC, HOST, cid, 0, [0x7FC00000] * n), "bad_result"),       # a ROOT takes no COL_RES
        (P.res_frame(MAC, HOST, cid + 1, 0, [0x7FC00000] * n), "unknown_coll"),
        (P.pdata_frame(MAC, HOST, cid + 1, 0, 0, [huge] * n), "unknown_coll"),
    ]
    seq = [(P.setup_frame(MAC, HOST, cid, rec()), None),
           (P.setup_frame(MAC, HOST, cid + 2, rec(input_fmt=ms.MS_FMT_FP32)), None)]
    seq += bad
    seq += [(P.pdata_frame(MAC, HOST, cid + 2, 0, 0, [huge] * n), "bad_format")]    # FP32 context
    seq += [(pdata(0, parts[0]), None), (pdata(0, parts[0]), "duplicate"), (pdata(1, parts[1]), None)]
    inputs, t = [[], [], []], 0
    for f, _ in seq:
        inputs[1].append((t, f))
        t += 2 * len(f) + 100
    run = vm.run(inputs, macs=port_macs(3), mac_filter=1, mac=MAC)
    want = {}
    for _, reason in seq:
        if reason:
            want[f"drop_{reason}"] = want.get(f"drop_{reason}", 0) + 1
    assert {k: v for k, v in run.counters.items() if k.startswith("drop_") and v} == want
    assert run.counters["setups"] == 2 and run.counters["chunks"] == 1
    res = [P.parse(f, n, ce2)["values"] for f in run.outputs[0] if P.parse(f)["opcode"] == ms.MS_OP_COL_RES]
    assert res == [reduce_vectors(vecs)]

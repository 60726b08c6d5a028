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

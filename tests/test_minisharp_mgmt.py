"""MiniSharpCore's management port (mgmt_mac): the frames for the board's MAC and broadcast ARPs from the
management ports reach the management stack, everything else of those ports and all of the other ports is
handled as before, refusals are dropped and counted, and answers leave by the port of the request. Run on
the Verilated core in the board builds' configurations (the Versa's 2 x 32-bit default core, the
Colorlight's reduced 16-bit one; small chunks) with reductions on both ports at once and random
back-pressure on every output, checked against the Fraction reference."""
import random

import pytest

from boards.colorlight_5a_75b import COLORLIGHT_MINISHARP
from boards.ports import DATA_PORT_DW
from cores.minisharp import common as ms
from sim.verilated import available
from software.minisharp import packets as P
from tests.harness.minisharp import HOST, SW, check_results, port_macs, rand_value, verilated_core

pytestmark = [pytest.mark.skipif(not available(), reason="no Verilated models on this machine"), pytest.mark.long]

BOARD = 0x10E2D5000000           # the management stack's MAC
ADMIN = 0x020000000A01           # a host allowed to manage the board
ROGUE = 0x020000000B02           # another host on a data port
MGMT = 2                         # the management stream of a 2-port core


BOARD_CORES = {"versa": dict(dw=DATA_PORT_DW), "colorlight": dict(COLORLIGHT_MINISHARP, max_ranks=8)}


@pytest.fixture(params=sorted(BOARD_CORES))
def board(request):
    return request.param


def core(board="versa"):
    return verilated_core(num_ports=2, mgmt_mac=BOARD, **BOARD_CORES[board])


def to_board(rng, src, dst=BOARD):
    """An IPv4-typed frame of random contents to `dst` (as an Etherbone request would be)."""
    return (dst.to_bytes(6, "big") + src.to_bytes(6, "big") + b"\x08\x00" +
            bytes(rng.getrandbits(8) for _ in range(rng.randrange(46, 300))))


def arp_broadcast(src, seq):
    return (ms.BROADCAST_MAC.to_bytes(6, "big") + src.to_bytes(6, "big") + ms.ETHERTYPE_ARP.to_bytes(2, "big") +
            bytes([0, 1, 8, 0, 6, 4, 0, 1]) + src.to_bytes(6, "big") + bytes([192, 168, 1, seq]) + bytes(18))


def reduction(rng, cid, n, ranks):
    """Vectors, setup and data frames (chunk by chunk, ranks shuffled: at most 2 chunks open at a port)."""
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(ranks)]
    chunks = {}
    for k in range(ranks):
        for c, f in P.chunk_frames(SW, HOST, cid, k, vecs[k], 8):
            chunks.setdefault(c, []).append(f)
    frames = []
    for c in sorted(chunks):
        rng.shuffle(chunks[c])
        frames += chunks[c]
    return vecs, P.setup_frame(SW, HOST, cid, P.setup_record(n, ranks, 0, 1)), frames


def sprinkle(rng, frames, extra):
    """`frames` in their order with the `extra` frames at random places."""
    out = list(frames)
    for f in extra:
        out.insert(rng.randrange(len(out) + 1), f)
    return out


def paced(frames, gap=400):
    """(start, frame) pairs: chunk c's frames no earlier than 300 + c * gap cycles (a chunk completes in
    less, so the 2-slot build never runs out of slots); other frames with the data frame before them."""
    out, start = [], 300
    for f in frames:
        p = P.parse(f)
        if p.get("ethertype") == ms.ETHERTYPE and p.get("opcode") == ms.MS_OP_COL_DATA:
            start = 300 + gap * p["chunk_index"]
        out.append((start, f))
    return out


def interleave(rng, *lists):
    out = [x for l in lists for x in l]
    rng.shuffle(out)
    return out


def consumed(run, i):
    c = run.counters
    return c[f"port{i}_rx_frames"] - c[f"port{i}_rx_drops"] - c[f"port{i}_fwd_frames"]


@pytest.mark.parametrize("seed", [1, 2])
def test_management_frames_reach_the_stack_while_both_ports_reduce(seed, board):
    vm = core(board)
    rng = random.Random(seed)
    vecs, setup, data = reduction(rng, 0x51, 61, 4)
    mine = [to_board(rng, ADMIN) for _ in range(6)]
    refused = [to_board(rng, ROGUE) for _ in range(5)]
    arp0, arp1 = arp_broadcast(ADMIN, 1), arp_broadcast(ROGUE, 2)
    p0 = [setup] + sprinkle(rng, data[0::2], mine + [arp0])
    p1 = sprinkle(rng, data[1::2], refused + [arp1])
    answers = [to_board(rng, BOARD, dst=ADMIN) for _ in range(3)]
    inputs = [[(0, p0[0])] + paced(p0[1:]), paced(p1), [(8000, f) for f in answers]]
    run = vm.run(inputs, macs=port_macs(2), ready_p=0.6, seed=seed, mgmt_ports=0b01)

    # The stack got the admin's frames and its ARP, in their order, bytes intact; nothing else.
    assert run.outputs[MGMT] == [f for f in p0 if f in mine or f == arp0]
    # Port 1 carries the admin's ARP copy and the results; port 0 the rogue's ARP, the results and the answers.
    for o in range(2):
        assert sorted(check_results(run, o, 0x51, 61, vecs, 2)) == list(range(8))
    others = [[f for f in run.outputs[o] if P.parse(f).get("ethertype") != ms.ETHERTYPE] for o in range(2)]
    assert others[1] == [arp0]
    assert others[0] == [arp1] + answers
    c = run.counters
    assert c["drop_mgmt_refused"] == len(refused)
    assert c["mgmt_rx_frames"] == len(mine) + 1 and c["mgmt_tx_frames"] == len(answers)
    assert all(v == 0 for k, v in c.items() if k.startswith("drop_") and k != "drop_mgmt_refused")
    # Every frame counted once: consumed by the engine, forwarded (to a port or the stack) or dropped.
    assert consumed(run, 0) == 1 + len(data[0::2]) and consumed(run, 1) == len(data[1::2])
    assert c["port0_fwd_frames"] == len(mine) + 1 and c["port1_fwd_frames"] == 1
    assert c["port1_rx_drops"] == len(refused)
    assert c["chunks"] == 8 and c["port0_tx_frames"] == 8 + 1 + len(answers)


def test_source_mac_filter_and_narrowed_ports(board):
    vm = core(board)
    rng = random.Random(3)
    good = [to_board(rng, ADMIN) for _ in range(3)]
    spoof = [to_board(rng, ROGUE) for _ in range(4)]
    frames = interleave(rng, good, spoof)
    # Filter on: only the allowed source MAC reaches the stack, even on a management port.
    run = vm.run([frames, []], ready_p=0.5, seed=3, mgmt_ports=0b11, mgmt_src_filter=1, mgmt_src_mac=ADMIN)
    assert run.outputs[MGMT] == [f for f in frames if f in good]
    assert run.counters["drop_mgmt_refused"] == len(spoof) and run.outputs[1] == []
    # No port in the set: nothing reaches it (frames to the board are not forwarded either).
    run = vm.run([frames, frames], ready_p=0.5, seed=4, mgmt_ports=0)
    assert run.outputs[MGMT] == [] and run.outputs[0] == run.outputs[1] == []
    assert run.counters["drop_mgmt_refused"] == 2 * len(frames) and run.counters["mgmt_rx_frames"] == 0


def test_answers_leave_by_the_port_of_the_last_request(board):
    vm = core(board)
    rng = random.Random(5)
    req0, req1 = to_board(rng, ADMIN), to_board(rng, ROGUE)
    ans0, ans1 = to_board(rng, BOARD, dst=ADMIN), to_board(rng, BOARD, dst=ROGUE)
    run = vm.run([[(0, req0)], [(2000, req1)], [(1000, ans0), (3000, ans1)]], ready_p=0.7, seed=5,
                 mgmt_ports=0b11)
    assert run.outputs[MGMT] == [req0, req1]
    assert run.outputs[0] == [ans0] and run.outputs[1] == [ans1]


def test_broadcast_arp_copy_under_both_policies(board):
    vm = core(board)
    arp = arp_broadcast(ADMIN, 7)
    run = vm.run([[arp], []], seed=6, mgmt_ports=0b01, policy=ms.MSP_TRANSPARENT)
    assert run.outputs[MGMT] == [arp] and run.outputs[1] == [arp]
    run = vm.run([[arp], [arp]], seed=6, mgmt_ports=0b01, policy=ms.MSP_MINISHARP_ONLY)
    # MINISHARP_ONLY forwards no ARP; the management port still gets the one from its port.
    assert run.outputs[MGMT] == [arp] and run.outputs[0] == run.outputs[1] == []
    assert run.counters["drop_not_minisharp"] == 1


def test_colorlight_context_table_holds_its_contexts():
    """The Colorlight's core has 4 contexts: a fifth setup is ctx_full, a teardown makes room again."""
    vm = core("colorlight")
    n = BOARD_CORES["colorlight"]["n_contexts"]
    setups = [P.setup_frame(SW, HOST, 100 + k, P.setup_record(8, 1, 0, 0)) for k in range(n + 1)]
    later = [(3000, P.teardown_frame(SW, HOST, 100)), (4000, setups[n])]
    run = vm.run([setups + later, []], seed=9, mgmt_ports=0b01)
    c = run.counters
    assert c["setups"] == n + 1 and c["drop_ctx_full"] == 1 and c["teardowns"] == 1

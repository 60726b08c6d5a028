"""The defects found when the core was tried as a new user would (issue 16, item 3), each on the Verilated
core: late duplicates, PHY errors through the SoC's MAC, contexts and slots that nothing freed."""
import random

import pytest
from migen import run_simulation

from cores.minisharp import common as ms
from software.minisharp import packets as P
from sim.verilated import available
from tests.harness.minisharp import CE, HOST, SW, check_results, port_macs, rand_value, verilated_core

verilated = pytest.mark.skipif(not available(), reason="no Verilated models on this machine")


def sequential(frames, port=0, gap=100):
    """Frames on one port, each fully handled before the next one starts."""
    out, start = [], 0
    for f in frames:
        out.append((start, f))
        start += 2 * len(f) + gap
    return out


def drops(run):
    return {k[5:]: v for k, v in run.counters.items() if k.startswith("drop_") and v}


@verilated
def test_late_duplicate_is_dropped_and_holds_no_slot():
    """Chunks 0-2 complete, then rank 0 resends each of them: before the fix every resend opened a slot for
    good (3 of the 4), so of the interleaved chunks 3 and 4 the second one found no slot."""
    vm = verilated_core()
    rng = random.Random(21)
    cid, n, r = 9, 5 * CE, 2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    fr = [dict(P.chunk_frames(SW, HOST, cid, k, vecs[k], CE)) for k in range(r)]
    seq = [P.setup_frame(SW, HOST, cid, P.setup_record(n, r, 0, 0))]
    seq += [fr[k][c] for c in range(3) for k in range(r)]
    seq += [fr[0][c] for c in range(3)]                            # late duplicates
    seq += [fr[0][3], fr[0][4], fr[1][3], fr[1][4]]               # chunks 3 and 4 interleaved
    seq += [fr[1][2]]                                              # one more, of the other rank
    run = vm.run([sequential(seq), [], []], macs=port_macs(3))
    assert sorted(check_results(run, 0, cid, n, vecs, 3)) == [0, 1, 2, 3, 4]
    assert drops(run) == {"duplicate": 4}
    assert run.counters["chunks"] == 5


@verilated
def test_chunk_past_the_completion_window_is_dropped_until_the_window_moves():
    vm = verilated_core()
    rng = random.Random(22)
    w = ms.DONE_WINDOW
    cid, n, r = 10, (w + 2) * CE, 2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    fr = [dict(P.chunk_frames(SW, HOST, cid, k, vecs[k], CE)) for k in range(r)]
    seq = [P.setup_frame(SW, HOST, cid, P.setup_record(n, r, 0, 0)),
           fr[0][w],                                   # base 0: chunk w is past the window
           fr[0][0], fr[1][0],                         # chunk 0 completes: base 1
           fr[0][w], fr[1][w]]                         # now inside it
    run = vm.run([sequential(seq), [], []], macs=port_macs(3))
    assert sorted(check_results(run, 0, cid, n, vecs, 3)) == [0, w]
    assert drops(run) == {"ahead": 1}


@verilated
def test_teardown_frees_context_and_slots():
    """Nine collectives one after the other, each torn down after use: before COL_TEARDOWN the ninth setup
    was ctx_full. A teardown of an unknown ID is dropped; a torn-down context takes no data."""
    vm = verilated_core()
    rng = random.Random(23)
    seq, vecs = [], {}
    for k in range(9):
        cid = 200 + k
        vecs[cid] = [[rand_value(rng) for _ in range(CE)] for _ in range(2)]
        seq.append(P.setup_frame(SW, HOST, cid, P.setup_record(CE, 2, 0, 0)))
        seq += [P.data_frame(SW, HOST, cid, j, 0, vecs[cid][j]) for j in range(2)]
        if k == 3:        # a half-finished chunk: the teardown frees its slot
            seq.pop()
        seq.append(P.teardown_frame(SW, HOST, cid))
    seq.append(P.teardown_frame(SW, HOST, 999))                         # unknown
    seq.append(P.data_frame(SW, HOST, 200, 0, 0, vecs[200][0]))          # torn down
    seq.append(P.teardown_frame(SW, HOST, 201, reserved=1))             # bad reserved
    seq.append(P.teardown_frame(SW, HOST, 201) + bytes(4))              # longer than the minimum frame
    # four chunks of a new collective at once: every slot is free again
    vecs[300] = [[rand_value(rng) for _ in range(4 * CE)] for _ in range(2)]
    seq.append(P.setup_frame(SW, HOST, 300, P.setup_record(4 * CE, 2, 0, 0)))
    fr = [dict(P.chunk_frames(SW, HOST, 300, j, vecs[300][j], CE)) for j in range(2)]
    seq += [fr[0][c] for c in range(4)] + [fr[1][c] for c in range(4)]
    run = vm.run([sequential(seq), [], []], macs=port_macs(3))
    for k in range(9):
        if k != 3:
            assert check_results(run, 0, 200 + k, CE, vecs[200 + k], 3) == [0]
    assert sorted(check_results(run, 0, 300, 4 * CE, vecs[300], 3)) == [0, 1, 2, 3]
    assert run.counters["teardowns"] == 9 and run.counters["setups"] == 10
    assert drops(run) == {"unknown_coll": 2, "bad_reserved": 1, "bad_length": 1}


@verilated
def test_idle_timeouts_free_slots_and_contexts():
    """A chunk whose second contribution is lost holds its slot until slot_timeout; the rank resends both and
    the chunk completes exactly. An idle context is removed after ctx_timeout (its data is then unknown)."""
    vm = verilated_core()
    rng = random.Random(24)
    cid, n, r = 11, 4 * CE, 2
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    fr = [dict(P.chunk_frames(SW, HOST, cid, k, vecs[k], CE)) for k in range(r)]
    tick = 1 << 4
    slot_to, ctx_to = 20, 200                       # ticks
    inputs = [(0, P.setup_frame(SW, HOST, cid, P.setup_record(n, r, 0, 0)))]
    inputs += [(200 + 100 * c, fr[0][c]) for c in range(4)]          # rank 1's frames lost: 4 slots held
    t = 200 + 400 + (slot_to + 2) * tick                            # every slot timed out
    inputs += [(t + 100 * c, fr[k][c]) for c in range(4) for k in range(r)]
    t2 = t + 2000 + (ctx_to + 2) * tick                              # the context timed out
    inputs += [(t2, fr[0][0])]
    run = vm.run([inputs, [], []], macs=port_macs(3), slot_timeout=slot_to, ctx_timeout=ctx_to, drain=500)
    assert sorted(check_results(run, 0, cid, n, vecs, 3)) == [0, 1, 2, 3]
    assert run.counters["slot_timeouts"] == 4 and run.counters["ctx_timeouts"] == 1
    assert drops(run) == {"unknown_coll": 1}


@verilated
def test_timeouts_never_free_active_slots():
    """Contributions to a chunk closer together than the slot timeout keep its slot, under random
    back-pressure and shuffled arrivals on three ports: every chunk completes and no timeout fires. (The
    timeout is set just above the widest spread of a chunk's arrivals, measured in the run.)"""
    vm = verilated_core()
    rng = random.Random(25)
    cid, n, r = 12, 12 * CE, 3
    vecs = [[rand_value(rng) for _ in range(n)] for _ in range(r)]
    frames = [f for k in range(r) for _, f in P.chunk_frames(SW, HOST, cid, k, vecs[k], CE)]
    frames.sort(key=lambda f: P.parse(f)["chunk_index"] + rng.random() * 3)
    inputs = [[(0, P.setup_frame(SW, HOST, cid, P.setup_record(n, r, 0, 2)))], [], []]
    for i, f in enumerate(frames):
        inputs[rng.randrange(3)].append((300 + 60 * i, f))
    tick = 1 << 4

    def run(slot_to):
        return vm.run(inputs, macs=port_macs(3), ready_p=0.4, slot_timeout=slot_to, ctx_timeout=2 * slot_to, seed=7,
                      drain=200)      # the run ends before the idle context times out
    base = run(0)
    ends = {}
    for p, frs in enumerate(inputs):
        for (_, f), end in zip(frs, base.in_last[p]):
            if P.parse(f)["opcode"] == ms.MS_OP_COL_DATA:
                ends.setdefault(P.parse(f)["chunk_index"], []).append(end)
    spread = max(max(e) - min(e) for e in ends.values())
    slot_to = spread // tick + 3                     # the slot's age restarts with each contribution
    res = run(slot_to)
    for o in range(3):
        assert sorted(check_results(res, o, cid, n, vecs, 3)) == list(range(12))
    assert res.counters["slot_timeouts"] == 0 and res.counters["ctx_timeouts"] == 0
    assert drops(res) == {}
    # a timeout well inside the spread does fire (the run above is not vacuous)
    assert run(slot_to // 3).counters["slot_timeouts"] > 0


@pytest.mark.extended
def test_soc_phy_error_is_dropped():
    """A frame whose FCS the SoC's MAC finds bad reaches the block with `error` set (connect_phys, as
    InnetSoC.add_minisharp connects it) and is dropped as phy_error (before the fix it was taken as good:
    forwarded, this non-MiniSharp frame)."""
    import zlib

    from liteeth.common import eth_phy_description
    from liteeth.mac.core import LiteEthMACCore
    from litex.soc.interconnect import stream
    from migen import ClockDomainsRenamer, Module

    from cores.minisharp.soc_block import MiniSharpSoCBlock

    class PHY(Module):
        def __init__(self):
            self.dw = 8
            self.sink, self.source = stream.Endpoint(eth_phy_description(8)), stream.Endpoint(eth_phy_description(8))

    class DUT(Module):
        def __init__(self):
            self.phys = [PHY(), PHY()]
            self.macs = [ClockDomainsRenamer({"eth_tx": "sys", "eth_rx": "sys"})(
                LiteEthMACCore(p, dw=8, with_preamble_crc=True, with_padding=True)) for p in self.phys]
            self.block = MiniSharpSoCBlock(num_ports=2, chunk_elements=CE, max_ranks=4, n_slots=2, partials=False,
                                           inject_bytes=64, capture_bytes=64)
            self.submodules += self.phys + self.macs + [self.block]
            self.block.connect_phys([(m.sink, m.source) for m in self.macs])
            self.comb += [p.sink.ready.eq(1) for p in self.phys]

    other = bytes.fromhex("02000000000102000000000208004500") + bytes(range(44))
    bad = other + (zlib.crc32(other) ^ 1).to_bytes(4, "little")
    dut = DUT()
    out = []

    def gen():
        src = dut.phys[0].source
        wire = bytes([0x55] * 7 + [0xD5]) + bad
        for i, b in enumerate(wire):
            yield src.valid.eq(1)
            yield src.data.eq(b)
            yield src.last.eq(i == len(wire) - 1)
            yield src.last_be.eq(i == len(wire) - 1)
            yield
        yield src.valid.eq(0)
        c = dut.block.core.counters
        for _ in range(40):
            if (yield c["port0_rx_frames"]):
                break
            yield
        for _ in range(4):
            yield
        out.append(((yield c["drop_phy_error"]), (yield c["port0_fwd_frames"]), (yield c["port0_rx_frames"])))

    run_simulation(dut, gen())
    assert out == [(1, 0, 1)]

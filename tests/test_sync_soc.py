"""Sync SoC block through its CSR bank (a scenario and the host demo), and the benchmark smoke test."""
import random

from cores.sync.common import (MODE_UMIN, MODE_AND, TRIG_CTRL, CPL_STATUS, CPL_INFO, CPL_POP, CPL_LATENCY,
                               DEFAULT_HOP_LATENCY, min_hop_latency)

from cores.sync.soc_block import SyncBlock
from software.sync.demo import demo
from software.sync.reference import reduce_values
from tests.harness.csr import run_demo

HOP = min_hop_latency(16) + 1          # 16-bit values: 3 flits; one register stage on every link


def test_soc_block_csr_triggers_and_latency():
    """2x2 + lamlet through its CSR bank: two idents triggered in random node order, popped from the
    completion FIFO with their latency; then a bad node index and a go while busy are counted, not taken."""
    rng = random.Random(5)
    n = 5
    vals = {(p, i): rng.getrandbits(16) for p in range(n) for i in range(2)}
    modes = {0: MODE_UMIN, 1: MODE_AND}

    def host(bus):
        r = lambda name: getattr(bus.regs, "syncnet_" + name)
        order = [(p, i) for p in range(n) for i in range(2)]
        rng.shuffle(order)
        for p, i in order:
            r("trig_value").write(vals[(p, i)])
            r("trig_ctrl").write(TRIG_CTRL.pack(node=p, ident=i, mode=modes[i], go=1))
            while r("trig_status").read():                 # the node takes the trigger when its merge is free
                pass
        for _ in range(20):                                  # every completion queued (each read: 2 cycles)
            r("cpl_status").read()
        cpl = []
        while CPL_STATUS.unpack(r("cpl_status").read())["valid"]:
            c = CPL_INFO.unpack(r("cpl_info").read())
            c["value"], c["latency"] = r("cpl_value").read(), r("cpl_latency").read()
            cpl.append(c)
            r("cpl_pop").write(CPL_POP.pack(pop=1))
        r("trig_ctrl").write(TRIG_CTRL.pack(node=9, ident=0, go=1))
        r("trig_ctrl").write(TRIG_CTRL.pack(node=0, ident=0, mode=7, go=1))
        r("trig_ctrl").write(TRIG_CTRL.pack(node=0, ident=0, mode=7, go=1))
        return cpl, r("trigger_drops").read(), r("completions").read()

    (cpl, drops, completions), _ = run_demo(SyncBlock(2, 2, n_idents=2, value_width=16, hop_latency=HOP),
                                            "syncnet", host)
    assert sorted((c["node"], c["ident"]) for c in cpl) == [(p, i) for p in range(n) for i in range(2)]
    for c in cpl:
        assert c["value"] == reduce_values(modes[c["ident"]], [vals[(p, c["ident"])] for p in range(n)], 16)
        assert c["mode"] == modes[c["ident"]] and c["error"] == 0
        # at most 2 hops ((1,1) -> (0,0) -> lamlet), plus one packet of the other ident ahead on a link (4
        # cycles: its flits, or the link's busy cycles after it is chosen)
        assert CPL_LATENCY <= c["latency"] <= 2 * HOP + CPL_LATENCY + 4
    assert completions == 2 * n
    # node 9 does not exist; node 0 drops the mode-7 trigger; the back-to-back second go finds the block busy
    assert drops == 3


def test_demo_through_csr_bank():
    """The host demo over the CSR bus of LiteX's CSRBankArray, as in the SoC (big-endian compound CSRs)."""
    lines, bus = run_demo(SyncBlock(2, 2, n_idents=3, value_width=32, hop_latency=DEFAULT_HOP_LATENCY), "syncnet",
                          lambda bus: demo(bus, rounds=2, seed=3))
    assert len(lines) == 4 and "2x2 grid + lamlet" in lines[0]
    assert all("15 completions correct" in line for line in lines[1:3])
    assert lines[3].startswith("sync uses: first faulting index of 100 elements by MIN: ")
    assert bus.accesses > 0


def test_bench_quick_matches_analytic():
    from sim.bench.bench_sync import run
    res = run(quick=True)
    rows = res.tables[0].rows
    assert len(rows) == 2
    for row in rows:
        assert row[5] == row[7] and row[6] == row[8]      # measured max/mean == analytic max/mean
    assert res.tables[1].rows[0][5] == "all match"

"""Sync SoC block through its CSR signals (direct and via the host demo), and the benchmark smoke test."""
import random

from migen.sim import run_simulation

from cores.sync.common import (MODE_UMIN, MODE_AND, TRIG_CTRL_FIELDS, CPL_STATUS_FIELDS, CPL_INFO_FIELDS,
                               fields_pack, fields_unpack)
from cores.sync.soc_block import SyncBlock
from software.sync.demo import demo
from software.sync.model import reduce_values
from tests.harness.csr import run_demo


def with_csrs(block):
    """Claim the compound CSRs as submodules, as the SoC's CSR bank does, so their field logic simulates."""
    for c in block.get_csrs():
        c.finalize(32, "little")
        block.submodules += c
    return block


def write(csr, value):
    yield csr.storage.eq(value)
    yield csr.re.eq(1)
    yield
    yield csr.re.eq(0)


def test_soc_block_csr_triggers_and_latency():
    """2x2 + lamlet: two idents triggered by CSR in random node order, popped from the completion FIFO with
    their latency; then a bad node index and a go while busy are counted, not taken."""
    b = with_csrs(SyncBlock(2, 2, n_idents=2, value_width=16, hop_latency=5))
    rng = random.Random(5)
    n = 5
    vals = {(p, i): rng.getrandbits(16) for p in range(n) for i in range(2)}
    modes = {0: MODE_UMIN, 1: MODE_AND}
    out = {"cpl": []}

    def gen():
        order = [(p, i) for p in range(n) for i in range(2)]
        rng.shuffle(order)
        for p, i in order:
            yield from write(b.trig_value, vals[(p, i)])
            yield from write(b.trig_ctrl, fields_pack(TRIG_CTRL_FIELDS, node=p, ident=i, mode=modes[i], go=1))
            yield                                          # go reaches trig_status.busy a cycle later
            while (yield b.trig_status.fields.busy):       # the node takes the trigger when its merge is free
                yield
        for _ in range(40):
            yield
        while fields_unpack(CPL_STATUS_FIELDS, (yield b.cpl_status.status))["valid"]:
            c = fields_unpack(CPL_INFO_FIELDS, (yield b.cpl_info.status))
            c["value"], c["latency"] = (yield b.cpl_value.status), (yield b.cpl_latency.status)
            out["cpl"].append(c)
            yield from write(b.cpl_pop, 1)
            yield
        yield from write(b.trig_ctrl, fields_pack(TRIG_CTRL_FIELDS, node=9, ident=0, go=1))
        yield from write(b.trig_ctrl, fields_pack(TRIG_CTRL_FIELDS, node=0, ident=0, mode=7, go=1))
        yield from write(b.trig_ctrl, fields_pack(TRIG_CTRL_FIELDS, node=0, ident=0, mode=7, go=1))
        for _ in range(5):
            yield
        out["drops"] = (yield b.trigger_drops.status)
        out["completions"] = (yield b.completions.status)

    run_simulation(b, gen())
    assert sorted((c["node"], c["ident"]) for c in out["cpl"]) == [(p, i) for p in range(n) for i in range(2)]
    for c in out["cpl"]:
        assert c["value"] == reduce_values(modes[c["ident"]], [vals[(p, c["ident"])] for p in range(n)], 16)
        assert c["mode"] == modes[c["ident"]] and c["error"] == 0
        # at most 2 hops ((1,1) -> (0,0) -> lamlet) of 5 cycles, plus one packet of the other ident ahead on
        # a link (4 flits)
        assert 0 <= c["latency"] <= 2 * 5 + 4
    assert out["completions"] == 2 * n
    # node 9 does not exist; node 0 drops the mode-7 trigger; the back-to-back second go finds the block busy
    assert out["drops"] == 3


def test_demo_through_csr_bank():
    """The host demo over the CSR bus of LiteX's CSRBankArray, as in the SoC (big-endian compound CSRs)."""
    lines, bus = run_demo(SyncBlock(2, 2, n_idents=3, value_width=32, hop_latency=5), "syncnet",
                          lambda bus: demo(bus, rounds=2, seed=3))
    assert len(lines) == 3 and "2x2 grid + lamlet" in lines[0]
    assert all("15 completions correct" in line for line in lines[1:])
    assert bus.accesses > 0


def test_bench_quick_matches_analytic():
    from sim.bench.bench_sync import run
    res = run(quick=True)
    rows = res.tables[0].rows
    assert len(rows) == 2
    for row in rows:
        assert row[5] == row[7] and row[6] == row[8]      # measured max/mean == analytic max/mean
    assert res.tables[1].rows[0][5] == "all match"

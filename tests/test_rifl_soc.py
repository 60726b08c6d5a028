"""RIFL SoC block driven through its CSR signals: generator -> endpoint -> channel -> endpoint -> checker,
both ways, with errors both ways, a link flap and a slow receiver; the checkers' counts against the
generators'. The block behind LiteX's CSR bank (as in the SoC) driven over the CSR bus by the host demo.
Plus the benchmark's quick mode (smoke test)."""

from migen import *
from migen.sim import run_simulation

from cores.rifl.soc_block import RIFLLoopback
from software.rifl.demo import demo
from tests.harness.csr import run_demo


def run_block(cycles, err=0, burst=1, flap=None, rx_ready=0, limit=40, F=64, latency=3):
    dut = RIFLLoopback(F, latency)
    res = {}

    def drive():
        yield dut.err_ab.storage.eq(err)
        yield dut.err_ba.storage.eq(err)
        yield dut.limit.storage.eq(limit)
        yield dut.rx_ready.storage.eq(rx_ready)
        yield dut.control.storage.eq(1 | (burst << 8))
        for t in range(cycles):
            if flap and t == flap[0]:
                yield dut.control.storage.eq(1 | 6 | (burst << 8))
            if flap and t == flap[1]:
                yield dut.control.storage.eq(1 | (burst << 8))
            if t == cycles // 2:
                yield dut.err_ab.storage.eq(0)
                yield dut.err_ba.storage.eq(0)
            yield
        for name, sig in dut.counters.items():
            res[name] = yield sig
        res["status"] = (yield dut.status.fields.link_up_a) | (yield dut.status.fields.link_up_b) << 1
    run_simulation(dut, [drive()])
    return res


def test_soc_block_errors_flap_slow_receiver():
    res = run_block(800, err=int(0.03 * 2**32), burst=3, flap=(200, 240), rx_ready=100, limit=25)
    for d in ("ab", "ba"):
        assert res[f"{d}_sent"] == 25 and res[f"{d}_delivered"] == 25
        for k in ("lost", "duplicated", "out_of_order", "corrupted"):
            assert res[f"{d}_{k}"] == 0, (d, k, res)
        assert res[f"{d}_channel_errors"] > 3
    assert res["a_replays"] > 0 and res["b_replays"] > 0 and res["status"] == 3
    assert res["a_link_downs"] >= 1 and res["a_rx_overflow"] == 0 and res["b_rx_overflow"] == 0


def test_soc_csr_bank_demo():
    """Regression for the SoC: the links' status, the enable and every counter go over the CSR bus of a real
    CSRBankArray. The host demo waits for status == 3 (in the block's own cycles), runs traffic at BER 0 and
    1e-3 and requires sent == delivered > 0 with no loss; the counters are then checked over the bus."""
    def host(bus):
        lines = demo(bus, frame_bits=64, rates=(0, 1e-3), cycles=250, up_cycles=2000)
        return lines, {n: getattr(bus.regs, n).read() for n in vars(bus.regs)}

    (lines, after), bus = run_demo(RIFLLoopback(frame_bits=64, latency=8), "rifl", host)
    assert after["rifl_status"] == 3 and after["rifl_control"] == 1 << 8          # links up, generators stopped
    assert 0 < after["rifl_cycles"] <= 4 * bus.accesses + 2                        # time is the bus's
    for d in ("ab", "ba"):
        assert after[f"rifl_{d}_sent"] > 10 and after[f"rifl_{d}_delivered"] == after[f"rifl_{d}_sent"]
        for k in ("lost", "duplicated", "out_of_order", "corrupted"):
            assert after[f"rifl_{d}_{k}"] == 0
        assert after[f"rifl_{d}_channel_errors"] > 0
    for e in ("a", "b"):
        assert after[f"rifl_{e}_tx_frames"] > 0 and after[f"rifl_{e}_rx_frames"] > 0
        assert after[f"rifl_{e}_link_downs"] == 0 and after[f"rifl_{e}_rx_overflow"] == 0
    assert after["rifl_a_replays"] + after["rifl_b_replays"] > 0
    assert len(lines) == 6


def test_bench_quick():
    from sim.bench import bench_rifl
    res = bench_rifl.run(quick=True)
    goodput = res.tables[0]
    assert goodput.rows and all(row[-1] == 0 for row in goodput.rows)      # no loss in the checkers
    assert 0 < goodput.rows[0][6] < 1                                       # errors cost goodput
    assert res.tables[1].rows[0][1] > 0                                      # latency measured

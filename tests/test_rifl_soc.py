"""RIFL SoC block (cores/rifl/soc_block.py RIFLLoopback) behind LiteX's CSR bank (as in the SoC), driven over
the CSR bus (tests.harness.csr): generator -> endpoint -> channel -> endpoint -> checker, both ways, with
errors both ways, a link flap and a slow receiver, the checkers' counts against the generators'; the host
demo (software.rifl.demo); the benchmark's quick mode (smoke test)."""

from cores.rifl.common import (CHK_FAULTS, LOOPBACK_CONTROL, LOOPBACK_COUNTERS, LOOPBACK_DIRECTIONS,
                               LOOPBACK_ENDPOINTS, LOOPBACK_STATUS)
from cores.rifl.soc_block import RIFLLoopback
from software.rifl.demo import demo
from tests.harness.csr import run_demo

LINKS_UP = LOOPBACK_STATUS.pack(link_up_a=1, link_up_b=1)


def test_soc_block_errors_flap_slow_receiver():
    """25 packets each way with 3-bit error bursts in 3% of the frames both ways until cycle 400, both
    channels down from cycle 200 to 240 and checkers ready 100/256 of the cycles: every packet is delivered
    once and intact, both endpoints replayed, A saw its link go down, the links are up again."""
    err, burst = int(0.03 * 2**32), 3

    def host(bus):
        regs = bus.regs

        def at(cycle):                         # poll the block's own clock
            while regs.rifl_cycles.read() < cycle:
                pass
        for name, value in (("err_ab", err), ("err_ba", err), ("limit", 25), ("rx_ready", 100)):
            getattr(regs, f"rifl_{name}").write(value)
        regs.rifl_control.write(LOOPBACK_CONTROL.pack(enable=1, burst=burst))
        at(200)
        regs.rifl_control.write(LOOPBACK_CONTROL.pack(enable=1, down_ab=1, down_ba=1, burst=burst))
        at(240)
        regs.rifl_control.write(LOOPBACK_CONTROL.pack(enable=1, burst=burst))
        at(400)
        regs.rifl_err_ab.write(0)
        regs.rifl_err_ba.write(0)
        at(800)
        return {name: getattr(regs, f"rifl_{name}").read() for name in [n for n, _ in LOOPBACK_COUNTERS] + ["status"]}

    res, _ = run_demo(RIFLLoopback(frame_bits=64, latency=3), "rifl", host)
    for d in LOOPBACK_DIRECTIONS:
        assert res[f"{d}_sent"] == 25 and res[f"{d}_delivered"] == 25
        for k in CHK_FAULTS:
            assert res[f"{d}_{k}"] == 0, (d, k, res)
        assert res[f"{d}_channel_errors"] > 3
    assert res["a_replays"] > 0 and res["b_replays"] > 0 and res["status"] == LINKS_UP
    assert res["a_link_downs"] >= 1 and res["a_rx_overflow"] == 0 and res["b_rx_overflow"] == 0


def test_soc_csr_bank_demo():
    """Regression for the SoC: the links' status, the enable and every counter go over the CSR bus of a real
    CSRBankArray. The host demo waits for the links (in the block's own cycles), runs traffic at BER 0 and
    1e-3 and requires sent == delivered > 0 with no loss; the counters are then checked over the bus."""
    def host(bus):
        lines = demo(bus, frame_bits=64, rates=(0, 1e-3), cycles=250, up_cycles=2000)
        return lines, {n: getattr(bus.regs, n).read() for n in vars(bus.regs)}

    (lines, after), bus = run_demo(RIFLLoopback(frame_bits=64, latency=8), "rifl", host)
    assert after["rifl_status"] == LINKS_UP                                        # links up
    assert after["rifl_control"] == LOOPBACK_CONTROL.pack(burst=1)                 # generators stopped
    assert 0 < after["rifl_cycles"] <= 4 * bus.accesses + 2                        # time is the bus's
    for d in LOOPBACK_DIRECTIONS:
        assert after[f"rifl_{d}_sent"] > 10 and after[f"rifl_{d}_delivered"] == after[f"rifl_{d}_sent"]
        for k in CHK_FAULTS:
            assert after[f"rifl_{d}_{k}"] == 0
        assert after[f"rifl_{d}_channel_errors"] > 0
    for e in LOOPBACK_ENDPOINTS:
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

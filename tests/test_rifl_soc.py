"""RIFL SoC block driven through its CSR signals: generator -> endpoint -> channel -> endpoint -> checker,
both ways, with errors, a link flap and a slow receiver; the checker's counts against the generator's."""
from migen import *
from migen.sim import run_simulation

from cores.rifl.soc_block import RIFLLoopback


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
        for name in dir(dut):
            if name.startswith(("ab_", "ba_", "a_", "b_")):
                res[name] = yield getattr(dut, name).status
        res["status"] = yield dut.status.status
    run_simulation(dut, [drive()])
    return res


def check_exact(res, limit):
    for d in ("ab", "ba"):
        assert res[f"{d}_sent"] == limit
        assert res[f"{d}_delivered"] == limit
        for k in ("lost", "duplicated", "out_of_order", "corrupted"):
            assert res[f"{d}_{k}"] == 0, (d, k, res)


def test_soc_block_errors_both_ways():
    res = run_block(650, err=int(0.03 * 2**32), burst=3, limit=25)
    check_exact(res, 25)
    assert res["ab_channel_errors"] > 3 and res["ba_channel_errors"] > 3
    assert res["a_replays"] > 0 and res["b_replays"] > 0 and res["status"] == 3


def test_soc_block_flap_and_slow_receiver():
    res = run_block(800, flap=(120, 160), rx_ready=60, limit=25)
    check_exact(res, 25)
    assert res["a_link_downs"] >= 1 and res["a_rx_overflow"] == 0 and res["b_rx_overflow"] == 0

"""Switch SoC block through LiteX's CSR bank (tests.harness.csr): load points, line rate, counters, restart,
and the host demo."""
import pytest

from cores.switch.soc_block import SwitchBlock
from software.switch.demo import demo, run_point, summarise
from tests.harness.csr import run_demo


@pytest.mark.extended
def test_soc_block_load_points():
    block = SwitchBlock(n=4, data_width=512, voq_cells=8, iterations=1)
    beats, duration = block.switch.beats, 200
    slots = duration // beats

    def host(bus):
        return [run_point(bus, 1.0, 1, duration),              # full load, a permutation: line rate
                run_point(bus, 0.5, 0, duration),              # half load, uniform destinations
                run_point(bus, 0.0, 0, duration),              # nothing offered
                run_point(bus, 0.5, 4, duration)]              # Dst Port 1 = 4 = 0 mod 4: every cell loops back
    (full, half, none, loop), _ = run_demo(block, "switch", host)
    for r in (full, half, none):
        assert r["errors"] == 0 and r["drops"] == 0 and r["collisions"] == 0
        assert r["rx_cells"] == r["tx_cells"]
    # Full load through a permutation: every input sends in every cell time of the run.
    assert abs(full["tx_cells"] - 4 * slots) <= 4
    s = summarise(full, ports=4, beats=beats, duration=duration)
    assert s["throughput"] > 0.9 and s["mean_latency_cells"] >= 1
    # Half load: binomial(4 * slots, 0.5) cells, well inside 5 sigma.
    assert abs(half["tx_cells"] - 2 * slots) <= 5 * (slots ** 0.5)
    assert half["lat_max"] >= half["lat_sum"] / max(1, half["rx_cells"])
    assert none["tx_cells"] == 0 and none["lat_sum"] == 0          # counters cleared by the start
    # Loop-back cells are dropped by the inputs and counted; the run still ends (done: tx = rx + drops).
    assert loop["tx_cells"] > 0 and loop["drops"] == loop["tx_cells"] and loop["rx_cells"] == 0
    assert loop["errors"] == 0 and loop["lat_sum"] == 0


def test_demo_through_csr_bank():
    """The host demo over the CSR bus of LiteX's CSRBankArray, as in the SoC."""
    lines, bus = run_demo(SwitchBlock(n=4, data_width=512, voq_cells=8, iterations=1), "switch",
                          lambda bus: demo(bus, cell_times=20))
    assert len(lines) == 4 and "4 ports" in lines[0]
    assert bus.accesses > 0


def test_csr_map():
    """The CSRs the host sees, in bank order, with their widths (lat_sum is 64 bits)."""
    csrs = SwitchBlock().get_csrs()
    assert [(c.name, c.size) for c in csrs] == [
        ("control", 1), ("load", 17), ("pattern", 8), ("duration", 32), ("status", 2), ("info", 24),
        ("cycles", 32), ("tx_cells", 32), ("rx_cells", 32), ("lat_sum", 64), ("lat_max", 32), ("errors", 32),
        ("drops", 32), ("collisions", 32)]

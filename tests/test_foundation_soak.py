"""Quick mode of `make bench BENCH=soak` (10^5 cycles a soak): no loss of any kind, corruption only
where the channel produced an error pattern CRC12 cannot detect, every counter adds up."""
from sim.bench import bench_soak
from sim.verilated import available
import pytest


@pytest.mark.long
@pytest.mark.extended
@pytest.mark.skipif(not available(), reason="needs Verilator")
def test_soak_quick():
    res = bench_soak.run(quick=True)
    assert set(res.data) == {name for name, _, _ in bench_soak.SOAKS}
    for name, r in res.data.items():
        assert r["cycles"] >= bench_soak.QUICK_CYCLES * 0.99 and r["carried"] > 100, (name, r)
        assert r["faults"] > 0, (name, r)                # every soak injects its faults
        assert r["lost"] == r.get("duplicated", 0) == r.get("out_of_order", 0) == r.get("slips", 0) == 0, (name, r)
        assert r["corrupted"] <= r.get("crc_escapes", 0), (name, r)
        assert r["sent"] - r["carried"] <= 16, (name, r)  # in flight at the end, at most
        assert r.get("counters_ok", True), (name, r)
    table = res.tables[0]
    for row in table.rows:                              # a count the soak did not compute is "-", never 0
        for key, column in (("duplicated", "duplicated"), ("out_of_order", "out of order"), ("replays", "replays")):
            assert (row[table.columns.index(column)] == "-") == (key not in res.data[row[0]]), (row, key)

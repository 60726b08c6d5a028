"""Benchmark framework and a smoke run of the SoC benchmark."""
import json

import pytest

from sim.bench.framework import BenchResult, Table


def test_table_and_result_files(tmp_path):
    t = Table("t", ["a", "b"])
    t.add(1, 0.5)
    with pytest.raises(ValueError):
        t.add(1)
    res = BenchResult("unit", tables=[t], data={"x": 1})
    md = res.write(str(tmp_path))
    assert "| 1 | 0.5 |" in open(md).read()
    assert json.load(open(tmp_path / "unit.json"))["data"] == {"x": 1}


@pytest.mark.sim
def test_bench_soc_smoke():
    from sim.bench import bench_soc
    res = bench_soc.run(quick=True)
    assert res.data["csr_reads_per_s"] > 10
    assert res.data["cycles_per_s_idle"] > 1000
    assert len(res.tables) == 2

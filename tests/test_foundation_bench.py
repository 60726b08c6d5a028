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
def test_bench_sim_smoke():
    """Quick mode of `make bench BENCH=sim`: the base SoC built, run and measured; sim.json written."""
    from sim.bench import bench_sim
    from sim.bench.framework import BENCH_DIR
    res = bench_sim.run(quick=True)
    base = json.load(open(f"{BENCH_DIR}/sim.json"))["base_soc"]
    assert base == res.data["base_soc"]
    assert base["cycles_per_s"] > 1000 and base["etherbone_reads_per_s"] > 10 and base["compile_s"] > 0
    (table,) = res.tables
    assert [row[:2] for row in table.rows] == [["base_soc", "innet, 1 thread"]]


def test_ecp5_bench_quick():
    """Quick mode of `make bench BENCH=ecp5`: the smallest core placed and routed (seed 1), in the table
    with its figures and its verdict against the target."""
    from sim.bench import bench_ecp5
    res = bench_ecp5.run(quick=True)
    (table,) = res.tables
    (row,) = table.rows
    (r,) = res.data["cores"]
    assert r["how"] == "placed and routed" and r["lut4"] > 0 and r["ff"] > 0 and r["seed"] == 1
    fmax = min(r["fmax_mhz"].values())
    assert row[0] == bench_ecp5.QUICK_CORE[0] and row[-2] == f"{fmax:.1f}"
    assert row[-1] == ("pass" if fmax >= bench_ecp5.TARGET_MHZ else "FAIL")


@pytest.mark.extended
def test_ecp5_as_built_parts_elaborate_with_block_ram_lowering():
    """Every as-built row of the ECP5 table (bench_ecp5.block_part) gives its part, its ports and the block RAM
    lowering the board builds use, whatever its `*_ios` function returns (no place and route)."""
    from cores.lib.block_ram import ecp5_special_overrides
    from sim.bench import bench_ecp5
    from sim.bench.ecp5 import load
    rows = [c for c in bench_ecp5.CORES if c[1].endswith(":block_part")]
    assert len(rows) >= 5
    for label, factory, args, _, _ in rows:
        module, ios, overrides = load(factory)(**args)
        assert ios and overrides is ecp5_special_overrides, label

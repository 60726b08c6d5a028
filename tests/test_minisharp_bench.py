"""Smoke test of the MiniSharp benchmark in quick mode (accuracy table from the reference model)."""
from sim.bench.bench_minisharp import run


def test_bench_quick():
    res = run(quick=True)
    assert res.name == "minisharp" and res.tables
    rows = res.tables[0].rows
    assert rows[1][3] == "0.00%"                      # exact
    assert float(rows[0][4].rstrip("%")) > 0          # a float32 running sum depends on the rank order
    assert "Exactness" in res.markdown()

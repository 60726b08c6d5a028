"""Smoke test of the switch benchmark (quick mode): the Verilated RTL scheduler runs and equals the Python iSLIP."""
from sim.bench import bench_switch
from software.switch.traffic import FIXED_LATENCY_CELLS


def test_bench_switch_quick():
    res = bench_switch.run(quick=True)
    assert res.data["rtl_equals_python"] is True
    titles = [t.title for t in res.tables]
    assert any("Uniform Bernoulli" in t for t in titles) and any("Other traffic" in t for t in titles)
    sweep = next(t for t in res.tables if "Uniform Bernoulli" in t.title)
    cols = sweep.columns
    for row in sweep.rows:
        r = dict(zip(cols, row))
        assert 0 < r["iSLIP util"] <= r["load"] + 0.05
        assert r["SAFC util"] >= r["FIFO util"] - 0.02           # output queueing is never worse than FIFO
        assert r["iSLIP mean lat"] >= FIXED_LATENCY_CELLS       # the spec's fixed latency is included

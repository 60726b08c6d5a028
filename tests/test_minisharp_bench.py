"""Smoke test of the MiniSharp benchmark in quick mode (accuracy table: the small Verilated core in two rank
orders against the exact reference and a float32 running sum)."""
import os

import pytest

from sim.bench import bench_minisharp as B
from sim.bench.bench_minisharp import run
from software.minisharp.reference import reduce_vectors


@pytest.mark.long
def test_bench_quick():
    res = run(quick=True)
    assert res.name == "minisharp" and res.tables
    rows = res.tables[0].rows
    assert rows[1][0].startswith("MiniSharp RTL")
    assert rows[1][3] == "0.00%" and rows[1][4] == "0.00%"      # computed from the RTL's results
    assert float(rows[0][3].rstrip("%")) > 0 and float(rows[0][4].rstrip("%")) > 0   # float32 running sums
    assert "Exactness" in res.markdown()


def test_accuracy_rows_are_computed():
    """A wrong result vector shows in the row (the quick mode's check can fail)."""
    vecs = B.vectors(4, 16, 5)
    exact = reduce_vectors(vecs)
    wrong = exact[:]
    wrong[3] ^= 1
    t, _ = B.accuracy_table(vecs, wrong, exact)
    assert t.rows[1][3] == f"{1 / 16:.2%}" and t.rows[1][4] == f"{1 / 16:.2%}"


def test_missing_results_count_as_differing():
    """A core that delivers no result, or only part of one, does not read as exact (issue 52)."""
    vecs = B.vectors(4, 16, 5)
    exact = reduce_vectors(vecs)
    assert B.accuracy_table(vecs, [], [])[0].rows[1][3:] == ["100.00%", "-"]
    t, _ = B.accuracy_table(vecs, exact[:12] + [None] * 4, exact[:12])
    assert t.rows[1][3] == "25.00%" and t.rows[1][4] == "25.00%"     # the 4 missing ones, in both columns
    assert B.differs(exact + [0.0], exact) == f"{1 / 17:.2%}"      # an extra element differs too


def test_failed_ecp5_report(tmp_path, monkeypatch):
    """A nextpnr run that does not fit, or is stopped after placement, still gives a table row (from what
    sim.bench.ecp5.failure_figures reads in its log)."""
    from sim.bench import ecp5
    from sim.bench.bench_minisharp import failed_report
    monkeypatch.setattr(ecp5, "BUILD", str(tmp_path))
    run = ecp5.seed_dir("minisharp_t", "LFE5U-85F", 1)
    os.makedirs(run)
    util = ("Info: Device utilisation:\n"
            "Info: \t              DP16KD:     155/    208    74%\n"
            "Info: \t          TRELLIS_FF:   60316/  83640    72%\n"
            "Info: \t        TRELLIS_COMB:   52022/  83640    62%\n"
            "Info: \t        TRELLIS_RAMW:    1011/  10455     9%\n")

    def report(log):
        with open(os.path.join(run, "nextpnr.log"), "w") as f:
            f.write(log)
        return failed_report(dict(ecp5.failure_figures("minisharp_t", "LFE5U-85F", 1), io_bits=2083))
    assert report(util) == [52022, 58233, 155, 1011, "did not place"]
    assert report(util + "Info: Max frequency for clock 'sys_clk': 47.82 MHz (FAIL at 50.00 MHz)\n")[4] == \
        "not routed; post-placement estimate 47.8"
    assert report(util.replace("155/    208", "155/     56"))[4] == "does not fit: DP16KD 155/56"

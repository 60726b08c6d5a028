"""Smoke test of the RIFL network benchmark (quick mode): the whole switch RTL, the scheduler alone and SAFC run on
the same traces, and every point reports the fields of build/bench/rifl_net.json's `points`."""
import json
import os

import pytest

from sim.bench import bench_rifl_net
from sim.bench.framework import BENCH_DIR

FIELDS = ("n", "k", "load", "traffic", "ber", "utilisation", "safc_utilisation", "lost", "duplicated", "reordered",
          "corrupted", "undetected")


@pytest.mark.long
@pytest.mark.extended
def test_bench_rifl_net_quick():
    res = bench_rifl_net.run(quick=True)
    res.write()
    with open(os.path.join(BENCH_DIR, "rifl_net.json")) as f:
        points = json.load(f)["points"]
    assert len(points) == 2
    for p in points:
        assert all(name in p for name in FIELDS)
        assert p["lost"] == p["duplicated"] == p["reordered"] == p["corrupted"] == 0
        assert 0.9 * p["offered"] <= p["utilisation"] <= 1.02 * p["offered"] or p["load"] > 0.9
        assert 0 < p["utilisation"] <= p["safc_utilisation"] + 0.02
        assert p["peak_voq"] <= p["voq_cells"]
    assert any(p["channel_errors"] > 0 for p in points if p["ber"])

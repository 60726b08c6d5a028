"""The whole SoC with every core in litex_sim, driven over Etherbone and the MiniSharp TAP ports: each
core's host demo must pass (they compare results with the Python reference models and raise on any
mismatch). This is `make sim` at small sizes."""
import json
import os
import sys

import pytest

from sim import target
from sim.demo import available_cores
from sim.runner import SimSession
from tests.harness.verilog import backward_part_selects

pytestmark = pytest.mark.sim


@pytest.mark.long
@pytest.mark.extended
def test_every_core_demo_passes_in_litex_sim():
    cores = available_cores()
    gateware = target.build(cores)
    with open(os.path.join(gateware, "sim.v")) as f:
        assert backward_part_selects(f.read()) == []
    with SimSession(gateware, boot_timeout=300) as sim:
        env_cmd = ["env", "INNET_MS_ELEMENTS=2000", "INNET_SPARSR_ROWS=64", sys.executable, "-m", "software.demo"]
        r = sim.run(env_cmd, timeout=1500, capture=True)
    print(r.stdout)
    result = json.loads(next(line[len("RESULT "):] for line in r.stdout.splitlines() if line.startswith("RESULT ")))
    assert r.returncode == 0, r.stdout + r.stderr
    assert result["scratch_mismatches"] == 0
    for core in cores:
        assert result.get(core) == "ok", f"{core}: {result.get(core)}"

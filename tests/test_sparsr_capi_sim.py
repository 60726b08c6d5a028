"""The C library's example program (build/sparsr/sparsr_example) against the Sparsr SoC in litex_sim, over
the library's own Etherbone transport: the RTL announces wire protocol version 3, every row comes back, and
both refusals are seen."""
import pytest

from sim import target
from sim.runner import SimSession
from cores.sparsr.common import STATUS_COUNTERS
from software.sparsr import capi

pytestmark = [pytest.mark.sim, pytest.mark.extended]


def test_example_program_in_litex_sim():
    capi.build()
    gateware = target.build(["sparsr"])
    with SimSession(gateware) as sim:
        r = sim.run([capi.EXAMPLE_BIN, "", "", "40", "3"], timeout=600, capture=True)
    out = r.stdout.splitlines()
    assert r.returncode == 0, r.stdout + r.stderr
    assert out[0].startswith("card at ") and "wire protocol version 3" in out[0]
    assert out[1].startswith("40 rows written")
    counters = dict(line.split() for line in out if line.split()[0] in STATUS_COUNTERS)
    assert int(counters["slots_refused_row"]) == 1
    assert all(int(v) == 0 for k, v in counters.items() if k.startswith("refused"))
    assert int(counters["slots_stored"]) > 40
    assert out[-1] == "ok"

"""The RIFL network SoC block (cores.rifl_net.soc_block.RIFLNetBlock: 4 hosts and a 4-port switch over lossy links,
on-chip generators and checkers) as a Verilated model: independent bit errors on every link, a forced
undetectable error, every packet accounted for by the checkers."""
import pytest

from cores.rifl import common as c
from sim.verilated import rifl as verilated_rifl
from software.rifl.demo import random_thresholds

N = 4


def totals(r, names):
    return {name: sum(r[f"h{h}_{name}"] for h in range(N)) for name in names}


@pytest.mark.long
def test_net_block_errors_and_forced_codeword():
    # quick_build: two runs of 50,000 and 40,000 cycles (0.5 CPU-s at -Os) of a model whose -Os build is 48
    # CPU-s; the same model as the quick soak's (bench_soak), one build for both.
    model = verilated_rifl.net_block(N, quick_build=True)
    thr = random_thresholds(1e-4, 64)
    forced = 2                                       # host 1 -> switch
    r = verilated_rifl.net_point(model, 30000, 20000, thr, force=(forced, 15000))
    t = totals(r, ["sent"] + [name for name, _ in c.CHK_COUNTERS])
    assert r["status"] == 2**N - 1
    assert t["sent"] > 200
    assert r[f"c{forced}_undetected"] == 1
    assert sum(r[f"c{ch}_undetected"] for ch in range(2 * N)) == 1
    # The forced codeword passed every check: it is one corrupted packet if it hit bytes a checker reads
    # (packet data, length, header), none if it hit padding; every other packet arrives once,
    # in order, intact.
    assert t["corrupted"] <= 1 and sum(t[k] for k in c.CHK_FAULTS) == t["corrupted"]
    assert t["delivered"] + t["corrupted"] == t["sent"]
    assert sum(r[f"c{ch}_errors"] for ch in range(2 * N)) > 50 and r["replays"] > 0
    assert r["drop_full"] == 0 and r["cells_in"] == r["cells_out"]
    clean = verilated_rifl.net_point(model, 20000, 20000, [0, 0, 0, 0])
    t = totals(clean, ["sent"] + [name for name, _ in c.CHK_COUNTERS])
    assert t["delivered"] == t["sent"] > 100 and sum(t[k] for k in c.CHK_FAULTS) == 0

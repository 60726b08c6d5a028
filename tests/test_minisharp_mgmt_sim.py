"""Management through MiniSharp in litex_sim, as on the boards: Etherbone is MiniSharp's management port,
reached from data port 0 only. The host on port 0 (TAP ms0) reads and writes CSRs over the kernel's UDP
stack while both ports carry a reduction; a host on port 1 (ms1) sends raw Etherbone requests to the board's
MAC and IP and gets nothing: no answer, the scratch CSR keeps its value, and drop_mgmt_refused counts its
frames (software.minisharp.mgmt_check, run inside the runner's namespace)."""
import json
import os
import sys

import pytest

from sim import target
from sim.runner import SimSession

pytestmark = [pytest.mark.sim, pytest.mark.long, pytest.mark.extended]


def test_only_the_management_port_reaches_etherbone():
    gateware = target.build(["minisharp"], management="minisharp")
    with SimSession(gateware, boot_timeout=120) as sim:
        r = sim.run([sys.executable, "-m", "software.minisharp.mgmt_check", "--csr-csv",
                     os.path.join(gateware, "csr.csv"), "--admin", "ms0", "--probe", "ms1", "--elements", "300"],
                    timeout=600, check=False, capture=True)
    line = next((l for l in r.stdout.splitlines() if l.startswith("RESULT ")), None)
    assert line is not None, r.stdout + r.stderr
    result = json.loads(line[len("RESULT "):])
    print(result)
    assert result["refused"] == 2 and result["mgmt_rx_frames"] > 0
    assert all(result[k] for k in ("admin_raw_read_answered", "probe_not_answered", "scratch_kept",
                                   "refused_counted", "probe_port_drops", "reduction_exact")), result
    assert r.returncode == 0, r.stdout + r.stderr

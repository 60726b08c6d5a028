"""Clock compensation (issue 18): two RIFL endpoints on separate clocks (+-100 ppm) linked through elastic
buffers (cores/rifl/elastic.py), saturated both ways in Verilator (sim.verilated.rifl.two_clock_link): no
slip, no replay, every packet once and in order, and the IDLEs removed/inserted match the clocks' drift.
Without the transmitters' periodic IDLE the same run slips."""
import pytest

from cores.rifl.common import CC_INTERVAL_FRAMES, CC_PPM_MAX, CHK_FAULTS, LOOPBACK_DIRECTIONS
from cores.rifl.elastic import RIFLElasticBuffer
from cores.rifl.link import RIFLEndpoint
from sim.verilated import available
from tests.harness.tiers import extended

needs_verilator = pytest.mark.skipif(not available(), reason="needs Verilator")
CYCLES = 2_000_000


SERDES_SLOT = 64 // 16 + 1        # cycles a frame slot of the 2-byte SERDES words at F = 64


def _model(cc_interval, serdes=False):
    from sim.verilated import rifl
    return rifl.two_clock_link(64, cc_interval, serdes)


def _run(model, ppm_a, ppm_b, cycles=CYCLES):
    from sim.verilated import rifl
    return rifl.two_clock_run(model, cycles, ppm_a, ppm_b)


@needs_verilator
@pytest.mark.parametrize("ppm_a, ppm_b, serdes", [
    (CC_PPM_MAX, -CC_PPM_MAX, False), extended(CC_PPM_MAX, -CC_PPM_MAX, True),
    extended(-CC_PPM_MAX, CC_PPM_MAX, False), extended(-CC_PPM_MAX, CC_PPM_MAX, True),
    (0, 0, False), (0, 0, True),
])
def test_two_clocks_no_slip(ppm_a, ppm_b, serdes):
    """Frame lines, or 2-byte 8b/10b words (RIFLSerDesLink(elastic=True): commas frame the far end's slots in
    its clock, A->B words shifted by a byte lane): 10^6+ frames each way."""
    slot = SERDES_SLOT if serdes else 1
    k = _run(_model(CC_INTERVAL_FRAMES, serdes), ppm_a, ppm_b, CYCLES * slot)
    drift = CYCLES * abs(ppm_a - ppm_b) * 1e-6           # frames the faster end sends beyond the slower's reads
    fast, slow = ("ab", "ba") if ppm_a > ppm_b else ("ba", "ab")
    for d in LOOPBACK_DIRECTIONS:
        assert k[f"{d}_slips"] == 0, k
        assert all(k[f"{d}_{name}"] == 0 for name in CHK_FAULTS), k
        assert k[f"{d}_delivered"] > 0.99 * k[f"{d}_sent"] - 10, k
    for e in "ab":
        assert k[f"{e}_rx_frames"] > 10 ** 6 and k[f"{e}_link_up"] == 1, k
        assert k[f"{e}_rx_errors"] == k[f"{e}_replays"] == k[f"{e}_tx_replayed"] == k[f"{e}_link_downs"] == 0, k
    if drift:
        # The buffer fed by the faster clock drops one IDLE per frame of drift, the other repeats one;
        # a few more at start-up (the buffers start half full, +- the band).
        assert abs(k[f"{fast}_removed"] - drift) <= 4 and k[f"{fast}_inserted"] == 0, k
        assert abs(k[f"{slow}_inserted"] - drift) <= 4, k
    else:
        assert all(k[f"{d}_removed"] + k[f"{d}_inserted"] <= 4 for d in LOOPBACK_DIRECTIONS), k


@needs_verilator
def test_without_periodic_idles_the_buffers_slip():
    """Saturated ends never send an IDLE: the buffers overflow and run dry, each slip a line error that the
    endpoints recover by replay (still no packet lost)."""
    k = _run(_model(None), CC_PPM_MAX, -CC_PPM_MAX)
    assert k["ab_slips"] > 10 and k["ba_slips"] > 10, k
    assert k["a_replays"] + k["b_replays"] > 10, k
    assert all(k[f"{d}_{name}"] == 0 for d in LOOPBACK_DIRECTIONS for name in CHK_FAULTS), k


def test_parameters_are_checked():
    from cores.rifl.common import idle_tag, payload_bits, scrambler_mask
    tag, width = idle_tag(64)                                 # sync 10, meta 00, the scrambled IDLE code
    assert width == 8 and tag >> 6 == 0b10 and (tag >> 4) & 3 == 0
    assert tag & 0xF == 0x1 ^ (scrambler_mask(payload_bits(64)) >> (payload_bits(64) - 4))
    with pytest.raises(ValueError, match="power of two"):
        RIFLElasticBuffer(64, depth=24)
    with pytest.raises(ValueError, match="at least 4"):
        RIFLElasticBuffer(64, depth=8, band=4)
    with pytest.raises(ValueError, match="cc_interval"):
        RIFLEndpoint(64, 16, cc_interval=1)

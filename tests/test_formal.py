"""make formal's properties (tests/formal/): each is proven, its deliberately broken variant must fail on the
assertion its mutation names, and its cover must be reached. These runs (seconds to minutes each: the RIFL
link's BMC takes 7) are marked `extended`: `make test` leaves them out and tests only the checks of sim.formal
itself; `make test-long` (called by .ci/run after `make test`) runs them, one test per xdist worker at a time
(tests/conftest.py); `make formal` proves them all."""
import dataclasses

import pytest

from sim import formal
from tests.harness.tiers import extended

PROPS = formal.load_properties()
ISLIP = next(p for p in PROPS if p.name == "switch_islip_matching_n4_k2")
COVER = "always @(*) cover(!init);"
SBY_TIMEOUT = 2400      # s a run: the RIFL link's BMC to depth 36 takes about 1240 s


def _mutation(assertion):
    """A mutation that changes nothing, naming `assertion` (for checkers made up here)."""
    return formal.Mutation("none", r"^(module core)", r"\1", assertion=assertion)


def _params(props):
    return [extended(p, id=p.name) for p in props]


@pytest.mark.parametrize("prop", _params(PROPS))
def test_property_holds(prop):
    r = formal.run(prop, timeout=SBY_TIMEOUT)
    assert r.status == "PASS", f"{prop.name}: {r.status} ({r.failed or 'see ' + r.workdir + '/sby.log'})"


@pytest.mark.parametrize("prop", _params(PROPS))
def test_broken_variant_fails(prop):
    r = formal.run(prop, broken=True, timeout=SBY_TIMEOUT)
    assert formal.expected(prop, r), (f"{prop.name} with '{prop.broken.description}': {r.status}, failed "
                                      f"assertions {r.failed!r}, expected {prop.broken.status} on "
                                      f"{prop.broken.assertion!r}")
    assert prop.broken.assertion in formal.tripped(prop, r)


@pytest.mark.parametrize("prop", _params(PROPS))
def test_cover_reached(prop):
    r = formal.run(prop, cover=True, timeout=SBY_TIMEOUT)
    assert r.status == "PASS", f"{prop.name}: cover {r.status} ({r.method}, see {r.workdir}/sby.log)"


def test_an_unreachable_cover_is_reported_not_reached():
    """A cover of what the matching property proves impossible (input 0 matched to an output it did not
    request) is not reached, and the report says so."""
    never = dataclasses.replace(ISLIP, name="islip_never",
                                cover="always @(*) if (!init) cover(match_valid[0] && !f_req_l[match_flat[1:0]]);")
    r = formal.run(never, cover=True)
    assert r.status == "FAIL" and not formal.expected(never, r)
    assert "NOT reached" in formal.table([r], [never])


def test_a_mutation_must_name_its_assertion():
    with pytest.raises(ValueError, match="must name the assertion it trips"):
        formal.Mutation("anything", r"^x$", "y")


def test_a_property_needs_its_assertion_and_a_cover():
    with pytest.raises(ValueError, match="is not in its checker"):
        dataclasses.replace(ISLIP, broken=_mutation("assert(no_such_assertion)"))
    with pytest.raises(ValueError, match="must hold cover"):
        dataclasses.replace(ISLIP, cover="")


def test_every_core_has_properties():
    cores = {p.name.split("_")[0] for p in PROPS}
    assert cores >= {"switch", "sync", "sparsr", "minisharp"}


def test_a_mutation_that_no_longer_matches_is_an_error():
    m = formal.Mutation("nothing", r"^no such line$", "x", assertion="assert(x)")
    with pytest.raises(ValueError, match="matched 0 times"):
        m.apply("module core();\nendmodule\n")


def test_a_misspelt_signal_is_an_error_not_a_proof():
    bad = formal.Property("islip_typo", "typo", ISLIP.build, "always @(*) assert(no_such_signal);",
                          _mutation("no_such_signal"), COVER, mode="bmc", depth=1)
    assert formal.run(bad).status == "ERROR"


def test_a_false_assertion_fails():
    false = formal.Property("islip_false", "false", ISLIP.build, "always @(*) if (!init) assert(start == 0);",
                            _mutation("start == 0"), COVER, mode="bmc", depth=2)
    assert formal.run(false).status == "FAIL"


def test_islip_requests_do_wait():
    """The service bound is not vacuous: under its assumptions a request does wait several decisions."""
    svc = next(p for p in PROPS if p.name == "switch_islip_service_n4_k1")
    waits = dataclasses.replace(svc, name="islip_waits", mode="bmc", depth=16,
                                check=svc.check + "always @(*) if (!init) assert(f_waited_now < 3);")
    r = formal.run(waits)
    assert r.status == "FAIL" and "f_waited_now < 3" in r.failed

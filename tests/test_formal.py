"""make formal's properties (tests/formal/): the quick ones are proven here, and their deliberately broken
variants must fail; the slow ones are broken here too unless they are BMC runs, whose counterexamples lie
deep (the iSLIP service bound: minutes). `make formal` runs everything."""
import dataclasses

import pytest

from sim import formal

PROPS = formal.load_properties()
ISLIP = next(p for p in PROPS if p.name == "switch_islip_matching_n4_k2")


@pytest.mark.parametrize("prop", [p for p in PROPS if not p.slow], ids=lambda p: p.name)
def test_property_holds(prop):
    r = formal.run(prop)
    assert r.status == "PASS", f"{prop.name}: {r.status} ({r.failed or 'see ' + r.workdir + '/sby.log'})"


@pytest.mark.parametrize("prop", [p for p in PROPS if not (p.slow and (p.mode == "bmc" or p.broken.depth))],
                         ids=lambda p: p.name)
def test_broken_variant_fails(prop):
    r = formal.run(prop, broken=True)
    assert formal.expected(prop, r), (f"{prop.name} with '{prop.broken.description}': {r.status}, failed "
                                      f"assertion {r.failed!r}, expected {prop.broken.status}")


def test_every_core_has_properties():
    cores = {p.name.split("_")[0] for p in PROPS}
    assert cores >= {"switch", "sync", "sparsr", "minisharp"}


def test_a_mutation_that_no_longer_matches_is_an_error():
    m = formal.Mutation("nothing", r"^no such line$", "x")
    with pytest.raises(ValueError, match="matched 0 times"):
        m.apply("module core();\nendmodule\n")


def test_a_misspelt_signal_is_an_error_not_a_proof():
    bad = formal.Property("islip_typo", "typo", ISLIP.build, "always @(*) assert(no_such_signal);",
                          ISLIP.broken, mode="bmc", depth=1)
    assert formal.run(bad).status == "ERROR"


def test_a_false_assertion_fails():
    false = formal.Property("islip_false", "false", ISLIP.build, "always @(*) if (!init) assert(start == 0);",
                            ISLIP.broken, mode="bmc", depth=2)
    assert formal.run(false).status == "FAIL"


def test_islip_requests_do_wait():
    """The service bound is not vacuous: under its assumptions a request does wait several decisions."""
    svc = next(p for p in PROPS if p.name == "switch_islip_service_n4_k1")
    waits = dataclasses.replace(svc, name="islip_waits", mode="bmc", depth=16,
                                check=svc.check + "always @(*) if (!init) assert(f_waited_now < 3);")
    r = formal.run(waits)
    assert r.status == "FAIL" and "f_waited_now < 3" in r.failed

"""Shared fuzzing set-up: Hypothesis profiles and the fuzz report (build/bench/fuzz.json).

Profiles: "ci" (the default; a short, derandomized budget, so `make test` is reproducible) and "fuzz" (`make
fuzz`: HYPOTHESIS_PROFILE=fuzz, a long random budget of FUZZ_EXAMPLES examples a target, 10000 unless
set; failures shrink and land in .hypothesis/, and the
`@example`s of each target keep the seed corpus). `record(target, **counts)` adds one example's counts
to the report: every fuzz target reports its examples, inputs, the junk among them and what was refused.
"""
import json
import os

from hypothesis import HealthCheck, settings

from sim import ROOT
from sim.verilated import FileLock

REPORT = os.path.join(ROOT, "build", "bench", "fuzz.json")

settings.register_profile("ci", max_examples=20, derandomize=True, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("fuzz", max_examples=int(os.environ.get("FUZZ_EXAMPLES", 10000)), deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def record(target, **counts):
    """Add `counts` (and one example) to `target`'s entry in the fuzz report."""
    with FileLock(REPORT + ".lock"):
        report = {}
        if os.path.exists(REPORT):
            with open(REPORT) as f:
                report = json.load(f)
        entry = report.setdefault(target, {"examples": 0})
        entry["examples"] += 1
        entry["profile"] = os.environ.get("HYPOTHESIS_PROFILE", "ci")
        for k, v in counts.items():
            entry[k] = entry.get(k, 0) + v
        with open(REPORT, "w") as f:
            json.dump(report, f, indent=1, sort_keys=True)

"""The two test tiers (docs/CORE_CONTRACT.md): `extended(*values)` is a parametrize case that `make test` leaves
out and `make test-long` runs, as `@pytest.mark.extended` is for a whole test."""
import pytest


def extended(*values, **kwargs):
    """pytest.param(*values, **kwargs) marked `extended`."""
    return pytest.param(*values, marks=pytest.mark.extended, **kwargs)

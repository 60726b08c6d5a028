"""The sync tests' and soak's check of completions against the model (software.sync.reference
check_completions) fed synthetic completions: a clean run passes; a lost, duplicated, reordered, corrupted or
early completion is reported, each with its own message."""
import random
import re

import pytest

from software.sync.reference import check_completions, expected_result, random_schedules

PARTS, IDENTS, ROUNDS, WIDTH = 3, 2, 3, 32


def clean(rng):
    """Every participant's completions of every (ident, round), round by round, a cycle after the round's
    last trigger; the accepts and contributions they answer."""
    _, contrib = random_schedules(rng, PARTS, IDENTS, ROUNDS, WIDTH)
    accepts = {(p, i, r): 10 * r + rng.randrange(5) for p in range(PARTS) for i in range(IDENTS) for r in range(ROUNDS)}
    completions = []
    for p in range(PARTS):
        out = []
        for r in range(ROUNDS):
            idents = list(range(IDENTS))
            rng.shuffle(idents)
            for i in idents:
                mode, error, value = expected_result(contrib[(i, r)], WIDTH)
                out.append((10 * r + 6, i, mode, error, value))
        completions.append(out)
    return accepts, completions, contrib


def check(accepts, completions, contrib):
    check_completions(PARTS, accepts, completions, contrib, ROUNDS, WIDTH)


def test_clean_completions_pass():
    check(*clean(random.Random(1)))


def where(completions, p, ident, r):
    """Index of participant p's completion of (ident, round r)."""
    return [k for k, c in enumerate(completions[p]) if c[1] == ident][r]


FAULTS = ["lost", "duplicated", "reordered", "value", "error", "early"]


@pytest.mark.parametrize("fault", FAULTS)
def test_faults_are_reported(fault):
    """One participant's completions with one fault: check_completions fails with that fault's message."""
    rng = random.Random(2 + FAULTS.index(fault))
    accepts, completions, contrib = clean(rng)
    p, i = rng.randrange(PARTS), rng.randrange(IDENTS)
    r = rng.randrange(ROUNDS - 1)
    k = where(completions, p, i, r)
    cycle, _, mode, error, value = completions[p][k]
    got = completions[p]
    if fault == "lost":                             # the last round's: an earlier one's shifts the rounds
        del got[where(completions, p, i, ROUNDS - 1)]
        expect = rf"^participant {p}: completions "
    elif fault == "duplicated":
        got.append(got[where(completions, p, i, ROUNDS - 1)])
        expect = rf"^participant {p}: extra completion for ident {i}$"
    elif fault == "reordered":                      # two rounds of one ident with different results
        r = next(r for r in range(ROUNDS - 1) if expected_result(contrib[(i, r)], WIDTH) !=
                 expected_result(contrib[(i, r + 1)], WIDTH))
        k, j = where(completions, p, i, r), where(completions, p, i, r + 1)
        got[k], got[j] = got[j], got[k]
        expect = rf"^participant {p} ident {i} round {r}: "
    elif fault == "value":
        bad = value ^ (1 << rng.randrange(WIDTH))
        got[k] = (cycle, i, mode, error, bad)
        expect = "^" + re.escape(f"participant {p} ident {i} round {r}: {(mode, hex(bad))} != {(mode, hex(value))}")
    elif fault == "error":
        got[k] = (cycle, i, mode, 1 - error, value)
        expect = rf"^participant {p} ident {i} round {r}: error {1 - error}, expected {error}$"
    else:
        accepts[((p + 1) % PARTS, i, r)] = cycle + 1     # every participant completed that round too early
        expect = rf"^participant 0 completed ident {i} round {r} before every trigger$"
    with pytest.raises(AssertionError, match=expect):
        check(accepts, completions, contrib)

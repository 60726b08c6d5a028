"""Reference model of the synchronization network, written from the spec (independent of the RTL).

`reduce_values` is the reduction every node must report; `coverage` is the set of participants a message
vouches for (the spec's direction table); `expected_messages` says which links carry a message when only some
participants have triggered; `expected_result` is what a completion must hold for one synchronization.
"""
from cores.sync.common import (MODE_MAX, MODE_UMAX, MODE_MIN, MODE_UMIN, MODE_OR, MODE_AND, MODES, VECTORS, DIRS,
                               LAMLET_DIR, OPPOSITE)

LAMLET = "lamlet"


def _signed(v, width):
    return v - (1 << width) if v >> (width - 1) else v


def reduce_values(mode, values, width):
    """The mode's reduction of unsigned `width`-bit integers, as an unsigned `width`-bit integer."""
    values = list(values)
    if not values:
        raise ValueError("a reduction needs at least one value")
    mask = (1 << width) - 1
    if mode == MODE_MAX:
        return max(values, key=lambda v: _signed(v, width))
    if mode == MODE_MIN:
        return min(values, key=lambda v: _signed(v, width))
    if mode == MODE_UMAX:
        return max(values)
    if mode == MODE_UMIN:
        return min(values)
    out = mask if mode == MODE_AND else 0
    for v in values:
        out = out & v if mode == MODE_AND else out | v
    if mode not in (MODE_OR, MODE_AND):
        raise ValueError(f"unknown mode {mode}")
    return out


def participants(width, height, with_lamlet=True):
    """Every participant: grid coordinates (x, y) row by row, then the lamlet."""
    out = [(x, y) for y in range(height) for x in range(width)]
    return out + [LAMLET] if with_lamlet else out


def coverage(node, d, width, height, with_lamlet=True):
    """Participants that a message sent by `node` towards direction `d` says have triggered.

    Read from the receiver's side of the spec's table: North = "all nodes directly south of you", North-East =
    "all nodes in your south-west quadrant", and so on; the receiver's south column / south-west quadrant is
    the sender's column or quadrant including the sender. The lamlet hangs off (0, 0), so it is covered with
    (0, 0), except towards the lamlet itself, where its own message is implied."""
    if node == LAMLET:
        return {LAMLET}
    dx, dy = VECTORS[d]
    x0, y0 = node
    out = set()
    for y in range(height):
        for x in range(width):
            okx = (x == x0) if dx == 0 else (x <= x0 if dx > 0 else x >= x0)
            oky = (y == y0) if dy == 0 else (y <= y0 if dy > 0 else y >= y0)
            if okx and oky:
                out.add((x, y))
    if with_lamlet and (0, 0) in out:
        out.add(LAMLET)
    return out


def links(width, height, with_lamlet=True):
    """Every directed link as (sender, direction)."""
    out = []
    for y in range(height):
        for x in range(width):
            for d in DIRS:
                if 0 <= x + VECTORS[d][0] < width and 0 <= y + VECTORS[d][1] < height:
                    out.append(((x, y), d))
    if with_lamlet:
        out += [((0, 0), LAMLET_DIR), (LAMLET, OPPOSITE[LAMLET_DIR])]
    return out


def expected_messages(triggered, width, height, with_lamlet=True):
    """Links that carry a message when exactly `triggered` participants have triggered (and waited long)."""
    triggered = set(triggered)
    return {(n, d) for n, d in links(width, height, with_lamlet)
            if coverage(n, d, width, height, with_lamlet) <= triggered}


def expected_result(contributions, width):
    """contributions: list of (mode, value) of every participant for one synchronization.
    Returns (mode_or_None, error, value_or_None): with mismatched modes only the error flag is defined."""
    modes = {m for m, _ in contributions}
    if len(modes) != 1:
        return None, 1, None
    mode = modes.pop()
    return mode, 0, reduce_values(mode, [v for _, v in contributions], width)


def check_completions(n_parts, accepts, completions, contrib, n_rounds, width):
    """Check a run against the model; raises AssertionError on the first difference.

    accepts[(p, ident, round)] = cycle participant p's trigger was taken; completions[p] = [(cycle, ident,
    mode, error, value)] in the order p presented them; contrib[(ident, round)] = [(mode, value)] of every
    participant. Every participant must complete every (ident, round) exactly once, in round order, never
    before the cycle the last trigger of that round was taken, with `expected_result`'s mode, error and
    value (only the error flag when the modes differ)."""
    n_idents = len({i for i, _ in contrib})
    for p in range(n_parts):
        got = {}
        for cycle, ident, mode, error, value in completions[p]:
            r = got.get(ident, 0)
            got[ident] = r + 1
            assert r < n_rounds, f"participant {p}: extra completion for ident {ident}"
            last = max(accepts[(q, ident, r)] for q in range(n_parts))
            assert cycle >= last, f"participant {p} completed ident {ident} round {r} before every trigger"
            e_mode, e_err, e_val = expected_result(contrib[(ident, r)], width)
            assert error == e_err, f"participant {p} ident {ident} round {r}: error {error}, expected {e_err}"
            if not e_err:
                assert (mode, value) == (e_mode, e_val), \
                    f"participant {p} ident {ident} round {r}: {(mode, hex(value))} != {(e_mode, hex(e_val))}"
        assert got == {i: n_rounds for i in range(n_idents)}, f"participant {p}: completions {got}"


def random_schedules(rng, n_parts, n_idents, n_rounds, width, modes=MODES, mismatch=False):
    """Per participant a round-sorted list of (ident, mode, value); idents shuffled independently per node
    inside each round (deadlock-free: a node only waits for rounds earlier than the one it is in).
    Returns (schedules, contributions[(ident, round)] = [(mode, value)] in participant order)."""
    mode_of = {(i, r): rng.choice(modes) for i in range(n_idents) for r in range(n_rounds)}
    schedules = [[] for _ in range(n_parts)]
    contrib = {}
    for p in range(n_parts):
        for r in range(n_rounds):
            order = list(range(n_idents))
            rng.shuffle(order)
            for i in order:
                mode = mode_of[(i, r)]
                if mismatch and p == n_parts - 1:
                    mode = (mode + 1) % len(MODES)
                v = rng.choice([rng.getrandbits(width), 0, (1 << width) - 1, 1 << (width - 1),
                                rng.getrandbits(width)])
                schedules[p].append((i, mode, v))
                contrib.setdefault((i, r), []).append((mode, v))
    return schedules, contrib

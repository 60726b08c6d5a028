"""Random sparse rows (host side): the one generator of the tests, the demo and the benchmarks."""
from cores.sparsr.common import ROW_LANES


def random_row(rng, n_nonzero):
    """A row (a list of ROW_LANES 32-bit lane values) with exactly `n_nonzero` (0..ROW_LANES) non-zero lanes,
    at lanes drawn without replacement, each a random non-zero value. `rng`: the caller's `random.Random`, so
    its seed fixes the rows; a row takes one `rng.sample` of the lanes, then one `rng.getrandbits(32)` per lane
    drawn (0 becomes 1)."""
    row = [0] * ROW_LANES
    for lane in rng.sample(range(ROW_LANES), n_nonzero):
        row[lane] = rng.getrandbits(32) or 1
    return row

import os
import signal
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def _interrupt(signum, frame):
    # Turn SIGTERM into KeyboardInterrupt so that simulation sessions remove their processes and namespaces.
    raise KeyboardInterrupt(f"signal {signum}")


signal.signal(signal.SIGTERM, _interrupt)


# Bench smoke tests compute their points in the test's process, never from build/bench/cache/ (a cached point
# would pass without running); tests/test_foundation_sweep.py covers the executors and the cache.
from sim.bench import sweep as _sweep  # noqa: E402

_sweep.configure(workers=1, fresh=True)


def pytest_collection_modifyitems(config, items):
    """Tests marked `long` run first (stable order otherwise): with `make test`'s `-n 2 --maxschedchunk 1` the
    workers take them in turns at the start, instead of one of them ending the run with a test of several
    minutes."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)

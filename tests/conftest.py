import os
import signal
import sys

import pytest

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
    """Tests marked `long` run first (stable order otherwise): the files that hold them go to the workers
    first, instead of one of them ending the run alone with minutes of work."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


# Files whose tests share nothing in the process and take minutes each (the formal runs): handed out one test at a
# time, so that `make test-long`'s two workers share the slow properties.
PER_TEST_FILES = {"tests/test_formal.py"}


@pytest.hookimpl(optionalhook=True)                 # defined by xdist (absent under -p no:xdist)
def pytest_xdist_make_scheduler(config, log):
    """`make test`'s workers take whole test files, in the order of the files' first tests (see above).

    A file's tests share what they elaborate and build in the process (models kept per configuration,
    module-scoped fixtures): handed out one test at a time, both workers elaborated the same designs. The files
    of PER_TEST_FILES go one test at a time."""
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid):
            path = nodeid.split("::", 1)[0]
            return nodeid if path in PER_TEST_FILES else path

        def schedule(self):
            # LoadScopeScheduling.schedule() with the files in collection order instead of largest first.
            assert self.collection_is_completed
            if self.collection is not None:
                for node in self.nodes:
                    self._reschedule(node)
                return
            if not self._check_nodes_have_same_collection():
                self.log("**Different tests collected, aborting run**")
                return
            self.collection = list(next(iter(self.registered_collections.values())))
            for nodeid in self.collection:
                self.workqueue.setdefault(self._split_scope(nodeid), {})[nodeid] = False
            for node in self.nodes:
                if self.workqueue:
                    self._assign_work_unit(node)
            for node in self.nodes:
                self._reschedule(node)

    return FileScheduling(config, log)

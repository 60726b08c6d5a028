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

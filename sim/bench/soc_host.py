"""Host side of bench_sim, run inside the simulation namespace: prints one JSON line of measurements
(single CSR reads/s, 16-word burst reads/s, write+read pairs/s, simulated cycles/s)."""
import argparse
import json
import os
import sys
import time

from software.argtypes import positive_float
from software.client import InnetClient, MAX_BURST_WORDS, TargetUnreachable
from software.demo import csr_reads_per_second, cycles_per_second


def rate(fn, seconds):
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        fn()
        n += 1
    return n / (time.monotonic() - t0)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("seconds", nargs="?", type=positive_float, default=2.0, help="seconds per measurement")
    seconds = parser.parse_args(argv).seconds
    missing = [k for k in ("INNET_SOC_IP", "INNET_CSR_CSV") if k not in os.environ]
    if missing:
        print(f"error: {' and '.join(missing)} not set: this runs inside the simulation (sim.bench.bench_sim)",
              file=sys.stderr)
        return 2
    try:
        bus = InnetClient(os.environ["INNET_SOC_IP"], csr_csv=os.environ["INNET_CSR_CSV"], timeout=5).open()
    except (TargetUnreachable, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    scratch = bus.regs.ctrl_scratch.addr
    out = {
        "csr_reads_per_s": csr_reads_per_second(bus, seconds),
        "burst_reads_per_s": rate(lambda: bus.read(scratch, MAX_BURST_WORDS), seconds),
        "write_read_pairs_per_s": rate(lambda: (bus.write(scratch, 1), bus.read(scratch)), seconds),
        "cycles_per_s": cycles_per_second(bus, seconds),       # the host idle meanwhile
    }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""make bench: run every sim/bench/bench_*.py (or the ones named) and write build/bench/<name>.md/.json."""
import argparse
import importlib
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def discover():
    return sorted(f[len("bench_"):-3] for f in os.listdir(HERE) if f.startswith("bench_") and f.endswith(".py"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {discover()})")
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (seconds, not minutes)")
    args = parser.parse_args(argv)
    names = args.names or discover()
    failed = []
    for name in names:
        t0 = time.monotonic()
        print(f"== bench {name} ==", flush=True)
        try:
            result = importlib.import_module(f"sim.bench.bench_{name}").run(quick=args.quick)
            path = result.write()
            print(result.markdown())
            print(f"(written to {path}, {time.monotonic() - t0:.0f} s)\n", flush=True)
        except Exception:
            traceback.print_exc()
            failed.append(name)
    if failed:
        print(f"benchmarks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

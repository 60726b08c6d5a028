"""make bench: run every sim/bench/bench_*.py (or the ones named), write build/bench/<name>.md/.json and the
index build/bench/index.html.

Sweep points run through sim.bench.sweep: on every local core by default (--workers N), on a Ray cluster with
--cluster ray://HOST:PORT (or $RAY_ADDRESS; `local`: a private Ray on this machine); computed points are
cached in build/bench/cache/ and --fresh recomputes them."""
import argparse
import importlib
import inspect
import os
import sys
import time
import traceback

from sim.bench import sweep
from sim.bench.framework import BENCH_DIR, write_index
from software.argtypes import positive_float, positive_int

HERE = os.path.dirname(os.path.abspath(__file__))


def discover():
    return sorted(f[len("bench_"):-3] for f in os.listdir(HERE) if f.startswith("bench_") and f.endswith(".py"))


def cluster_address(text):
    """argparse type of --cluster: `local`, ray://HOST:PORT or HOST:PORT."""
    if text != "local":
        try:
            sweep.ray_address(text)
        except sweep.ClusterUnreachable as e:
            raise argparse.ArgumentTypeError(str(e)) from None
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", help=f"benchmarks to run (default: all of {discover()})")
    parser.add_argument("--quick", action="store_true", help="smoke-test sizes (seconds, not minutes)")
    parser.add_argument("--workers", type=positive_int, default=None,
                        help=f"local worker processes for the sweep points (default: every core, {os.cpu_count()}; "
                             "1: in this process)")
    parser.add_argument("--cluster", type=cluster_address, default=None,
                        help="run the sweep points on the Ray cluster at this address (ray://HOST:PORT, HOST:PORT, "
                             "or `local`); default $RAY_ADDRESS, else the local processes")
    parser.add_argument("--fresh", action="store_true", help="recompute every point (ignore build/bench/cache/)")
    parser.add_argument("--no-ecp5", action="store_true",
                        help="skip the ECP5 place-and-route runs of the benchmarks that have them (hours; "
                             "`make bench BENCH=ecp5` has every core's)")
    parser.add_argument("--connect-timeout", type=positive_float, default=sweep.SETTINGS.connect_timeout,
                        help="seconds to wait for the Ray cluster to answer")
    args = parser.parse_args(argv)
    names = args.names or discover()
    unknown = set(names) - set(discover())
    if unknown:
        parser.error(f"unknown benchmarks {sorted(unknown)}; known: {discover()}")
    sweep.configure(fresh=args.fresh, connect_timeout=args.connect_timeout,
                    **({"workers": args.workers} if args.workers else {}),
                    **({"cluster": args.cluster} if args.cluster else {}))
    failed = []
    try:
        for name in names:
            t0 = time.monotonic()
            print(f"== bench {name} ==", flush=True)
            try:
                run = importlib.import_module(f"sim.bench.bench_{name}").run
                extra = {"ecp5": False} if args.no_ecp5 and "ecp5" in inspect.signature(run).parameters else {}
                result = run(quick=args.quick, **extra)
                path = result.write()
                print(result.markdown())
                print(f"(written to {path}, {time.monotonic() - t0:.0f} s)\n", flush=True)
            except sweep.ClusterUnreachable as e:
                print(f"error: {e}", file=sys.stderr)
                return 2
            except Exception:
                traceback.print_exc()
                failed.append(name)
    finally:
        sweep.shutdown()
    if os.path.isdir(BENCH_DIR):
        print(f"index: {write_index()}")
    if failed:
        print(f"benchmarks failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Sync host CLI over Etherbone (the SoC's csr.csv names the block's CSRs; software.sync.api):

  python -m software.sync --csr-csv csr.csv info                    # grid size, idents, value width
  python -m software.sync --csr-csv csr.csv all 0 min 3,-1,7,...    # every participant syncs ident 0 (one
                                                                    # value each): each node's result
  python -m software.sync --csr-csv csr.csv uses                    # the first faulting index by MIN, flags by OR

Inside a simulation (`python -m sim.runner -- python -m software.sync uses`) the SoC's address and csr.csv
default to $INNET_SOC_IP and $INNET_CSR_CSV.
"""
import argparse
import random
import sys

from cores.sync.common import MODE_NAMES
from soc.common import CORE_NAMES
from software.argtypes import add_target_arguments, int_in, positive_float
from software.client import run_command
from software.sync.api import Sync, SyncError, SyncTimeout
from software.sync.demo import uses


def int_list(text):
    """argparse type: comma-separated integers (decimal or 0x...)."""
    try:
        return [int(v, 0) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of integers: {text!r}") from None


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m software.sync", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_arguments(parser, CORE_NAMES["sync"], "sync")
    parser.add_argument("--timeout", type=positive_float, default=10.0, help="seconds to wait for a completion")
    parser.add_argument("--seed", type=int, default=1, help="seed of the `uses` data")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("info", help="the block's grid, idents and value width")
    a = sub.add_parser("all", help="every participant syncs one ident with its own value")
    a.add_argument("ident", type=int_in(0, 7))
    a.add_argument("op", choices=MODE_NAMES)
    a.add_argument("values", type=int_list, help="one value a participant, comma-separated")
    sub.add_parser("uses", help="the specification's uses: first faulting index by MIN, flags by OR")
    args = parser.parse_args(argv)
    if args.csr_csv is None:
        parser.error("the SoC's csr.csv is needed: --csr-csv (or $INNET_CSR_CSV)")

    def body(bus):
        if not any(name.startswith(args.prefix + "_") for name in bus.regs.d):
            print(f"error: the SoC has no sync block named {args.prefix!r} (its csr.csv: {args.csr_csv})",
                  file=sys.stderr)
            return 2
        s = Sync(bus, args.prefix, timeout=args.timeout)
        if args.cmd == "info":
            print(" ".join(f"{k}={v}" for k, v in s.host.info.items()))
        elif args.cmd == "all":
            for node, r in enumerate(s.all(args.ident, args.op, args.values)):
                print(f"node {node}: {r}")
        else:
            for line in uses(bus, args.prefix, random.Random(args.seed)):
                print(line)
    return run_command(args.host, args.port, args.csr_csv, 2.0, body, errors=(ValueError, SyncError, SyncTimeout))


if __name__ == "__main__":
    sys.exit(main())

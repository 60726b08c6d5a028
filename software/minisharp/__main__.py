"""MiniSharp host CLI.

  python -m software.minisharp reduce --iface tap0 --ranks 4 --elements 100000 --shuffle
  python -m software.minisharp dissector -o build/minisharp/minisharp.lua

`reduce` plays the Aggregation Manager and every rank over one raw AF_PACKET socket (root or
CAP_NET_RAW), collects the COL_RES frames on the same interface (or --rx-iface) and checks every sum
bit for bit against the exact reference; exit status 1 on any mismatch.
"""
import argparse
import random
import sys

from cores.minisharp import common as ms
from software.argtypes import int_in, mac, positive_float, positive_int
from software.minisharp.demo import random_vector
from software.minisharp.dissector import write_dissector
from software.minisharp.host import RawSocketTransport, SplitTransport, reduce

PORT = int_in(0, 255)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m software.minisharp", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("reduce", help="run one exact FP32 reduction through the switch")
    r.add_argument("--iface", required=True, help="interface towards a switch port")
    r.add_argument("--rx-iface", help="interface receiving the results (default: --iface)")
    r.add_argument("--ranks", type=int_in(1, 256), default=4)
    r.add_argument("--elements", type=positive_int, default=100000,
                   help="FP32 elements per rank (at most 2^16 chunks)")
    r.add_argument("--collective-id", type=int_in(0, 2**32 - 1), default=1)
    r.add_argument("--egress-first", type=PORT, default=0)
    r.add_argument("--egress-last", type=PORT, default=0)
    r.add_argument("--shuffle", action="store_true", help="send chunks and ranks in random order")
    r.add_argument("--window", type=positive_int, default=2, help="chunks in flight (<= the switch's chunk slots)")
    r.add_argument("--retry", type=positive_float, default=1.0, help="seconds before a chunk is resent")
    r.add_argument("--chunk-elements", type=int_in(1, ms.MS_CHUNK_ELEMENTS), default=ms.MS_CHUNK_ELEMENTS)
    r.add_argument("--switch-mac", type=mac, default=ms.BROADCAST_MAC, help="default: broadcast")
    r.add_argument("--timeout", type=positive_float, default=3600.0)
    r.add_argument("--seed", type=int, default=1)
    d = sub.add_parser("dissector", help="write the Wireshark Lua dissector")
    d.add_argument("-o", "--output", default="minisharp.lua")
    args = ap.parse_args(argv)

    try:
        if args.cmd == "dissector":
            print(write_dissector(args.output))
            return 0
        if args.egress_first > args.egress_last:
            r.error(f"--egress-first {args.egress_first} is past --egress-last {args.egress_last}")
        if args.elements > (1 << 16) * args.chunk_elements:
            r.error(f"argument --elements: at most {(1 << 16) * args.chunk_elements} (2^16 chunks of "
                    f"{args.chunk_elements})")
        return run_reduce(args)
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run_reduce(args):
    """The `reduce` command: 0 when every result is exact, else 1."""
    rng = random.Random(args.seed)
    vectors = [random_vector(rng, args.elements) for _ in range(args.ranks)]
    tx = RawSocketTransport(args.iface)
    transport = SplitTransport(tx, RawSocketTransport(args.rx_iface)) if args.rx_iface else tx
    res = reduce(transport, vectors, collective_id=args.collective_id, egress=(args.egress_first, args.egress_last),
                 shuffle=args.shuffle, window=args.window, retry_s=args.retry, chunk_elements=args.chunk_elements,
                 switch_mac=args.switch_mac, seed=args.seed, timeout=args.timeout)
    col = res["collector"]
    bad = res["mismatches"]
    print(f"minisharp reduce: {args.ranks} ranks x {args.elements} FP32, {col.n_chunks} chunks, "
          f"{res['seconds']:.2f} s, {res['retries']} chunk resends, {col.duplicates} duplicate results, "
          f"{len(bad)} mismatches vs exact reference")
    return 1 if bad else 0

if __name__ == "__main__":
    sys.exit(main())

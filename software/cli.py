"""innet: command-line access to an innet SoC over Etherbone.

    innet --host 192.168.1.50 --csr-csv csr.csv ident
    innet ... regs                   # every readable CSR with its value
    innet ... read ctrl_scratch      # a CSR by name, or an address (0x...) [count]
    innet ... write ctrl_scratch 0x1234
"""
import argparse
import sys

from soc.common import ETHERBONE_UDP_PORT, SOC_IP_ADDRESS
from software.client import InnetClient, TargetUnreachable


def _parse_int(text):
    return int(text, 0)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="innet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", default=SOC_IP_ADDRESS, help="SoC IP address")
    parser.add_argument("--port", type=int, default=ETHERBONE_UDP_PORT, help="Etherbone UDP port")
    parser.add_argument("--csr-csv", default=None, help="the SoC's csr.csv (needed for CSR names)")
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds before giving up")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("ident", help="read the SoC identifier")
    sub.add_parser("regs", help="list CSRs with their values")
    rd = sub.add_parser("read", help="read a CSR by name, or words at an address")
    rd.add_argument("target")
    rd.add_argument("count", nargs="?", type=_parse_int, default=1)
    wr = sub.add_parser("write", help="write a CSR by name, or words at an address")
    wr.add_argument("target")
    wr.add_argument("values", nargs="+", type=_parse_int)
    args = parser.parse_args(argv)

    bus = InnetClient(args.host, port=args.port, csr_csv=args.csr_csv, timeout=args.timeout)
    try:
        bus.open()
        if args.cmd == "ident":
            print(bus.ident())
        elif args.cmd == "regs":
            if args.csr_csv is None:
                parser.error("regs needs --csr-csv")
            for name, addr, value in bus.list_regs():
                print(f"0x{addr:08x} {name:40s} 0x{value:x}")
        elif args.cmd == "read":
            if args.target[0].isdigit():
                for i, w in enumerate(bus.read(_parse_int(args.target), args.count)):
                    print(f"0x{_parse_int(args.target) + 4 * i:08x} 0x{w:08x}")
            else:
                print(f"0x{bus.reg(args.target).read():x}")
        elif args.cmd == "write":
            if args.target[0].isdigit():
                bus.write(_parse_int(args.target), args.values)
            else:
                bus.reg(args.target).write(args.values[0])
    except TargetUnreachable as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
        return 2
    finally:
        bus.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

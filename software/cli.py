"""innet: command-line access to an innet SoC over Etherbone.

    innet --host 192.168.1.50 --csr-csv csr.csv ident
    innet ... regs                   # every readable CSR with its value
    innet ... read ctrl_scratch      # a CSR by name, or an address (0x...) [count]
    innet ... write ctrl_scratch 0x1234
"""
import argparse
import sys

from soc.common import ETHERBONE_UDP_PORT, SOC_IP_ADDRESS
from software.argtypes import host, int_in, positive_float, positive_int
from software.client import run_command

WORD = int_in(0, 2**32 - 1)


def target(text):
    """A CSR name, or a bus address (a number: decimal or 0x...)."""
    return WORD(text) if text[:1].isdigit() else text


def main(argv=None):
    parser = argparse.ArgumentParser(prog="innet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--host", type=host, default=SOC_IP_ADDRESS, help="SoC IP address (or host name)")
    parser.add_argument("--port", type=int_in(1, 65535), default=ETHERBONE_UDP_PORT, help="Etherbone UDP port")
    parser.add_argument("--csr-csv", default=None, help="the SoC's csr.csv (needed for CSR names)")
    parser.add_argument("--timeout", type=positive_float, default=2.0, help="seconds before giving up")
    sub = parser.add_subparsers(dest="cmd", required=True)
    sub.add_parser("ident", help="read the SoC identifier")
    sub.add_parser("regs", help="list CSRs with their values")
    rd = sub.add_parser("read", help="read a CSR by name, or words at an address")
    rd.add_argument("target", type=target)
    rd.add_argument("count", nargs="?", type=positive_int, default=1)
    wr = sub.add_parser("write", help="write a CSR by name, or words at an address")
    wr.add_argument("target", type=target)
    wr.add_argument("values", nargs="+", type=WORD)
    args = parser.parse_args(argv)
    if args.csr_csv is None and (args.cmd == "regs" or isinstance(getattr(args, "target", 0), str)):
        parser.error(f"{'regs' if args.cmd == 'regs' else 'a CSR name'} needs --csr-csv")

    def body(bus):
        if args.cmd == "ident":
            print(bus.ident())
        elif args.cmd == "regs":
            for name, addr, value in bus.list_regs():
                print(f"0x{addr:08x} {name:40s} 0x{value:x}")
        elif args.cmd == "read":
            if isinstance(args.target, int):
                for i, w in enumerate(bus.read(args.target, args.count)):
                    print(f"0x{args.target + 4 * i:08x} 0x{w:08x}")
            else:
                print(f"0x{bus.reg(args.target).read():x}")
        elif isinstance(args.target, int):
            bus.write(args.target, args.values)
        else:
            bus.reg(args.target).write(args.values[0])
    return run_command(args.host, args.port, args.csr_csv, args.timeout, body)


if __name__ == "__main__":
    sys.exit(main())

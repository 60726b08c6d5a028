"""RIFL host CLI.

  python -m software.rifl dissector -o build/rifl/rifl.lua      # Wireshark Lua dissector for RIFL captures
"""
import argparse
import sys

from software.rifl.dissector import write_dissector


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m software.rifl", description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dissector", help="write the Wireshark Lua dissector")
    d.add_argument("-o", "--output", default="rifl.lua")
    args = ap.parse_args(argv)
    try:
        print(write_dissector(args.output))
    except OSError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

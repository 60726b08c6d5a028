"""argparse value types shared by the command lines (sim, boards, software): each turns one option's text into
its value or raises argparse.ArgumentTypeError, so that argparse refuses a bad value (its usage and one
`error:` line, exit status 2) before anything runs.

    parser.add_argument("--ranks", type=int_in(1, 4))
    parser.add_argument("--cores", type=names(CORE_NAMES), default=[])
"""
import argparse
import ipaddress
import os
import re

from soc.common import ETHERBONE_UDP_PORT, SOC_IP_ADDRESS

HOSTNAME_LABEL = re.compile(r"(?!-)[A-Za-z0-9-]{1,63}(?<!-)$")


def integer(text):
    """An integer: decimal, or 0x/0o/0b."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return int(text, 0)                                      # 0x.., 0o.., 0b..
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def number(text):
    """A floating-point number."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def int_in(lo, hi=None):
    """An integer (decimal, or 0x/0o/0b) in lo..hi (hi None: no upper bound)."""
    def parse(text):
        v = integer(text)
        if v < lo or (hi is not None and v > hi):
            raise argparse.ArgumentTypeError(f"{v} is out of range: expected "
                                             f"{f'at least {lo}' if hi is None else f'{lo}..{hi}'}")
        return v
    return parse


def positive_int(text):
    """An integer >= 1."""
    return int_in(1)(text)


def positive_float(text):
    """A finite number > 0 (seconds, Hz)."""
    v = number(text)
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number")
    return v


def fraction(text):
    """A number strictly between 0 and 1 (a rate, a bit error rate)."""
    v = number(text)
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number between 0 and 1 (exclusive)")
    return v


def checked(convert, check):
    """`convert(text)`, then `check(value)`, whose ValueError becomes argparse's error (its message)."""
    def parse(text):
        v = convert(text)
        try:
            check(v)
        except ValueError as e:
            raise argparse.ArgumentTypeError(str(e)) from None
        return v
    return parse


def names(known, what="names", empty=True):
    """A comma-separated list of names among `known` (empty items ignored): the list, in the order given;
    empty=False: at least one name."""
    known = list(known)

    def parse(text):
        got = [n for n in text.split(",") if n]
        unknown = [n for n in got if n not in known]
        if unknown:
            raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown)}; known: {', '.join(known)}")
        if not got and not empty:
            raise argparse.ArgumentTypeError(f"give at least one of the {what} {', '.join(known)}")
        return got
    return parse


def host(text):
    """An IPv4 address (dotted quad) or a host name (RFC 1123 labels)."""
    if re.fullmatch(r"[0-9.]+", text):
        try:
            return str(ipaddress.IPv4Address(text))
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not an IPv4 address") from None
    if len(text) > 253 or not all(HOSTNAME_LABEL.match(label) for label in text.rstrip(".").split(".")):
        raise argparse.ArgumentTypeError(f"{text!r} is not an IPv4 address or a host name")
    return text


def mac(text):
    """A MAC address (aa:bb:cc:dd:ee:ff, or 12 hex digits): its 48-bit integer."""
    if not re.fullmatch(r"[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}|[0-9A-Fa-f]{12}", text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a MAC address (aa:bb:cc:dd:ee:ff)")
    return int(text.replace(":", ""), 16)


def add_target_arguments(parser, prefix, block):
    """A target SoC's options of a command-line tool: --host, --port, --csr-csv (defaults $INNET_SOC_IP and
    $INNET_CSR_CSV, as inside sim.runner) and --prefix (the `block`'s CSR name in the SoC, default `prefix`)."""
    parser.add_argument("--host", type=host, default=os.environ.get("INNET_SOC_IP", SOC_IP_ADDRESS),
                        help="SoC IP address (or host name)")
    parser.add_argument("--port", type=int_in(1, 65535), default=ETHERBONE_UDP_PORT, help="Etherbone UDP port")
    parser.add_argument("--csr-csv", default=os.environ.get("INNET_CSR_CSV"), help="the SoC's csr.csv")
    parser.add_argument("--prefix", default=prefix, help=f"the {block} block's name in the SoC")

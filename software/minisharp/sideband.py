"""The Aggregation Manager over the CSR bus (sideband setup): install and remove contexts of a MiniSharp switch
from the host that owns its bus (Etherbone, or PCIe BARs on a card), instead of from a host on a data port.

    sb = Sideband(bus)                     # bus: software.client.InnetClient (or any bus with `regs`)
    sb.setup(collective_id=5, element_count=1000, ranks=4, egress=(0, 1))
    sb.teardown(5)

    python -m software.minisharp.sideband --csr-csv csr.csv setup 5 1000 4 --egress 0,1
    python -m software.minisharp.sideband --csr-csv csr.csv teardown 5

Every request goes into the switch's own validation, as a COL_SETUP / COL_TEARDOWN frame sent through the SoC
block's frame injector into input port `port` (default: the lowest port of `admin_ports`), so it meets the
same refusal rules as an in-band setup, and the same counters count it. Unlike an in-band setup the host
learns the verdict: the call reads the block's counters until one of them moves and raises `SetupRefused`
with the drop reason (bad_setup, ctx_full, bad_reserved, not_admin, unknown_coll, ...). The injector exists
in the 8-bit builds (the simulated SoC) and in 16- and 32-bit builds made with `with_inject=True`; a build
without it is refused in one line (docs/minisharp.md, "Sideband setup").
"""
import argparse
import sys
import time

from cores.minisharp import common as ms
from software.argtypes import add_target_arguments, int_in, positive_float, positive_int
from software.client import run_command
from software.minisharp import packets as P
from software.minisharp.demo import inject
from soc.common import CORE_NAMES

SETUP_VERDICT_TIMEOUT_S = 10.0


class SetupRefused(RuntimeError):
    """The switch dropped a sideband setup or teardown; `.reason` is its drop counter's name."""
    def __init__(self, what, reason):
        self.reason = reason
        super().__init__(f"{what} refused by the switch: {reason}")


class Sideband:
    """bus: a client with `regs` (CSR names of the SoC); prefix: the MiniSharp block's CSR prefix; port: the
    input port the requests enter (None: the lowest admin port); src_mac: the AM's MAC in the frames."""
    def __init__(self, bus, prefix=CORE_NAMES["minisharp"], port=None, src_mac=ms.HOST_MAC,
                 timeout_s=SETUP_VERDICT_TIMEOUT_S):
        self.bus, self.prefix, self.src_mac, self.timeout_s = bus, prefix, src_mac, timeout_s
        if not hasattr(bus.regs, f"{prefix}_inject_ctrl"):
            raise ValueError(f"the SoC has no MiniSharp frame injector ({prefix}_inject_*): sideband setup needs "
                             "a build with it (8-bit, or MiniSharpSoCBlock(with_inject=True))")
        num_ports = ms.CONFIG_CSR.get(self._reg("config").read(), "num_ports")
        admin = self._reg("admin_ports").read()
        if port is None:
            port = next((i for i in range(num_ports) if admin >> i & 1), 0)
        if not 0 <= port < num_ports:
            raise ValueError(f"port {port}: the switch has ports 0..{num_ports - 1}")
        self.port, self.num_ports = port, num_ports
        self.switch_mac = self._reg("mac").read()
        self.verdicts = ["setups", "teardowns"] + [f"drop_{name}" for name, _ in ms.DROP_REASONS]

    def _reg(self, name):
        return getattr(self.bus.regs, f"{self.prefix}_{name}")

    def _counters(self):
        return {n: self._reg(n).read() for n in self.verdicts}

    def send(self, frame, what="request"):
        """Injects one frame into the switch and returns the counter it moved (setups or teardowns); raises
        SetupRefused on a drop, TimeoutError if no counter moved."""
        before = self._counters()
        deadline = time.monotonic() + self.timeout_s
        try:
            inject(self.bus, self.prefix, self.port, frame, timeout=self.timeout_s)
        except RuntimeError as e:
            raise SetupRefused(what, str(e)) from None
        while time.monotonic() < deadline:
            moved = [n for n, v in self._counters().items() if v != before[n]]
            if moved:
                if moved[0].startswith("drop_"):
                    raise SetupRefused(what, moved[0][len("drop_"):])
                return moved[0]
        raise TimeoutError(f"{what}: no verdict from the switch within {self.timeout_s} s")

    def setup(self, collective_id, element_count, ranks, egress=(0, 0), record=None, minor=None):
        """Installs (or replaces) the context of `collective_id`: a v0.1 record from the arguments, or the
        given `record` bytes (e.g. packets.setup_record_v02, with minor=ms.VERSION_MINOR_V02)."""
        try:
            record = record if record is not None else P.setup_record(element_count, ranks, *egress)
            kw = {} if minor is None else {"minor": minor}
            frame = P.setup_frame(self.switch_mac, self.src_mac, collective_id, record, **kw)
        except (ValueError, OverflowError, TypeError) as e:
            raise ValueError(f"setup of collective {collective_id}: {e}") from None
        return self.send(frame, f"setup of collective {collective_id}")

    def teardown(self, collective_id):
        """Removes the context of `collective_id` and frees its slots."""
        try:
            frame = P.teardown_frame(self.switch_mac, self.src_mac, collective_id)
        except (ValueError, OverflowError, TypeError) as e:
            raise ValueError(f"teardown of collective {collective_id}: {e}") from None
        return self.send(frame, f"teardown of collective {collective_id}")


def egress_range(text):
    """argparse type: FIRST,LAST output ports."""
    try:
        first, last = (int(v, 0) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not FIRST,LAST: {text!r}") from None
    if not 0 <= first <= last <= 255:
        raise argparse.ArgumentTypeError(f"egress {text}: ports 0..255, FIRST <= LAST")
    return first, last


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m software.minisharp.sideband", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    add_target_arguments(parser, CORE_NAMES["minisharp"], "MiniSharp")
    parser.add_argument("--input-port", type=int_in(0, 255), default=None,
                        help="switch port the requests enter (default: the lowest admin port)")
    parser.add_argument("--timeout", type=positive_float, default=SETUP_VERDICT_TIMEOUT_S,
                        help="seconds to wait for the switch's verdict")
    sub = parser.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("setup", help="install or replace a context")
    s.add_argument("collective_id", type=int_in(0, 2**32 - 1))
    s.add_argument("elements", type=positive_int, help="FP32 elements of each rank's vector")
    s.add_argument("ranks", type=int_in(1, 2**16 - 1), help="expected local contributors")
    s.add_argument("--egress", type=egress_range, default=(0, 0), help="FIRST,LAST output ports of the results")
    t = sub.add_parser("teardown", help="remove a context")
    t.add_argument("collective_id", type=int_in(0, 2**32 - 1))
    args = parser.parse_args(argv)
    if args.csr_csv is None:
        parser.error("the SoC's csr.csv is needed: --csr-csv (or $INNET_CSR_CSV)")

    def body(bus):
        sb = Sideband(bus, args.prefix, port=args.input_port, timeout_s=args.timeout)
        if args.cmd == "setup":
            sb.setup(args.collective_id, args.elements, args.ranks, args.egress)
        else:
            sb.teardown(args.collective_id)
        print(f"{args.cmd} of collective {args.collective_id}: done (through port {sb.port})")

    return run_command(args.host, args.port, args.csr_csv, 10.0, body,
                       errors=(ValueError, SetupRefused, TimeoutError))


if __name__ == "__main__":
    sys.exit(main())

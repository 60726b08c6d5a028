"""Etherbone client for an innet SoC (simulated or on a board), on LiteX's CommUDP.

    bus = InnetClient("192.168.1.50", csr_csv="build/.../csr.csv").open()
    bus.ident()                      # identifier string
    bus.regs.ctrl_scratch.write(1)   # any CSR by name (LiteX CSRBuilder)
    bus.read(addr, n), bus.write(addr, [words])   # burst memory access

An unreachable target raises TargetUnreachable after `timeout` seconds instead of hanging. `run_command` is the
body of a command-line tool on a target: one `error:` line instead of a traceback.
"""
import socket
import sys
import time

from litex.tools.remote.comm_udp import CommUDP
from litex.tools.remote.etherbone import EtherbonePacket, EtherboneReads, EtherboneRecord

from soc.common import ETHERBONE_UDP_PORT, SOC_IP_ADDRESS

MAX_BURST_WORDS = 16      # words per Etherbone record: the SoC's Etherbone buffer holds 16 (add_etherbone buffer_depth)
IDENT_MAX_BYTES = 256


class TargetUnreachable(RuntimeError):
    """The target did not answer over Etherbone within the timeout."""


class InnetClient(CommUDP):
    """Etherbone/UDP client. host: SoC IP; csr_csv: the SoC's csr.csv (needed for names);
    timeout: seconds before TargetUnreachable; bind_address: local address (tests bind a loopback one)."""
    def __init__(self, host=SOC_IP_ADDRESS, port=ETHERBONE_UDP_PORT, csr_csv=None, timeout=2.0, retries=4,
                 bind_address=""):
        if timeout <= 0 or retries < 1:
            raise ValueError("timeout must be > 0 and retries >= 1")
        CommUDP.__init__(self, server=host, port=port, csr_csv=csr_csv, timeout=timeout / retries)
        self.total_timeout = timeout
        self.retries = retries
        self.bind_address = bind_address
        # Read back with every write burst: the first identifier word (read-only, no side effects).
        self.ack_address = self.bases.identifier_mem if csr_csv is not None else 0

    # Connection -----------------------------------------------------------------------------------
    def open(self, probe=True):
        if hasattr(self, "socket"):
            return self
        self.socket = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            self.socket.bind((self.bind_address, self.port))
        except OSError as e:
            self.close()
            raise TargetUnreachable(f"cannot bind UDP port {self.port} on {self.bind_address or '*'}: {e}") from e
        self.socket.settimeout(self.timeout)
        if probe:
            self.read(0)  # any address answers; proves the target is there
        return self

    def __enter__(self):
        return self.open()

    def __exit__(self, *exc):
        self.close()

    # Access ---------------------------------------------------------------------------------------
    def read(self, addr, length=None, burst="incr"):
        n = 1 if length is None else length
        words = []
        for base in range(0, n, MAX_BURST_WORDS):
            words += self._read_burst(addr + 4 * base, min(MAX_BURST_WORDS, n - base))
        return words[0] if length is None else words

    def _read_burst(self, addr, n):
        """One Etherbone read record; resent every `timeout/retries` s until `timeout` has passed."""
        deadline = time.monotonic() + self.total_timeout
        while time.monotonic() < deadline:
            datas = self._transact(reads=[addr + 4 * j for j in range(n)])
            if datas is not None:
                return datas
        raise TargetUnreachable(f"no Etherbone answer from {self.server}:{self.port} within "
                                f"{self.total_timeout:.1f} s (read of 0x{addr:08x})")

    def write(self, addr, datas):
        """Acknowledged writes: each write burst is followed by a read of `ack_address`, and the next burst
        leaves only once that read is answered. The SoC's Etherbone serves requests in order, so the answer
        proves the writes were done, and with one request in flight its receive buffers never overflow
        (fire-and-forget writes can be lost silently when the target is slow, as in simulation). The write
        itself is never resent (it may not be idempotent); only the acknowledging read is."""
        datas = datas if isinstance(datas, list) else [datas]
        for base in range(0, len(datas), MAX_BURST_WORDS):
            CommUDP.write(self, addr + 4 * base, datas[base:base + MAX_BURST_WORDS])
            try:
                self._read_burst(self.ack_address, 1)
            except TargetUnreachable:
                raise TargetUnreachable(f"no Etherbone acknowledgement from {self.server}:{self.port} within "
                                        f"{self.total_timeout:.1f} s (write of 0x{addr + 4 * base:08x})") from None

    def _transact(self, reads):
        """Send one read record and wait one retry period for its answer."""
        self.read_counter = (self.read_counter + 1) & 0xffffffff
        record = EtherboneRecord(addr_size=self.addr_width // 8)
        record.reads = EtherboneReads(addr_size=self.addr_width // 8, addrs=list(reads))
        record.rcount = len(reads)
        record.reads.base_ret_addr = self.read_counter
        packet = EtherbonePacket(addr_width=self.addr_width)
        packet.records = [record]
        packet.encode()
        self.socket.sendto(packet.bytes, (self.server, self.port))
        return self._await(self.read_counter)

    def _await(self, tag):
        """The answer to request `tag` within one retry period, or None; other packets are ignored (late
        answers to earlier tries, stray requests)."""
        try:
            while True:
                data, _ = self.socket.recvfrom(8192)
                answer = EtherbonePacket(self.addr_width, data)
                answer.decode()
                reply = answer.records[-1] if answer.records else None
                if reply is not None and reply.writes is not None and reply.writes.base_addr == tag:
                    return reply.writes.get_datas()
        except socket.timeout:
            return None

    # Helpers --------------------------------------------------------------------------------------
    def ident(self):
        """The SoC identifier string (LiteX identifier_mem: one character per 32-bit word)."""
        base = self.bases.identifier_mem if hasattr(self, "bases") else 0x1000
        chars = []
        for offset in range(0, IDENT_MAX_BYTES, MAX_BURST_WORDS):
            for word in self.read(base + 4 * offset, MAX_BURST_WORDS):
                if word & 0xff == 0:
                    return "".join(chars)
                chars.append(chr(word & 0xff))
        return "".join(chars)

    def reg(self, name):
        try:
            return getattr(self.regs, name)
        except AttributeError:
            raise KeyError(f"no CSR named {name!r} (see `regs`)") from None

    def list_regs(self):
        """(name, address, value) for every readable CSR."""
        return [(name, r.addr, r.read()) for name, r in self.regs.d.items() if r.mode in ("rw", "ro")]

    def uptime_cycles(self):
        """Free-running SoC cycle counter (timer0 uptime)."""
        self.regs.timer0_uptime_latch.write(1)
        return self.regs.timer0_uptime_cycles.read()


def run_command(host, port, csr_csv, timeout, body, errors=()):
    """Open an InnetClient, run `body(bus)` and close it; returns the exit code: body's (None: 0), or 2 after one
    `error:` line on stderr for a host that does not resolve, an unreachable target, an OS error (a missing
    csr.csv), an unknown CSR name (KeyError) or one of `errors`."""
    bus = None
    try:
        bus = InnetClient(host, port=port, csr_csv=csr_csv, timeout=timeout).open()
        return body(bus) or 0
    except socket.gaierror as e:
        print(f"error: cannot resolve the host {host}: {e.strerror}", file=sys.stderr)
    except KeyError as e:
        print(f"error: {e.args[0]}", file=sys.stderr)
    except (TargetUnreachable, OSError, *errors) as e:
        print(f"error: {e}", file=sys.stderr)
    finally:
        if bus is not None:
            bus.close()
    return 2

"""Check that a MiniSharp board's management (Etherbone inside the MiniSharp pipeline) answers only on its
management port, with reductions running on both data ports at once.

    python -m software.minisharp.mgmt_check --csr-csv build/.../csr.csv --admin ms0 --probe ms1 [--elements N]

From the admin interface (the host at the SoC's management subnet) it reads and writes CSRs over Etherbone.
From the probe interface (a host on the other data port) it sends raw Etherbone requests to the board's MAC
and IP, with the admin's IP as source (so the board would know where to answer): a write of ctrl_scratch
and a read. The same raw read sent from the admin interface is answered (the probe's method works); from
the probe interface nothing may answer, the scratch must keep its value, and drop_mgmt_refused must count
exactly the probe's frames. Prints one `RESULT {json}` line; exits 1 if a check fails. Needs CAP_NET_RAW.
"""
import argparse
import json
import random
import socket
import sys
import threading
import time

from litex.tools.remote.etherbone import EtherbonePacket, EtherboneReads, EtherboneRecord, EtherboneWrites
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Ether

from cores.minisharp import common as ms
from software.argtypes import int_in, positive_float
from software.client import InnetClient, TargetUnreachable
from software.minisharp.host import RawSocketTransport, reduce
from soc.common import ETHERBONE_UDP_PORT, SOC_IP_ADDRESS, SOC_MAC_ADDRESS

ETH_P_ALL = 0x0003
PREFIX = "minisharp"


def etherbone_request(reads=(), writes=None, tag=0x5A5A):
    """One Etherbone packet: `reads` (addresses, answered with `tag` as base return address) or `writes`
    (base address, [words])."""
    record = EtherboneRecord(addr_size=4)
    if writes is not None:
        base, datas = writes
        record.writes = EtherboneWrites(base_addr=base, datas=list(datas), addr_size=4)
        record.wcount = len(datas)
    if reads:
        record.reads = EtherboneReads(addr_size=4, addrs=list(reads))
        record.reads.base_ret_addr = tag
        record.rcount = len(reads)
    packet = EtherbonePacket(addr_width=32)
    packet.records = [record]
    packet.encode()
    return packet.bytes


class Sniffer:
    """Every frame received on `iface` (not sent by this host) while running."""
    def __init__(self, iface):
        self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
        self.sock.bind((iface, 0))
        self.sock.settimeout(0.1)
        self.mac = self.sock.getsockname()[4][:6]
        self.frames, self._stop = [], threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] != 4:                # PACKET_OUTGOING
                self.frames.append(data)

    def send(self, frame):
        self.sock.send(frame)

    def etherbone_answers(self):
        """Etherbone answers from the board among the frames seen: (ip dst, return tag) each."""
        out = []
        for f in list(self.frames):
            p = Ether(f)
            if IP in p and UDP in p and p[IP].src == SOC_IP_ADDRESS and p[UDP].sport == ETHERBONE_UDP_PORT:
                answer = EtherbonePacket(32, bytes(p[UDP].payload))
                answer.decode()
                tags = [r.writes.base_addr for r in answer.records if r.writes is not None]
                out.append((p[IP].dst, tags))
        return out

    def close(self):
        self._stop.set()
        self._thread.join()
        self.sock.close()


def raw_request(src_mac, src_ip, payload):
    return bytes(Ether(dst=SOC_MAC_ADDRESS.to_bytes(6, "big"), src=src_mac) /
                 IP(src=src_ip, dst=SOC_IP_ADDRESS) / UDP(sport=ETHERBONE_UDP_PORT, dport=ETHERBONE_UDP_PORT) /
                 payload)


def local_address(remote):
    """The address this host sends from to `remote` (the kernel's route choice)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect((remote, ETHERBONE_UDP_PORT))
        return s.getsockname()[0]


class BothPorts:
    """A MiniSharp transport that sends its frames alternately on two ports and receives on the first."""
    def __init__(self, a, b):
        self.ports, self.mac, self.n = (a, b), a.mac, 0

    def send(self, frame):
        self.ports[self.n % 2].send(frame)
        self.n += 1

    def recv(self, timeout):
        return self.ports[0].recv(timeout)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--csr-csv", required=True)
    parser.add_argument("--admin", required=True, help="interface on the management port")
    parser.add_argument("--probe", required=True, help="interface on another data port")
    parser.add_argument("--elements", type=int_in(1, (1 << 16) * ms.MS_CHUNK_ELEMENTS), default=600,
                        help="FP32 elements of the concurrent reduction")
    parser.add_argument("--wait", type=positive_float, default=3.0,
                        help="seconds to wait for answers that must not come")
    args = parser.parse_args(argv)
    try:
        return check(args)
    except (TargetUnreachable, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def check(args):
    """The checks (main's parsed `args`): prints the RESULT line; 0 when all pass, else 1."""
    bus = InnetClient(SOC_IP_ADDRESS, csr_csv=args.csr_csv, timeout=10.0).open()
    reg = lambda name: getattr(bus.regs, f"{PREFIX}_{name}")
    rng = random.Random(7)
    vectors = [[rng.getrandbits(32) & 0xBFFFFFFF for _ in range(args.elements)] for _ in range(2)]
    transports = RawSocketTransport(args.admin), RawSocketTransport(args.probe)
    outcome = {}
    # Results to both ports' hosts (egress 0..1); the rank frames alternate between the two ports.
    reducer = threading.Thread(target=lambda: outcome.update(reduce(
        BothPorts(*transports), vectors, collective_id=0x77, egress=(0, 1), timeout=300.0)))
    reducer.start()

    admin, probe = Sniffer(args.admin), Sniffer(args.probe)
    admin_ip = local_address(SOC_IP_ADDRESS)
    scratch = bus.regs.ctrl_scratch
    token, forged = 0x600DF00D, 0xBAD0BAD0
    scratch.write(token)
    before = {n: reg(n).read() for n in ("drop_mgmt_refused", "mgmt_rx_frames", "port1_rx_drops")}
    scratch_addr = scratch.addr
    # Positive control: the raw read from the admin port is answered.
    admin.send(raw_request(admin.mac, admin_ip, etherbone_request(reads=[scratch_addr], tag=0x1111)))
    # The probe: a forged write of the scratch and a read, with the admin's IP as their source.
    probe.send(raw_request(probe.mac, admin_ip, etherbone_request(writes=(scratch_addr, [forged]))))
    probe.send(raw_request(probe.mac, admin_ip, etherbone_request(reads=[scratch_addr], tag=0x2222)))
    time.sleep(args.wait)
    admin.close(), probe.close()
    after = {n: reg(n).read() for n in before}
    reducer.join()
    checks = {
        "admin_raw_read_answered": any(0x1111 in tags for _, tags in admin.etherbone_answers()),
        "probe_not_answered": not any(0x2222 in tags for _, tags in admin.etherbone_answers() + probe.etherbone_answers()),
        "scratch_kept": scratch.read() == token,
        "refused_counted": after["drop_mgmt_refused"] - before["drop_mgmt_refused"] == 2,
        "probe_port_drops": after["port1_rx_drops"] - before["port1_rx_drops"] == 2,
        "reduction_exact": bool(outcome) and not outcome["mismatches"] and outcome["collector"].complete(),
    }
    result = dict(checks, ok=all(checks.values()), refused=after["drop_mgmt_refused"] - before["drop_mgmt_refused"],
                  mgmt_rx_frames=after["mgmt_rx_frames"] - before["mgmt_rx_frames"], elements=args.elements,
                  reduction_s=round(outcome.get("seconds", 0.0), 2))
    print("RESULT " + json.dumps(result), flush=True)
    bus.close()
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())

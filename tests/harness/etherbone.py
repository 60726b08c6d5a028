"""A fake Etherbone target on a loopback address: LiteX's own packet classes decode the client's requests
and encode the answers; memory is a dict of 32-bit words."""
import socket
import threading

from litex.tools.remote.etherbone import EtherbonePacket, EtherboneRecord, EtherboneWrites, unpack_uint32_from

from soc.common import ETHERBONE_UDP_PORT


class FakeEtherboneTarget:
    def __init__(self, address="127.0.0.2", port=ETHERBONE_UDP_PORT, client_address="127.0.0.1", memory=None, answer=True):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # beside a client bound to *:port
        self.sock.bind((address, port))
        self.sock.settimeout(0.1)
        self.address, self.port, self.client_address = address, port, client_address
        self.memory = dict(memory or {})
        self.answer = answer
        self.requests = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self.sock.close()

    def on_write(self, addr, value):
        """Called after each word written (subclasses model registers with side effects)."""

    def _serve(self):
        while not self._stop.is_set():
            try:
                data, _ = self.sock.recvfrom(8192)
            except socket.timeout:
                continue
            packet = EtherbonePacket(32, data)
            packet.decode()
            self.requests.append(packet)
            for record in packet.records:
                if record.wcount:
                    for i, value in enumerate(record.writes.get_datas()):
                        self.memory[record.writes.base_addr + 4 * i] = value
                        self.on_write(record.writes.base_addr + 4 * i, value)
                if record.rcount and self.answer:
                    reply = EtherboneRecord(4)
                    # EtherboneReads.decode (LiteX 2024.12) drops the return address: take it from the bytes.
                    ret_addr = unpack_uint32_from(bytes(record.reads.bytes[:4]))[0]
                    reply.writes = EtherboneWrites(addr_size=4, base_addr=ret_addr,
                                                   datas=[self.memory.get(a, 0) for a in record.reads.get_addrs()])
                    reply.wcount = len(reply.writes)
                    out = EtherbonePacket(32)
                    out.records = [reply]
                    out.encode()
                    self.sock.sendto(out.bytes, (self.client_address, self.port))

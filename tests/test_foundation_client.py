"""Host client: Etherbone requests and answers checked with LiteX's own packet classes, on loopback."""
import os
import random
import struct
import subprocess
import sys
import time

import pytest

from software.client import InnetClient, MAX_BURST_WORDS, TargetUnreachable
from tests.harness.etherbone import FakeEtherboneTarget

# The fake target and the client each bind this port (Etherbone answers to its own port): each xdist worker
# has its own pair (PORT, PORT + 1), so the tests of two workers never share one.
PORT = 12340 + 2 * int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:])


def client(timeout=1.0, **kw):
    return InnetClient("127.0.0.2", port=PORT, timeout=timeout, bind_address="127.0.0.1", **kw)


def test_request_wire_layout():
    """The bytes the client sends are an Etherbone packet: magic 0x4e6f, version 1, one read record."""
    with FakeEtherboneTarget(port=PORT, memory={0x40: 0xdeadbeef}) as fake:
        with client() as bus:
            assert bus.read(0x40) == 0xdeadbeef
        raw = fake.requests[-1]
    # Independent decode of the header from the Etherbone spec (big-endian fields).
    magic, version_flags, sizes = struct.unpack(">HBB", bytes(raw.bytes[:4]))
    assert magic == 0x4e6f
    assert version_flags >> 4 == 1
    assert sizes >> 4 == 4   # 32-bit addresses
    record = raw.records[0]
    assert record.rcount == 1 and record.wcount == 0
    assert record.reads.get_addrs() == [0x40]


def test_random_reads_writes_and_bursts():
    rng = random.Random(7)
    with FakeEtherboneTarget(port=PORT) as fake:
        with client() as bus:
            model = {}
            for _ in range(200):
                addr = 4 * rng.randrange(0, 256)
                if rng.random() < 0.5:
                    n = rng.randrange(1, 3 * MAX_BURST_WORDS)
                    data = [rng.getrandbits(32) for _ in range(n)]
                    bus.write(addr, data)
                    for i, v in enumerate(data):
                        model[addr + 4 * i] = v
                else:
                    n = rng.randrange(1, 3 * MAX_BURST_WORDS)
                    assert bus.read(addr, n) == [model.get(addr + 4 * i, 0) for i in range(n)]
        # Bursts are split into records the SoC's Etherbone buffer can hold, and every write burst is
        # followed by the read that acknowledges it.
        records = [r for p in fake.requests for r in p.records]
        assert all(r.rcount <= MAX_BURST_WORDS and r.wcount <= MAX_BURST_WORDS for r in records)
        assert all(nxt.rcount == 1 and not nxt.wcount for r, nxt in zip(records, records[1:]) if r.wcount)


def test_ident_stops_at_nul():
    text = "innet test SoC"
    memory = {0x1000 + 4 * i: ord(c) for i, c in enumerate(text)}
    with FakeEtherboneTarget(port=PORT, memory=memory):
        with client() as bus:
            assert bus.ident() == text


def test_unacknowledged_write_raises_instead_of_resending():
    with FakeEtherboneTarget(port=PORT, answer=False) as fake:
        bus = client(timeout=1.0)
        bus.open(probe=False)
        with pytest.raises(TargetUnreachable, match="acknowledgement"):
            bus.write(0x10, [1, 2, 3])
        bus.close()
        time.sleep(0.2)
        assert sum(1 for p in fake.requests for r in p.records if r.wcount) == 1   # never resent


def test_unreachable_target_fails_within_timeout():
    with FakeEtherboneTarget(port=PORT, answer=False):
        t0 = time.monotonic()
        with pytest.raises(TargetUnreachable, match="no Etherbone answer"):
            client(timeout=1.0).open()
        assert time.monotonic() - t0 < 3.0


def test_cli_unreachable_exit_code_and_message():
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "software.cli", "--host", "127.0.0.3", "--port", str(PORT + 1),
                        "--timeout", "1", "ident"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2
    assert "no Etherbone answer" in r.stderr
    assert time.monotonic() - t0 < 15


def test_bad_arguments_refused():
    with pytest.raises(ValueError):
        InnetClient(timeout=0)
    with FakeEtherboneTarget(port=PORT, memory={}):
        with client() as bus:
            with pytest.raises(KeyError, match="no CSR named"):
                bus.reg("does_not_exist")

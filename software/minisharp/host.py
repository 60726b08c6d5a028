"""Host side of MiniSharp: Aggregation Manager, rank senders, result collector and a raw-socket transport.

All frames come from software.minisharp.packets (itself built on cores.minisharp.common), and results are
verified against the Fraction reference model.
"""
import random
import select
import socket
import time

from cores.minisharp import common as ms
from software.minisharp import packets as P
from software.minisharp.reference import reduce_vectors

PACKET_OUTGOING = 4


class RawSocketTransport:
    """AF_PACKET socket on one interface, receiving only MiniSharp frames (needs CAP_NET_RAW)."""
    def __init__(self, iface):
        self.iface = iface
        try:
            self.sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ms.ETHERTYPE))
        except OSError as e:
            raise OSError(e.errno, f"raw socket for {iface}: {e.strerror} (needs root or CAP_NET_RAW)") from None
        try:
            self.sock.bind((iface, ms.ETHERTYPE))
        except OSError as e:
            self.sock.close()
            raise OSError(e.errno, f"interface {iface!r}: {e.strerror}") from None
        self.mac = self.sock.getsockname()[4][:6]

    def send(self, frame):
        self.sock.send(frame)

    def recv(self, timeout):
        """One received (not looped-back) frame, or None after `timeout` seconds."""
        end = time.monotonic() + timeout
        while True:
            left = end - time.monotonic()
            if left <= 0 or not select.select([self.sock], [], [], left)[0]:
                return None
            data, addr = self.sock.recvfrom(65535)
            if addr[2] != PACKET_OUTGOING:
                return data

    def close(self):
        self.sock.close()


class SplitTransport:
    """Send through one transport, receive through another (results leave on a different port)."""
    def __init__(self, tx, rx):
        self.tx, self.rx, self.mac = tx, rx, tx.mac

    def send(self, frame):
        self.tx.send(frame)

    def recv(self, timeout):
        return self.rx.recv(timeout)


class AggregationManager:
    """Builds the COL_SETUP frame that installs a collective context on the switch."""
    def __init__(self, src_mac, switch_mac=ms.BROADCAST_MAC):
        self.src_mac, self.switch_mac = src_mac, switch_mac

    def setup(self, collective_id, element_count, ranks, egress_first=0, egress_last=0):
        return P.setup_frame(self.switch_mac, self.src_mac, collective_id,
                             P.setup_record(element_count, ranks, egress_first, egress_last))


class RankSender:
    """One contributor: its vector as COL_DATA frames, one per chunk."""
    def __init__(self, rank, collective_id, vector, src_mac, switch_mac=ms.BROADCAST_MAC,
                 chunk_elements=ms.MS_CHUNK_ELEMENTS):
        self.rank, self.vector = rank, vector
        self.frames = dict(P.chunk_frames(switch_mac, src_mac, collective_id, rank, vector, chunk_elements))


class ResultCollector:
    """Reassembles COL_RES frames of one collective and compares them with the exact reference."""
    def __init__(self, collective_id, element_count, chunk_elements=ms.MS_CHUNK_ELEMENTS):
        self.collective_id, self.element_count, self.chunk_elements = collective_id, element_count, chunk_elements
        self.n_chunks = ms.num_chunks(element_count, chunk_elements)
        self.chunks = {}
        self.duplicates = 0

    def add(self, frame):
        """Take one received frame; True if it was a new result chunk of this collective."""
        p = P.parse(frame)
        if p.get("opcode") != ms.MS_OP_COL_RES or p.get("collective_id") != self.collective_id:
            return False
        c = p["chunk_index"]
        if c >= self.n_chunks:
            return False
        if c in self.chunks:
            self.duplicates += 1
            return False
        self.chunks[c] = P.parse(frame, self.element_count, self.chunk_elements)["values"]
        return True

    def complete(self):
        return len(self.chunks) == self.n_chunks

    def vector(self):
        return [v for c in range(self.n_chunks) for v in self.chunks[c]]

    def mismatches(self, expected):
        return [i for i, (a, b) in enumerate(zip(self.vector(), expected)) if a != b]


def reduce(transport, vectors, collective_id=1, egress=(0, 0), shuffle=True, window=2, retry_s=1.0,
           max_retries=20, chunk_elements=ms.MS_CHUNK_ELEMENTS, src_mac=None, switch_mac=ms.BROADCAST_MAC,
           seed=1, timeout=600.0):
    """Run one reduction of `vectors` (lists of FP32 bit patterns, one per rank) through the switch.

    Sends the setup, then the chunks of every rank, at most `window` chunks ahead of the results
    (window <= the switch's chunk slots), each chunk's frames in shuffled rank order if `shuffle`, and
    resends a chunk that has no result after `retry_s` (duplicates are dropped by the switch). With
    `shuffle` the chunks go in random order, but never DONE_WINDOW or more chunks past the lowest chunk
    without a result: the switch drops those as `ahead` (its completion window), and a host waiting for them
    with every slot of its window taken would wait for ever.
    Returns a dict: collector, expected, mismatches, retries, seconds."""
    rng = random.Random(seed)
    n = len(vectors[0])
    src_mac = src_mac or getattr(transport, "mac", ms.HOST_MAC)
    am = AggregationManager(src_mac, switch_mac)
    senders = [RankSender(k, collective_id, v, src_mac, switch_mac, chunk_elements) for k, v in enumerate(vectors)]
    col = ResultCollector(collective_id, n, chunk_elements)
    order = list(range(col.n_chunks))
    if shuffle:
        rng.shuffle(order)
    t0 = time.monotonic()
    transport.send(am.setup(collective_id, n, len(vectors), *egress))
    time.sleep(0.01)
    sent_at, tries, retries = {}, {}, 0

    def send_chunk(c):
        frames = [s.frames[c] for s in senders]
        if shuffle:
            rng.shuffle(frames)
        for f in frames:
            transport.send(f)
        sent_at[c] = time.monotonic()
        tries[c] = tries.get(c, 0) + 1

    while not col.complete():
        if time.monotonic() - t0 > timeout:
            raise TimeoutError(f"minisharp: {len(col.chunks)}/{col.n_chunks} chunks after {timeout} s")
        outstanding = [c for c in sent_at if c not in col.chunks]
        lowest = next(c for c in range(col.n_chunks) if c not in col.chunks)
        while len(outstanding) < window:
            c = next((c for c in order if c not in sent_at and c < lowest + ms.DONE_WINDOW), None)
            if c is None:
                break
            send_chunk(c)
            outstanding.append(c)
        frame = transport.recv(0.05)
        if frame is not None:
            col.add(frame)
        now = time.monotonic()
        for c in outstanding:
            if c not in col.chunks and now - sent_at[c] > retry_s:
                if tries[c] > max_retries:
                    raise RuntimeError(f"minisharp: chunk {c} has no result after {max_retries} retries")
                send_chunk(c)
                retries += 1
    expected = reduce_vectors(vectors)
    return {"collector": col, "expected": expected, "mismatches": col.mismatches(expected), "retries": retries,
            "seconds": time.monotonic() - t0}

"""MiniSharp over real Ethernet ports (the simulated SoC's TAPs ms0/ms1, or a board's NICs): a shuffled
4-rank reduction checked bit for bit against the exact reference, then duplicates and invalid frames that
must be dropped and counted while a second collective still completes exactly.

Needs raw sockets (root) and, for the counters, the SoC's CSRs over Etherbone (`bus`)."""
import random
import socket

from cores.minisharp import common as ms
from software.minisharp import packets as P
from software.minisharp.demo import random_vector
from software.minisharp.host import RawSocketTransport, SplitTransport, reduce
from software.minisharp.reference import reduce_vectors
from soc.common import CORE_NAMES

def _counters(bus, prefix):
    return {name[len(prefix) + 1:]: reg.read() for name, reg in bus.regs.d.items()
            if name.startswith(prefix + "_drop_") or name in (f"{prefix}_chunks", f"{prefix}_setups")}


def _await_result(transport, collective_id, chunk, element_count, timeout=20.0):
    while True:
        frame = transport.recv(timeout)
        if frame is None:
            raise RuntimeError(f"no COL_RES for collective {collective_id:#x} chunk {chunk}")
        parsed = P.parse(frame, element_count=element_count)
        if parsed and parsed.get("opcode") == ms.MS_OP_COL_RES and parsed.get("collective_id") == collective_id \
                and parsed.get("chunk_index") == chunk:
            return parsed


def tap_demo(bus, prefix=CORE_NAMES["minisharp"], iface_in="ms0", iface_out="ms1", ranks=4, elements=100_000, seed=7):
    lines = []
    rng = random.Random(seed)
    tx, rx = RawSocketTransport(iface_in), RawSocketTransport(iface_out)
    transport = SplitTransport(tx, rx)
    try:
        num_ports = ms.CONFIG_CSR.get(bus.regs.d[f"{prefix}_config"].read(), "num_ports")
        out_port = num_ports - 1
        vectors = [random_vector(rng, elements) for _ in range(ranks)]
        before = _counters(bus, prefix)
        res = reduce(transport, vectors, collective_id=0xC0FFEE, egress=(out_port, out_port), shuffle=True,
                     window=2, seed=seed, timeout=1800.0)
        if res["mismatches"]:
            raise RuntimeError(f"{res['mismatches']} elements differ from the exact reference")
        lines.append(f"{ranks} ranks x {elements} FP32 through {iface_in} -> {iface_out}: "
                     f"{res['collector'].n_chunks} chunks in shuffled order, all elements exact "
                     f"({res['seconds']:.1f} s, {res['retries']} chunk resends)")

        # Duplicates and invalid frames around a second, small collective.
        cid, n = 0xD00D, 64
        small = [random_vector(rng, n) for _ in range(2)]
        tx.send(P.setup_frame(ms.BROADCAST_MAC, ms.HOST_MAC, cid,
                              P.setup_record(n, 2, out_port, out_port)))
        first = P.data_frame(ms.BROADCAST_MAC, ms.HOST_MAC, cid, 0, 0, small[0])
        invalid = {
            "bad_version": P.frame(ms.BROADCAST_MAC, ms.HOST_MAC, ms.MS_OP_COL_DATA, major=ms.VERSION_MAJOR + 1),
            "bad_opcode": P.frame(ms.BROADCAST_MAC, ms.HOST_MAC, 0x7F),
            "unknown_coll": P.data_frame(ms.BROADCAST_MAC, ms.HOST_MAC, 0xBAD, 0, 0, small[0]),
        }
        tx.send(first)
        tx.send(first)                                   # duplicate of rank 0, chunk 0
        for frame in invalid.values():
            tx.send(frame)
        tx.send(P.data_frame(ms.BROADCAST_MAC, ms.HOST_MAC, cid, 1, 0, small[1]))
        result = _await_result(rx, cid, 0, n)
        expected = reduce_vectors(small)
        if list(result["values"]) != list(expected):
            raise RuntimeError("collective with duplicates/invalid frames around it is not exact")
        after = _counters(bus, prefix)
        delta = {k: after[k] - before.get(k, 0) for k in after}
        want = {"drop_duplicate": 1, **{f"drop_{k}": 1 for k in invalid}}
        wrong = {k: (delta.get(k), v) for k, v in want.items() if delta.get(k) != v}
        if wrong:
            raise RuntimeError(f"drop counters moved unexpectedly (got, want): {wrong}")
        lines.append("duplicate + 3 invalid frames (bad version, bad opcode, unknown collective): dropped and "
                     "counted one each; the collective around them stayed exact")
        lines.append("counters: " + ", ".join(f"{k}={v}" for k, v in sorted(after.items()) if v))
    finally:
        tx.close()
        rx.close()
    return lines


def available(iface="ms0"):
    try:
        socket.if_nametoindex(iface)
        return True
    except OSError:
        return False

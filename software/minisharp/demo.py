"""MiniSharp demo over the CSR bus (make sim): the on-chip injector plays the Aggregation Manager and the
ranks, the capture buffer records the COL_RES frames, and every result is checked bit for bit against the
Fraction reference model."""
import random
import struct
import time

from cores.minisharp import common as ms
from software.minisharp import packets as P
from software.minisharp.reference import reduce_vectors
from soc.common import CORE_NAMES

def random_vector(rng, n):
    """FP32 bit patterns of mixed magnitudes, so that float32 summation order would matter."""
    return [struct.unpack(">I", struct.pack(">f", rng.choice([1e-3, 1.0, 1e4, 1e8]) * rng.uniform(-1, 1)))[0]
            for _ in range(n)]


def plan(collective_id, ranks, elements, num_ports, chunk_elements, egress=(0, 0), seed=1):
    """Frames of one reduction: (setup frame, [(port, frame)] data frames in shuffled order, expected sums)."""
    rng = random.Random(seed)
    vecs = [random_vector(rng, elements) for _ in range(ranks)]
    # sent by the host to the switch (port 0's address)
    setup = P.setup_frame(ms.DEFAULT_SRC_MAC, ms.HOST_MAC, collective_id,
                          P.setup_record(elements, ranks, egress[0], egress[1]))
    frames = [f for k in range(ranks)
              for _, f in P.chunk_frames(ms.DEFAULT_SRC_MAC, ms.HOST_MAC, collective_id, k, vecs[k], chunk_elements)]
    rng.shuffle(frames)
    return setup, [(i % num_ports, f) for i, f in enumerate(frames)], reduce_vectors(vecs)


def split_capture(entries):
    """Capture entries (capture_data values) -> list of frames."""
    frames, cur = [], bytearray()
    for e in entries:
        cur.append(ms.CAPTURE_DATA_CSR.get(e, "byte"))
        if ms.CAPTURE_DATA_CSR.get(e, "last"):
            frames.append(bytes(cur))
            cur = bytearray()
    return frames


def check_results(frames, collective_id, elements, expected, chunk_elements):
    """Reassemble COL_RES frames of a collective; raise on a missing chunk or a wrong value."""
    got = {}
    for f in frames:
        p = P.parse(f)
        if p.get("opcode") == ms.MS_OP_COL_RES and p["collective_id"] == collective_id:
            got[p["chunk_index"]] = P.parse(f, elements, chunk_elements)["values"]
    n = ms.num_chunks(elements, chunk_elements)
    if sorted(got) != list(range(n)):
        raise RuntimeError(f"minisharp: chunks received {sorted(got)}, expected 0..{n - 1}")
    vector = [v for c in range(n) for v in got[c]]
    bad = [i for i, (a, b) in enumerate(zip(vector, expected)) if a != b]
    if bad:
        raise RuntimeError(f"minisharp: {len(bad)} wrong sums, first at element {bad[0]}: "
                           f"{vector[bad[0]]:#010x} != {expected[bad[0]]:#010x}")
    return vector


def demo(bus, prefix=CORE_NAMES["minisharp"], ranks=3, elements=300, collective_id=0x5EED, seed=1, timeout=30.0):
    """Run one reduction through the SoC block's injector/capture; returns report lines, raises on error."""
    def reg(name):
        return getattr(bus.regs, f"{prefix}_{name}")

    cfg = ms.CONFIG_CSR.unpack(reg("config").read())
    num_ports, max_ranks = cfg["num_ports"], cfg["max_ranks"]
    chunk_elements = reg("chunk_elements").read()
    if ranks > max_ranks:
        raise ValueError(f"ranks {ranks} > max_ranks {max_ranks} of this build")
    out_port = num_ports - 1
    setup, frames, expected = plan(collective_id, ranks, elements, num_ports, chunk_elements,
                                   egress=(out_port, out_port), seed=seed)
    # `chunks` counts a result when its chunk completes, `tx_frames` when its frame has left (and is captured)
    done = [reg("chunks"), reg(f"port{out_port}_tx_frames")]
    before = [r.read() for r in done]
    drops0 = {name: reg(f"drop_{name}").read() for name, _ in ms.DROP_REASONS}
    reg("capture_ctrl").write(ms.CAPTURE_CTRL_CSR.pack(port=out_port, arm=1))
    t0 = time.time()
    for port, f in [(0, setup)] + frames:
        inject(bus, prefix, port, f)
    n = ms.num_chunks(elements, chunk_elements)
    while any((r.read() - v) % 2**32 < n for r, v in zip(done, before)):
        if time.time() - t0 > timeout:
            raise RuntimeError("minisharp: timeout waiting for chunk results")
        time.sleep(0.01)
    level = reg("capture_level").read()
    entries = []
    for a in range(level):
        reg("capture_addr").write(a)
        entries.append(reg("capture_data").read())
    check_results(split_capture(entries), collective_id, elements, expected, chunk_elements)
    drops = {name: reg(f"drop_{name}").read() - v for name, v in drops0.items()}
    if any(drops.values()):
        raise RuntimeError(f"minisharp: unexpected drops {drops}")
    return [f"minisharp: {ranks} ranks x {elements} FP32 over {num_ports} ports, {len(frames)} data frames "
            f"shuffled, {n} chunk results on port {out_port}: all {elements} sums bit-exact "
            f"({time.time() - t0:.1f} s)"]


def inject(bus, prefix, port, frame, timeout=None):
    """Send one frame into input `port` through the injector CSRs. Raises TimeoutError if the injector stays
    busy past `timeout` seconds (None: waits), RuntimeError if it refused the frame (its `inject_refused`)."""
    def reg(name):
        return getattr(bus.regs, f"{prefix}_inject_{name}")

    deadline = None if timeout is None else time.monotonic() + timeout
    while ms.INJECT_STATUS_CSR.get(reg("status").read(), "busy"):
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError("the MiniSharp injector stayed busy")
    data = bytes(frame) + bytes(-len(frame) % 4)
    for i in range(0, len(data), 4):
        reg("data").write(int.from_bytes(data[i:i + 4], "big"))
    refused = reg("refused").read()
    reg("ctrl").write(ms.INJECT_CTRL_CSR.pack(length=len(frame), port=port, go=1))
    if reg("refused").read() != refused:
        raise RuntimeError(f"the MiniSharp injector refused a frame of {len(frame)} bytes (inject_refused)")

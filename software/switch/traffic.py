"""The spec's evaluation method of a switch at cell-time granularity (as in the iSLIP paper and the RIFL switch
evaluation): traffic traces (`generate`) and the statistics of a switch's departures (`stats`).

A trace is a dict of numpy arrays, one entry per cell, sorted by arrival time: `time` (the cell time the
cell has fully arrived at its input), `src`, `dst`, `packet` (packet id; a packet's cells arrive back to
back at one input and share a destination). Packets are cut into CELL_BYTES cells by the endpoint (RIFL
Layer 2), so a packet of b bytes takes ceil(b / CELL_BYTES) cells and the last one is padded.

Arrival processes (each input independent; `load` is the fraction of cell times carrying a cell):
  bernoulli: before each packet an idle gap, geometric with the mean that gives `load` (for one-cell
             packets this is exactly i.i.d. Bernoulli arrivals); destination uniform per packet;
  bursty:    on/off; a burst is a geometric number of packets to one destination, averaging
             BURST_MEAN_BYTES of data per port, followed by a geometric idle period set by `load`.
Sizes: an int (a multiple of CELL_BYTES) or "variable" (uniform in [VARIABLE_SIZE_MIN, VARIABLE_SIZE_MAX]).
The spec's runs send FLOW_BYTES from every input to every output.
"""
import numpy as np

from cores.switch.common import CELL_BYTES

# The spec's evaluation method (its section on RTL simulation), not the switch's ABI.
FIXED_LATENCY_CELLS = 17          # latency of everything except the VOQ and the scheduler, in cell times
BURST_MEAN_BYTES = 1024           # mean burst length per port under bursty traffic
FLOW_BYTES = 2_500_000            # data sent from every input to every output in the spec's runs
VARIABLE_SIZE_MIN = 64            # variable-size packets: uniform in [64, 2048] bytes
VARIABLE_SIZE_MAX = 2048
QUANTILES = [100 * (1 - 10 ** (-e / 20)) for e in range(0, 81)]     # 0 .. 99.99 %, log-spaced tail


def cells_of(size_bytes):
    return -(-np.asarray(size_bytes) // CELL_BYTES)


def _sizes(rng, size, count):
    if size == "variable":
        return rng.integers(VARIABLE_SIZE_MIN, VARIABLE_SIZE_MAX + 1, count)
    if not isinstance(size, int) or size <= 0 or size % CELL_BYTES:
        raise ValueError(f"fixed packet size must be a positive multiple of {CELL_BYTES}, got {size!r}")
    return np.full(count, size)


def mean_cells(size):
    """Mean cells per packet of a size model."""
    if size == "variable":
        return float(np.mean(cells_of(np.arange(VARIABLE_SIZE_MIN, VARIABLE_SIZE_MAX + 1))))
    return float(cells_of(size))


def mean_bytes(size):
    """Mean bytes per packet of a size model (a fixed size is counted in whole cells)."""
    return mean_cells(size) * CELL_BYTES if size != "variable" else (VARIABLE_SIZE_MIN + VARIABLE_SIZE_MAX) / 2


def generate(n, cell_times, load, pattern="bernoulli", size=CELL_BYTES, seed=1, exclude_self=False):
    """A trace of `cell_times` cell times for an n-port switch (see the module docstring)."""
    if not 0 < load <= 1:
        raise ValueError(f"load must be in (0, 1], got {load}")
    if pattern not in ("bernoulli", "bursty"):
        raise ValueError(f"unknown pattern {pattern!r}")
    rng = np.random.default_rng(seed)
    mc = mean_cells(size)
    if pattern == "bernoulli":
        burst_packets, busy_mean = 1.0, mc
    else:
        burst_packets = max(1.0, BURST_MEAN_BYTES / mean_bytes(size))
        busy_mean = burst_packets * mc
    idle_mean = busy_mean * (1 - load) / load             # load = busy / (busy + idle)
    cols = {k: [] for k in ("time", "src", "dst", "packet")}
    next_packet = 0
    for src in range(n):
        t = 0
        # Draw in chunks until the port's timeline is full.
        while t < cell_times:
            chunk = 256
            idles = rng.geometric(1 / (1 + idle_mean), chunk) - 1 if idle_mean > 0 else np.zeros(chunk, int)
            bursts = rng.geometric(1 / burst_packets, chunk) if burst_packets > 1 else np.ones(chunk, int)
            if exclude_self:
                dsts = (src + rng.integers(1, n, chunk)) % n
            else:
                dsts = rng.integers(0, n, chunk)
            for idle, burst, dst in zip(idles, bursts, dsts):
                t += int(idle)
                ncells = cells_of(_sizes(rng, size, int(burst)))
                for c in ncells:
                    if t >= cell_times:
                        break
                    k = int(min(c, cell_times - t))
                    cols["time"].append(np.arange(t, t + k))
                    cols["src"].append(np.full(k, src))
                    cols["dst"].append(np.full(k, dst))
                    cols["packet"].append(np.full(k, next_packet))
                    next_packet += 1
                    t += int(c)
                if t >= cell_times:
                    break
    trace = {k: np.concatenate(v).astype(np.int64) if v else np.zeros(0, np.int64) for k, v in cols.items()}
    order = np.lexsort((trace["src"], trace["time"]))
    return {k: v[order] for k, v in trace.items()}


def stats(trace, dep, n, cell_times, warmup):
    """Utilisation over [warmup, cell_times) and packet latency (cell times) for packets arriving after warmup.

    Packet latency = departure of its last cell - arrival of its first cell + 1 (its own cell time)
    + FIXED_LATENCY_CELLS (Layer 1, cables, transceivers: the spec's fixed 17 cell times).
    """
    window = cell_times - warmup
    departed = (dep >= warmup) & (dep < cell_times)
    util = float(np.count_nonzero(departed)) / (n * window)
    offered = float(np.count_nonzero((trace["time"] >= warmup) & (trace["time"] < cell_times))) / (n * window)
    pk = trace["packet"]
    npk = int(pk.max()) + 1 if len(pk) else 0
    first = np.full(npk, np.iinfo(np.int64).max)
    np.minimum.at(first, pk, trace["time"])
    last = np.full(npk, -1)
    np.maximum.at(last, pk, np.where(dep < 0, np.iinfo(np.int64).max // 2, dep))
    measured = (first >= warmup) & (first < cell_times)
    done = measured & (last < np.iinfo(np.int64).max // 2)
    lat = (last - first + 1 + FIXED_LATENCY_CELLS)[done]

    qs = np.percentile(lat, QUANTILES + [50, 99, 99.9]).tolist() if len(lat) else [float("nan")] * (len(QUANTILES) + 3)
    return {
        "offered": offered,
        "utilisation": util,
        "packets": int(np.count_nonzero(measured)),
        "undelivered": int(np.count_nonzero(measured & ~done)),
        "mean_latency": float(lat.mean()) if len(lat) else float("nan"),
        "p50_latency": qs[-3],
        "p99_latency": qs[-2],
        "p999_latency": qs[-1],
        "max_latency": float(lat.max()) if len(lat) else float("nan"),
        "quantiles": qs[:len(QUANTILES)],                # the latency distribution, for CCDF plots
    }


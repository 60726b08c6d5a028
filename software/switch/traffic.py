"""Switch traffic at cell-time granularity, as in the iSLIP paper and the RIFL switch evaluation.

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
"""
import numpy as np

from cores.switch.common import BURST_MEAN_BYTES, CELL_BYTES, VARIABLE_SIZE_MIN, VARIABLE_SIZE_MAX


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
        mean_bytes = mc * CELL_BYTES if size != "variable" else (VARIABLE_SIZE_MIN + VARIABLE_SIZE_MAX) / 2
        burst_packets = max(1.0, BURST_MEAN_BYTES / mean_bytes)
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

"""Reference switch models at cell-time granularity, driven by a trace from software.switch.traffic.

Every model returns the departure cell time of each cell of the trace (-1 when it has not left by the end
of the run). A cell that has fully arrived at time t may leave at time t at the earliest (zero queueing);
one cell per input and per output per cell time.
  safc:  ideal output queueing (statically allocated, fully connected: one queue per input-output pair,
         every output serves its cells oldest first) - the upper bound the spec compares against;
  fifo:  input queueing with one FIFO per input; each output picks one head-of-line cell at random
         (the classic 58.6% saturation model);
  islip: VOQs scheduled by the Python iSLIP (software.switch.islip), the reference for the RTL harness.
"""
import numpy as np

from cores.switch.common import FIXED_LATENCY_CELLS
from software.switch.islip import ISLIP

QUANTILES = [100 * (1 - 10 ** (-e / 20)) for e in range(0, 81)]     # 0 .. 99.99 %, log-spaced tail


def safc(trace, n):
    dep = np.full(len(trace["time"]), -1, np.int64)
    for j in range(n):
        idx = np.nonzero(trace["dst"] == j)[0]                 # already in (time, src) order
        if len(idx) == 0:
            continue
        k = np.arange(len(idx))
        dep[idx] = k + np.maximum.accumulate(trace["time"][idx] - k)
    return dep


def fifo(trace, n, horizon, seed=1):
    rng = np.random.default_rng(seed)
    dep = np.full(len(trace["time"]), -1, np.int64)
    queues = [np.nonzero(trace["src"] == i)[0] for i in range(n)]
    head = np.zeros(n, np.int64)
    times, dsts = trace["time"], trace["dst"]
    for t in range(horizon):
        contenders, cdst = [], []
        for i in range(n):
            if head[i] < len(queues[i]):
                c = queues[i][head[i]]
                if times[c] <= t:
                    contenders.append(i)
                    cdst.append(dsts[c])
        if not contenders:
            if all(head[i] >= len(queues[i]) for i in range(n)):
                break
            continue
        perm = rng.permutation(len(contenders))
        _, first = np.unique(np.asarray(cdst)[perm], return_index=True)
        for p in perm[first]:
            i = contenders[p]
            dep[queues[i][head[i]]] = t
            head[i] += 1
    return dep


def islip(trace, n, iterations, horizon):
    sched = ISLIP(n, iterations)
    dep = np.full(len(trace["time"]), -1, np.int64)
    voq = [[[] for _ in range(n)] for _ in range(n)]
    times = trace["time"]
    nxt, total = 0, len(times)
    for t in range(horizon):
        while nxt < total and times[nxt] <= t:
            voq[trace["src"][nxt]][trace["dst"][nxt]].append(nxt)
            nxt += 1
        match = sched.schedule([[bool(voq[i][j]) for j in range(n)] for i in range(n)])
        for i, j in enumerate(match):
            if j is not None:
                dep[voq[i][j].pop(0)] = t
        if nxt == total and not any(voq[i][j] for i in range(n) for j in range(n)):
            break
    return dep


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


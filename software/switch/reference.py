"""Reference models of the switch, independent of the RTL: the Python iSLIP (`ISLIP`, written from McKeown's
paper: the cycle-exact reference of cores.switch.islip.ISLIPScheduler) and switch models at cell-time
granularity driven by a trace from software.switch.traffic.

Every switch model returns the departure cell time of each cell of the trace (-1 when it has not left by the end
of the run). A cell that has fully arrived at time t may leave at time t at the earliest (zero queueing);
one cell per input and per output per cell time.
  safc:  ideal output queueing (statically allocated, fully connected: one queue per input-output pair,
         every output serves its cells oldest first) - the upper bound the spec compares against;
  fifo:  input queueing with one FIFO per input; each output picks one head-of-line cell at random
         (the classic 58.6% saturation model);
  islip: VOQs scheduled by `ISLIP`, the reference for the Verilated scheduler (sim.verilated.switch).
"""
import numpy as np


class ISLIP:
    """iSLIP over `n` ports with `iterations` iterations; `schedule(requests)` makes one decision.

    `requests[i][j]` is true when input i has a cell for output j. Returns `match`, a list with the
    output matched to each input (or None). Pointers (`grant_ptr[j]`, `accept_ptr[i]`) move to one past
    the granted input / accepted output, and only for grants accepted in the first iteration.
    """
    def __init__(self, n, iterations=1):
        self.n = n
        self.iterations = iterations
        self.grant_ptr = [0] * n
        self.accept_ptr = [0] * n

    @staticmethod
    def _pick(candidates, ptr, n):
        for k in range(n):
            c = (ptr + k) % n
            if c in candidates:
                return c
        return None

    def schedule(self, requests):
        n = self.n
        match = [None] * n
        out_taken = [False] * n
        for it in range(self.iterations):
            grants = {}                      # output -> input
            for j in range(n):
                if out_taken[j]:
                    continue
                cands = {i for i in range(n) if match[i] is None and requests[i][j]}
                g = self._pick(cands, self.grant_ptr[j], n)
                if g is not None:
                    grants[j] = g
            for i in range(n):
                offers = {j for j, g in grants.items() if g == i}
                a = self._pick(offers, self.accept_ptr[i], n)
                if a is None:
                    continue
                match[i] = a
                out_taken[a] = True
                if it == 0:
                    self.accept_ptr[i] = (a + 1) % n
                    self.grant_ptr[a] = (i + 1) % n
        return match


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

"""Python iSLIP, written from McKeown's paper: the cycle-exact reference for the RTL and a sanity model."""


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

"""Host API of the sync SoC block (cores.sync.soc_block.SyncBlock): the CSR access (`SyncHost`), the blocking
`sync(ident, op, value)` that the specification's cores call (`Sync`), and the two uses the specification names:
the first faulting index by MIN (`first_fault`) and flags by OR (`any_flags`).

    s = Sync(bus)                          # the SoC's SyncBlock, over Etherbone (software.client.InnetClient)
    s.participant(3).sync(0, "min", -5)    # node 3 gives -5 to ident 0; blocks until node 3's result
    s.all(0, "or", [1, 2, 4, ...])         # every participant at once (one thread each): each node's result

A participant's sync() triggers its node and waits for that node's completion, so the calls of the different
participants must run at the same time, as the specification's cores do: one thread each (`all` starts them).
One lock serialises the bus; a waiting thread pops the block's completion FIFO for every participant and keeps
the other participants' completions for their callers. Values: `max` and `min` take and return signed integers,
`umax`, `umin`, `or` and `and` unsigned ones, of the block's value width. Refused before any bus access, with a
one-line ValueError: an unknown op, a node or ident the block does not have, a value that does not fit. A
completion whose participants gave different ops raises SyncError; none within `timeout` s raises SyncTimeout.
"""
import collections
import threading
import time

from cores.sync.common import (BLOCK_COUNTERS, CPL_INFO, CPL_POP, CPL_STATUS, INFO, MODE_NAMES, TRIG_CTRL,
                               TRIG_STATUS)
from soc.common import CORE_NAMES

SIGNED_OPS = ("max", "min")


class SyncError(RuntimeError):
    """A completion with the error flag: the participants of the ident gave different ops."""


class SyncTimeout(RuntimeError):
    """No completion (or the node did not take its trigger) within the timeout."""


class SyncHost:
    """CSR access to one SyncBlock (`prefix` is the block's name in the SoC)."""
    def __init__(self, bus, prefix=CORE_NAMES["sync"]):
        self.bus, self.prefix = bus, prefix
        self.info = INFO.unpack(self.reg("info").read())
        self.n_participants = self.info["width"] * self.info["height"] + self.info["lamlet"]

    def reg(self, name):
        return getattr(self.bus.regs, f"{self.prefix}_{name}")

    def busy(self):
        return TRIG_STATUS.unpack(self.reg("trig_status").read())["busy"]

    def trigger(self, node, ident, mode, value, timeout=10.0, while_busy=None):
        """Write the trigger once the block is not busy; `while_busy()` is called on each busy poll."""
        t0 = time.time()
        while self.busy():
            if while_busy is not None:
                while_busy()
            if time.time() - t0 > timeout:
                raise SyncTimeout(f"sync: node {node} did not take its trigger within {timeout} s")
        self.reg("trig_value").write(value)
        self.reg("trig_ctrl").write(TRIG_CTRL.pack(node=node, ident=ident, mode=mode, go=1))

    def pop(self):
        """The completion at the head of the FIFO (node, ident, mode, error, value, latency), or None."""
        if not CPL_STATUS.unpack(self.reg("cpl_status").read())["valid"]:
            return None
        c = CPL_INFO.unpack(self.reg("cpl_info").read())
        c["value"] = self.reg("cpl_value").read()
        c["latency"] = self.reg("cpl_latency").read()
        self.reg("cpl_pop").write(CPL_POP.pack(pop=1))
        return c

    def completions(self, count, timeout=10.0):
        """Pop `count` completions; raises SyncTimeout after `timeout` seconds without a new one."""
        out, t0 = [], time.time()
        while len(out) < count:
            c = self.pop()
            if c is None:
                if time.time() - t0 > timeout:
                    raise SyncTimeout(f"sync: {len(out)} of {count} completions after {timeout} s")
                continue
            out.append(c)
            t0 = time.time()
        return out

    def counters(self):
        return {n: self.reg(n).read() for n, _ in BLOCK_COUNTERS}


class Participant:
    """One node of the block: `sync(ident, op, value)` (see the module's docstring)."""
    def __init__(self, owner, node):
        self.owner, self.node = owner, node

    def sync(self, ident, op, value):
        return self.owner.sync(self.node, ident, op, value)


class Sync:
    """The blocking API over a SyncHost; thread-safe (one lock for the bus)."""
    def __init__(self, bus, prefix=CORE_NAMES["sync"], timeout=10.0):
        self.host = SyncHost(bus, prefix)
        self.timeout = timeout
        self.width = self.host.info["value_width"]
        self.n_participants, self.n_idents = self.host.n_participants, self.host.info["n_idents"]
        self._lock = threading.Lock()
        self._done = collections.defaultdict(collections.deque)      # (node, ident) -> completions

    def participant(self, node):
        self._check_node(node)
        return Participant(self, node)

    def encode(self, op, value):
        """`value` as the block's unsigned bit pattern for `op` (refused if it does not fit)."""
        if op not in MODE_NAMES:
            raise ValueError(f"sync: unknown op {op!r}: one of {', '.join(MODE_NAMES)}")
        w = self.width
        lo, hi = (-(1 << (w - 1)), (1 << (w - 1)) - 1) if op in SIGNED_OPS else (0, (1 << w) - 1)
        if not isinstance(value, int) or isinstance(value, bool) or not lo <= value <= hi:
            raise ValueError(f"sync: value {value!r} does not fit op {op} ({w}-bit: {lo}..{hi})")
        return value & ((1 << w) - 1)

    def decode(self, op, bits):
        w = self.width
        return bits - (1 << w) if op in SIGNED_OPS and bits >> (w - 1) else bits

    def sync(self, node, ident, op, value):
        """Node `node` gives `value` to `ident` under `op` and waits for its own completion: the result."""
        self._check_node(node)
        if not isinstance(ident, int) or not 0 <= ident < self.n_idents:
            raise ValueError(f"sync: ident {ident!r} out of range 0..{self.n_idents - 1}")
        bits = self.encode(op, value)
        with self._lock:
            self._trigger(node, ident, MODE_NAMES.index(op), bits)
        c = self._wait(node, ident)
        if c["error"]:
            raise SyncError(f"sync: ident {ident} at node {node}: the participants gave different ops")
        return self.decode(MODE_NAMES[c["mode"]], c["value"])

    def all(self, ident, op, values):
        """Every participant p gives values[p] at once (a thread each); returns each node's result."""
        if len(values) != self.n_participants:
            raise ValueError(f"sync: {len(values)} values for {self.n_participants} participants")
        for v in values:
            self.encode(op, v)
        results, errors = [None] * len(values), []

        def run(p):
            try:
                results[p] = self.sync(p, ident, op, values[p])
            except Exception as e:  # re-raised in the caller's thread
                errors.append(e)
        threads = [threading.Thread(target=run, args=(p,), daemon=True) for p in range(len(values))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return results

    def _check_node(self, node):
        if not isinstance(node, int) or not 0 <= node < self.n_participants:
            raise ValueError(f"sync: node {node!r} out of range 0..{self.n_participants - 1}")

    def _trigger(self, node, ident, mode, bits):
        # a node takes its trigger once its merge is free, which may wait for its completion to leave: keep
        # popping the FIFO meanwhile
        self.host.trigger(node, ident, mode, bits, self.timeout, while_busy=self._collect)

    def _collect(self):
        c = self.host.pop()
        if c is not None:
            self._done[(c["node"], c["ident"])].append(c)
        return c

    def _wait(self, node, ident):
        t0 = time.time()
        while True:
            with self._lock:
                if self._done[(node, ident)]:
                    return self._done[(node, ident)].popleft()
                if self._collect() is None and time.time() - t0 > self.timeout:
                    raise SyncTimeout(f"sync: no completion of ident {ident} at node {node} within {self.timeout} s")
            time.sleep(0)


def first_fault(sync, faults, ident=0):
    """The specification's first faulting index: participant p holds the element indices p, p + n, p + 2n, ...
    of `faults` (a list of booleans) and gives its first faulting one (or the no-fault sentinel, the largest
    value) to a UMIN sync; every participant learns the first faulting index of the whole list (None: none)."""
    n, none = sync.n_participants, (1 << sync.width) - 1
    if len(faults) >= none:
        raise ValueError(f"sync: {len(faults)} elements do not fit {sync.width}-bit indices")
    own = [next((i for i in range(p, len(faults), n) if faults[i]), none) for p in range(n)]
    results = sync.all(ident, "umin", own)
    if len(set(results)) != 1:
        raise RuntimeError(f"sync: participants disagree on the first fault: {results}")
    return None if results[0] == none else results[0]


def any_flags(sync, flags, ident=1):
    """The specification's flags by OR: participant p gives its flag bits flags[p]; every participant learns
    the OR of all of them."""
    results = sync.all(ident, "or", flags)
    if len(set(results)) != 1:
        raise RuntimeError(f"sync: participants disagree on the flags: {results}")
    return results[0]

"""The blocking host API of the sync block (software.sync.api) on the block's CSR bank: sync() from one thread per
participant against the reference reduction (signed and unsigned ops, repeated rounds), the specification's two
uses against the plain computation, and every refusal: before any bus access, one line."""
import random

import pytest

from cores.sync.common import DEFAULT_HOP_LATENCY, MODE_NAMES
from cores.sync.soc_block import SyncBlock
from software.sync.api import Sync, SyncError, SyncTimeout, any_flags, first_fault
from software.sync.reference import reduce_values
from tests.harness.csr import run_demo

W = 16


def _run(host, n_idents=2):
    out, _ = run_demo(SyncBlock(2, 2, n_idents=n_idents, value_width=W, hop_latency=DEFAULT_HOP_LATENCY),
                      "syncnet", lambda bus: host(Sync(bus, "syncnet", timeout=5.0), bus))
    return out


@pytest.mark.extended
def test_every_op_from_concurrent_participants():
    """Each op twice on one ident (the second round reuses it), both idents at once in the second half: every
    node's result is the reference reduction of the values' bit patterns, decoded signed for max and min."""
    rng = random.Random(3)

    def host(s, bus):
        got = []
        for op in MODE_NAMES:
            for _ in range(2):
                lo, hi = (-(1 << (W - 1)), (1 << (W - 1)) - 1) if op in ("max", "min") else (0, (1 << W) - 1)
                values = [rng.randint(lo, hi) for _ in range(s.n_participants)]
                got.append((op, values, s.all(rng.randrange(2), op, values)))
        return got

    for op, values, results in _run(host):
        bits = [v & ((1 << W) - 1) for v in values]
        want = reduce_values(MODE_NAMES.index(op), bits, W)
        if op in ("max", "min") and want >> (W - 1):
            want -= 1 << W
        assert results == [want] * len(values), (op, values, results)
        if op not in ("or", "and"):
            assert want in values       # an order statistic, decoded back to its own value


@pytest.mark.parametrize("case", ["random", "first", "last", "none"])
def test_first_fault_and_flags(case):
    rng = random.Random(hash(case) & 0xFFFF)

    def host(s, bus):
        n = s.n_participants
        faults = [rng.random() < 0.05 for _ in range(40)] if case == "random" else [False] * 40
        if case == "first":
            faults[0] = True
        if case == "last":
            faults[39] = True
        flags = [rng.getrandbits(W) & rng.getrandbits(W) for _ in range(n)]
        return faults, first_fault(s, faults), flags, any_flags(s, flags)

    faults, got, flags, got_flags = _run(host)
    assert got == (faults.index(True) if True in faults else None)
    want = 0
    for f in flags:
        want |= f
    assert got_flags == want


def test_refusals_before_any_bus_access():
    def host(s, bus):
        before = bus.accesses
        msgs = []
        for call in (lambda: s.sync(0, 0, "sum", 1), lambda: s.sync(5, 0, "or", 1), lambda: s.sync(-1, 0, "or", 1),
                     lambda: s.sync(0, 2, "or", 1), lambda: s.sync(0, 0, "umax", -1),
                     lambda: s.sync(0, 0, "umax", 1 << W), lambda: s.sync(0, 0, "max", 1 << (W - 1)),
                     lambda: s.sync(0, 0, "min", -(1 << (W - 1)) - 1), lambda: s.sync(0, 0, "or", True),
                     lambda: s.sync(0, 0, "or", 1.0), lambda: s.all(0, "or", [1, 2]),
                     lambda: s.all(0, "or", [1, 2, 3, 4, -1]), lambda: s.participant(9)):
            with pytest.raises(ValueError) as e:
                call()
            msgs.append(str(e.value))
        return msgs, bus.accesses - before

    msgs, accesses = _run(host)
    assert accesses == 0
    assert all(m.startswith("sync: ") and "\n" not in m for m in msgs)
    assert "unknown op 'sum'" in msgs[0] and "node 5 out of range 0..4" in msgs[1]
    assert "ident 2 out of range 0..1" in msgs[3] and "2 values for 5 participants" in msgs[10]


def test_different_ops_raise_and_a_missing_participant_times_out():
    """Participants giving different ops to one ident: every node's completion carries the error flag, so every
    sync() raises SyncError. Then node 0 alone syncs ident 1: the others never come, SyncTimeout."""
    def host(s, bus):
        import threading
        errors = []

        def run(p):
            try:
                s.participant(p).sync(0, "or" if p else "and", 1)
            except SyncError as e:
                errors.append(str(e))
        threads = [threading.Thread(target=run, args=(p,)) for p in range(s.n_participants)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        s.timeout = 0.5
        with pytest.raises(SyncTimeout, match="no completion of ident 1 at node 0"):
            s.sync(0, 1, "or", 1)
        return errors, s.host.counters()

    errors, counters = _run(host)
    assert len(errors) == 5 and all("gave different ops" in e for e in errors)
    assert counters["mismatches"] > 0 and counters["completions"] == 5

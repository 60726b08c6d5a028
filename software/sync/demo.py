"""Host demo of the sync SoC block (cores.sync.soc_block.SyncBlock): random synchronizations through CSRs, then
the specification's two uses through the blocking API (software.sync.api): the first faulting index by MIN and
flags by OR."""
import random

from cores.sync.common import MODES, MODE_NAMES
from soc.common import CORE_NAMES
from software.sync.api import Sync, SyncHost, any_flags, first_fault
from software.sync.reference import expected_result


def demo(bus, prefix=CORE_NAMES["sync"], rounds=2, idents=None, seed=1):
    """`rounds` rounds; in each, `idents` idents (default all) get a random mode, every participant a random
    value, and the triggers go out in random node order. Every participant must complete every ident exactly
    once with the reference reduction; the same idents are reused in the next round. Raises on a mismatch."""
    rng = random.Random(seed)
    h = SyncHost(bus, prefix)
    info, n = h.info, h.n_participants
    vw = info["value_width"]
    idents = list(range(info["n_idents"] if idents is None else idents))
    lines = [f"sync: {info['width']}x{info['height']} grid{' + lamlet' if info['lamlet'] else ''}, "
             f"{info['n_idents']} idents, {vw}-bit values, {info['hop_latency']} cycles a hop"]
    before = h.counters()
    for r in range(rounds):
        modes = {i: rng.choice(MODES) for i in idents}
        values = {(p, i): rng.getrandbits(vw) for p in range(n) for i in idents}
        order = [(p, i) for p in range(n) for i in idents]
        rng.shuffle(order)
        for p, i in order:
            h.trigger(p, i, modes[i], values[(p, i)])
        got = h.completions(n * len(idents))
        seen = set()
        for c in got:
            key = (c["node"], c["ident"])
            if key in seen or c["ident"] not in modes:
                raise RuntimeError(f"sync round {r}: unexpected completion {c}")
            seen.add(key)
            mode, err, value = expected_result([(modes[c["ident"]], values[(p, c["ident"])]) for p in range(n)], vw)
            if (c["mode"], c["error"], c["value"]) != (mode, err, value):
                raise RuntimeError(f"sync round {r}: {c} expected mode {mode} error {err} value {value:#x}")
        lat = [c["latency"] for c in got]
        lines.append(f"sync round {r}: {len(got)} completions correct ("
                     f"{', '.join(f'{i}:{MODE_NAMES[modes[i]]}' for i in idents)}), "
                     f"latency from last trigger max {max(lat)} mean {sum(lat) / len(lat):.1f} cycles")
    lines += uses(bus, prefix, rng)
    after = h.counters()
    if after["completions"] - before["completions"] != (rounds * len(idents) + USES) * n or \
            any(after[k] != before[k] for k in ("trigger_drops", "rx_drops", "mismatches")):
        raise RuntimeError(f"sync counters: before {before}, after {after}")
    return lines


USES = 3        # synchronizations of every participant in `uses`


def uses(bus, prefix, rng):
    """The specification's uses, every participant in its own thread calling the blocking sync(): the first
    faulting index of a list (random faults, then none) and the OR of random flag bits; each checked against
    the list itself."""
    s = Sync(bus, prefix)
    n = s.n_participants
    faults = [rng.random() < 0.02 for _ in range(20 * n)]
    faults[rng.randrange(5 * n, len(faults))] = True
    want = faults.index(True)
    got = first_fault(s, faults, ident=0)
    clean = first_fault(s, [False] * len(faults), ident=0)
    flags = [1 << rng.randrange(s.width) for _ in range(n)]
    want_flags = 0
    for f in flags:
        want_flags |= f
    got_flags = any_flags(s, flags, ident=min(1, s.n_idents - 1))
    if (got, clean, got_flags) != (want, None, want_flags):
        raise RuntimeError(f"sync uses: first fault {got} (expected {want}), without faults {clean}, flags "
                           f"{got_flags:#x} (expected {want_flags:#x})")
    return [f"sync uses: first faulting index of {len(faults)} elements by MIN: {got}, none found in a clean list; "
            f"flags by OR of {n} participants: {got_flags:#x}; every participant agrees"]

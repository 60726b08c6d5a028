"""Host side of the sync SoC block (cores.sync.soc_block.SyncBlock): random synchronizations through CSRs."""
import random
import time

from cores.sync.common import (BLOCK_COUNTERS, MODES, MODE_NAMES, TRIG_CTRL, TRIG_STATUS, CPL_STATUS, CPL_INFO,
                               CPL_POP, INFO)
from soc.common import CORE_NAMES
from software.sync.reference import expected_result


class SyncHost:
    """CSR access to one SyncBlock (`prefix` is the block's name in the SoC)."""
    def __init__(self, bus, prefix=CORE_NAMES["sync"]):
        self.bus, self.prefix = bus, prefix
        self.info = INFO.unpack(self.reg("info").read())
        self.n_participants = self.info["width"] * self.info["height"] + self.info["lamlet"]

    def reg(self, name):
        return getattr(self.bus.regs, f"{self.prefix}_{name}")

    def trigger(self, node, ident, mode, value, timeout=10.0):
        t0 = time.time()
        while TRIG_STATUS.unpack(self.reg("trig_status").read())["busy"]:
            if time.time() - t0 > timeout:
                raise RuntimeError(f"sync: node {node} did not take its trigger within {timeout} s")
        self.reg("trig_value").write(value)
        self.reg("trig_ctrl").write(TRIG_CTRL.pack(node=node, ident=ident, mode=mode, go=1))

    def completions(self, count, timeout=10.0):
        """Pop `count` completions: list of dicts (node, ident, mode, error, value, latency); raises after
        `timeout` seconds without a new one."""
        out, t0 = [], time.time()
        while len(out) < count:
            if not CPL_STATUS.unpack(self.reg("cpl_status").read())["valid"]:
                if time.time() - t0 > timeout:
                    raise RuntimeError(f"sync: {len(out)} of {count} completions after {timeout} s")
                continue
            c = CPL_INFO.unpack(self.reg("cpl_info").read())
            c["value"] = self.reg("cpl_value").read()
            c["latency"] = self.reg("cpl_latency").read()
            self.reg("cpl_pop").write(CPL_POP.pack(pop=1))
            out.append(c)
            t0 = time.time()
        return out

    def counters(self):
        return {n: self.reg(n).read() for n, _ in BLOCK_COUNTERS}


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
    after = h.counters()
    if after["completions"] - before["completions"] != rounds * n * len(idents) or \
            any(after[k] != before[k] for k in ("trigger_drops", "rx_drops", "mismatches")):
        raise RuntimeError(f"sync counters: before {before}, after {after}")
    return lines

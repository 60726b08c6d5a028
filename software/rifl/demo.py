"""RIFL demo over a live SoC: error rates in, delivered/lost/duplicated counts out (make sim)."""
import math

from cores.rifl.common import (CHANNEL_RANDOM_MAX_BITS, CHK_COUNTERS, CHK_FAULTS, LOOPBACK_CONTROL, LOOPBACK_DIR_COUNTERS, LOOPBACK_DIRECTIONS,
                               LOOPBACK_ENDPOINTS, LOOPBACK_STATUS)
from soc.common import CORE_NAMES


def frame_error_threshold(ber, frame_bits):
    """Channel CSR value for a bit error rate: 2^32 * P(a frame has at least one bit error)."""
    if not 0 <= ber < 1:
        raise ValueError(f"bit error rate must be in [0, 1), got {ber}")
    return min(2**32 - 1, round((1 - (1 - ber) ** frame_bits) * 2**32))


def random_thresholds(ber, frame_bits):
    """Channel `thresholds` of the independent-bit-error model (cores.rifl.channel CHANNEL_RANDOM) for a bit
    error rate: threshold k (k = 1..CHANNEL_RANDOM_MAX_BITS) is 2^32 P(K >= k), K ~ Binomial(frame_bits, ber)
    the bit errors of a frame."""
    if not 0 <= ber < 1:
        raise ValueError(f"bit error rate must be in [0, 1), got {ber}")
    pmf = [math.comb(frame_bits, k) * ber ** k * (1 - ber) ** (frame_bits - k) for k in range(CHANNEL_RANDOM_MAX_BITS)]
    return [min(2**32 - 1, round(2**32 * max(0.0, 1 - sum(pmf[:k])))) for k in range(1, CHANNEL_RANDOM_MAX_BITS + 1)]


def reg(bus, prefix, name):
    return getattr(bus.regs, f"{prefix}_{name}")


def _snapshot(bus, prefix):
    names = [f"{d}_{k}" for d in LOOPBACK_DIRECTIONS for k, _ in LOOPBACK_DIR_COUNTERS]
    snap = {name: reg(bus, prefix, name).read() for name in names}
    for e in LOOPBACK_ENDPOINTS:
        snap[f"{e}_replays"] = reg(bus, prefix, f"{e}_replays").read()
    return snap


def wait_cycles(bus, prefix, cycles, until=lambda: False):
    """Poll until `until()` holds or `cycles` cycles of the SoC's clock (its `cycles` CSR, simulated time in
    litex_sim) have passed since the call; returns whether `until()` held."""
    clock = reg(bus, prefix, "cycles")
    start = clock.read()
    while not until():
        if (clock.read() - start) % 2**32 >= cycles:
            return until()
    return True


def _links_up(bus, prefix):
    return all(LOOPBACK_STATUS.unpack(reg(bus, prefix, "status").read()).values())


def run_rate(bus, ber, prefix=CORE_NAMES["rifl"], frame_bits=256, cycles=20_000, burst=1, drain_cycles=200_000):
    """Run both generators for `cycles` SoC clock cycles at bit error rate `ber`, then wait (up to
    `drain_cycles`) until every sent packet is accounted for; returns the counter deltas."""
    thr = frame_error_threshold(ber, frame_bits)
    reg(bus, prefix, "err_ab").write(thr)
    reg(bus, prefix, "err_ba").write(thr)
    reg(bus, prefix, "limit").write(0)
    reg(bus, prefix, "rx_ready").write(0)
    before = _snapshot(bus, prefix)
    reg(bus, prefix, "control").write(LOOPBACK_CONTROL.pack(enable=1, burst=burst))
    wait_cycles(bus, prefix, cycles)
    reg(bus, prefix, "control").write(LOOPBACK_CONTROL.pack(burst=burst))
    after = {}

    def drained():
        after.update(_snapshot(bus, prefix))
        return all(after[f"{d}_sent"] - before[f"{d}_sent"] <=
                   sum(after[f"{d}_{k}"] - before[f"{d}_{k}"] for k, _ in CHK_COUNTERS) for d in LOOPBACK_DIRECTIONS)
    wait_cycles(bus, prefix, drain_cycles, drained)
    return {k: (after[k] - before[k]) % 2**32 for k in after}


def demo(bus, prefix=CORE_NAMES["rifl"], frame_bits=256, rates=(0, 1e-6, 1e-5, 1e-4), cycles=20_000,
         up_cycles=2_000_000):
    """Report delivered/lost/duplicated per direction at a few bit error rates, `cycles` SoC clock cycles of
    traffic each; raise if the links are not up within `up_cycles` cycles or on any loss. All waits count
    the SoC's own clock (the `cycles` CSR), so a slow simulator only slows the demo down."""
    if not wait_cycles(bus, prefix, up_cycles, lambda: _links_up(bus, prefix)):
        raise RuntimeError(f"RIFL links did not come up within {up_cycles} cycles "
                           f"(status {reg(bus, prefix, 'status').read():#x})")
    lines = []
    for ber in rates:
        d = run_rate(bus, ber, prefix, frame_bits, cycles)
        for di in LOOPBACK_DIRECTIONS:
            lines.append(f"rifl BER {ber:g} {di}: " + " ".join(f"{k.replace('_', ' ')} {d[f'{di}_{k}']}"
                                                              for k, _ in LOOPBACK_DIR_COUNTERS))
            bad = sum(d[f"{di}_{k}"] for k in CHK_FAULTS)
            if bad or d[f"{di}_sent"] == 0 or d[f"{di}_delivered"] != d[f"{di}_sent"]:
                raise RuntimeError("RIFL delivery mismatch: " + lines[-1])
        lines.append(f"rifl BER {ber:g}: {cycles} cycles, replays A {d['a_replays']} B {d['b_replays']}")
    return lines

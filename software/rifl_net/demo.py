"""RIFL network demo over a live SoC (make sim): 4 hosts and a 4-port RIFL switch on chip, traffic from every host
to every other, independent bit errors on every link, one forced undetectable error; raises on any loss."""
from cores.rifl.common import CHANNEL_RANDOM_MAX_BITS, CHK_COUNTERS, CHK_FAULTS
from cores.rifl_net.common import NET_CONTROL, net_block_counters
from soc.common import CORE_NAMES
from software.rifl.demo import random_thresholds, reg, wait_cycles


def _hosts(bus, prefix):
    n = 0
    while hasattr(bus.regs, f"{prefix}_h{n}_sent"):
        n += 1
    return n


def set_ber(bus, prefix, ber, frame_bits=64, links=None):
    """Independent bit errors at `ber` on every link (or those of `links`), both directions."""
    words = random_thresholds(ber, frame_bits)
    value = sum(w << (32 * k) for k, w in enumerate(words[:CHANNEL_RANDOM_MAX_BITS]))
    for link in range(_hosts(bus, prefix)) if links is None else links:
        reg(bus, prefix, f"ber{link}").write(value)


def snapshot(bus, prefix):
    n = _hosts(bus, prefix)
    return {name: reg(bus, prefix, name).read() for name, _ in net_block_counters(n, 2 * n)}


def run_phase(bus, prefix, cycles, force_channel=None, drain_cycles=400_000):
    """Generators on for `cycles` SoC cycles (a codeword forced on `force_channel` halfway), then off until every
    packet sent is accounted for; returns the counter deltas and per-name totals over the hosts."""
    n = _hosts(bus, prefix)
    before = snapshot(bus, prefix)
    reg(bus, prefix, "control").write(NET_CONTROL.pack(enable=1, random=1))
    wait_cycles(bus, prefix, cycles // 2)
    if force_channel is not None:
        reg(bus, prefix, "force").write(1 << force_channel)
    wait_cycles(bus, prefix, cycles - cycles // 2)
    reg(bus, prefix, "control").write(NET_CONTROL.pack(random=1))
    d = {}

    def drained():
        after = snapshot(bus, prefix)
        d.update({k: (after[k] - before[k]) % 2**32 for k in after})
        return sum(d[f"h{h}_sent"] for h in range(n)) <= sum(d[f"h{h}_{k}"] for h in range(n) for k, _ in CHK_COUNTERS)
    wait_cycles(bus, prefix, drain_cycles, drained)
    totals = {k: sum(d[f"h{h}_{k}"] for h in range(n)) for k in ["sent"] + [k for k, _ in CHK_COUNTERS]}
    return d, totals


def demo(bus, prefix=CORE_NAMES["rifl_net"], rates=(0, 1e-5, 1e-4), cycles=20_000, up_cycles=2_000_000):
    """Traffic at a few bit error rates (independent errors on every link), then one forced codeword on the
    link from host 1: report delivered/lost/duplicated/corrupted, replays and channel errors; raise on any
    loss, duplicate or reordering, or if the forced error is not counted as undetected."""
    n = _hosts(bus, prefix)
    if not wait_cycles(bus, prefix, up_cycles, lambda: reg(bus, prefix, "status").read() == 2**n - 1):
        raise RuntimeError(f"RIFL network links did not come up (status {reg(bus, prefix, 'status').read():#x})")
    lines = []
    for ber in rates:
        set_ber(bus, prefix, ber)
        d, t = run_phase(bus, prefix, cycles)
        errors = sum(d[f"c{c}_errors"] for c in range(2 * n))
        lines.append(f"rifl_net {n} hosts, BER {ber:g}: " + " ".join(f"{k.replace('_', ' ')} {t[k]}" for k in t) +
                     f"; channel errors {errors}, replays {d['replays']}, VOQ frames {d['fc_voq_frames']}")
        if t["sent"] == 0 or t["delivered"] != t["sent"] or sum(t[k] for k in CHK_FAULTS):
            raise RuntimeError("RIFL network delivery mismatch: " + lines[-1])
    set_ber(bus, prefix, 0)
    forced = 2                                   # channel 2: host 1 -> switch
    d, t = run_phase(bus, prefix, cycles, force_channel=forced)
    lines.append(f"rifl_net forced codeword on channel {forced}: undetected {d[f'c{forced}_undetected']}, "
                 f"delivered {t['delivered']}, corrupted {t['corrupted']} of {t['sent']} (a codeword in padding "
                 f"is harmless)")
    if d[f"c{forced}_undetected"] != 1 or t["corrupted"] > 1 or t["delivered"] + t["corrupted"] != t["sent"]:
        raise RuntimeError("RIFL network forced-error mismatch: " + lines[-1])
    return lines

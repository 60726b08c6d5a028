"""Host side of the switch SoC block (cores.switch.soc_block.SwitchBlock): load points and results."""
import time

from cores.switch.common import BLOCK_CONTROL, BLOCK_INFO, BLOCK_RESULTS, BLOCK_STATUS, LOAD_ONE
from soc.common import CORE_NAMES


def summarise(r, ports, beats, duration=None):
    """Throughput (delivered cells x beats over ports x cycles of the run) and latency in cell times."""
    cycles = duration or max(1, r["cycles"])
    rx = max(1, r["rx_cells"])
    return {
        "throughput": r["rx_cells"] * beats / (ports * cycles),
        "mean_latency_cells": r["lat_sum"] / rx / beats,
        "max_latency_cells": r["lat_max"] / beats,
    }


def run_point(bus, load, offset=0, duration=20000, prefix=CORE_NAMES["switch"], timeout=60.0):
    """Run one load point (`load` in cells per cell time, 0..1) and return the raw counters."""
    regs = bus.regs

    def reg(name):
        return getattr(regs, f"{prefix}_{name}")
    reg("load").write(min(LOAD_ONE, int(round(load * LOAD_ONE))))
    reg("pattern").write(offset)
    reg("duration").write(duration)
    reg("control").write(BLOCK_CONTROL.pack(start=1))
    t0 = time.time()
    while not BLOCK_STATUS.get(reg("status").read(), "done"):
        if time.time() - t0 > timeout:
            raise RuntimeError(f"switch run at load {load} did not finish within {timeout} s")
        time.sleep(0.01)
    return {name: reg(name).read() for name, _ in BLOCK_RESULTS}


def demo(bus, prefix=CORE_NAMES["switch"], cell_times=200):
    """Three load points of `cell_times` cell times through the on-chip RIFL switch; raises if a cell is lost
    or misrouted, or if a full-load permutation does not run at line rate."""
    info = BLOCK_INFO.unpack(getattr(bus.regs, f"{prefix}_info").read())
    ports, beats, iterations = info["ports"], info["beats"], info["iterations"]
    lines = [f"switch: {ports} ports, {beats} cycles a cell time, {iterations}-SLIP"]
    duration = cell_times * beats
    for load, offset in ((0.3, 0), (0.8, 0), (1.0, 1)):
        r = run_point(bus, load, offset, duration, prefix)
        if r["errors"] or r["drops"] or r["collisions"] or r["rx_cells"] != r["tx_cells"]:
            raise RuntimeError(f"switch load {load}: {r}")
        s = summarise(r, ports, beats, duration)
        if not offset and load >= 0.8 and r["lat_max"] * r["rx_cells"] <= r["lat_sum"]:
            # Uniform destinations at this load always collide somewhere, so some cell must wait.
            raise RuntimeError(f"switch load {load}: every cell had the same latency, destinations not uniform: {r}")
        if offset and s["throughput"] < 0.9:
            raise RuntimeError(f"switch: a full-load permutation ran at {s['throughput']:.3f} of line rate")
        kind = "permutation" if offset else "uniform"
        lines.append(f"switch load {load:.2f} {kind}: {r['rx_cells']} cells, throughput {s['throughput']:.3f}, "
                     f"latency mean {s['mean_latency_cells']:.2f} max {s['max_latency_cells']:.2f} cell times")
    return lines

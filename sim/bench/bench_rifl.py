"""RIFL benchmark: goodput relative to the error-free goodput versus bit error rate (Verilated model of the
SoC block, sim/verilated/rifl.py), latency over a zero-delay channel and ECP5 figures for F = 256.

The SoC block (two endpoints, two channels, generators and checkers in both directions, always-ready
receivers) runs as a Verilated model with the round trip of 300 ns at 100 Gb/s expressed in frame slots: the
line carries one F-bit frame a cycle, so a cycle lasts F / 100 Gb/s and the round trip is 300 ns * 100 Gb/s / F
frames, split evenly between the two channels. Each BER point runs long enough for about 100+ channel errors
(both directions together, 1.3 x 100 expected; the table gives the count); goodput = numbered frames
accepted per cycle (both directions) divided by the same in an error-free run of the same build. The checkers must report zero lost, duplicated, out-of-order
or corrupted packets at every point.
"""
import functools
import os
import time

from migen.sim import run_simulation

from cores.rifl.common import (CHK_FAULTS, LOOPBACK_CONTROL, LOOPBACK_DIRECTIONS, check_frame_bits, efficiency,
                               holdoff_cycles, payload_bytes, replay_log2, rx_depth_for)
from cores.rifl.link import RIFLEndpoint
from cores.rifl.link_bench import RIFLLinkBench
from cores.rifl.soc_block import RIFLLoopback
from sim import ROOT
from sim.bench.ecp5 import point_digest, synth_point
from sim.bench.framework import BenchResult, Table, bench_parser, plot_path, report, run_with
from sim.bench.sweep import progress, sweep, sweep_stats, tasks
from sim.verilated import rifl as verilated
from sim.verilated import verilog_digest
from software.argtypes import checked, fraction, int_in, integer, names, positive_int
from software.rifl.demo import frame_error_threshold

LINE_RATE = 100e9
RTT_S = 300e-9
MIN_ERRORS = 100
MAX_CYCLES = 400_000_000   # cap per point (F=256 runs about 450k cycles/s as a Verilated model): never reached
                           # for BER >= 1e-9 at F >= 256, so every point sees about 100+ channel errors
REA_SOURCES = 4             # ECP5 figures of the reassembler: 4 contexts of 4094-byte packets (16 KiB)
REA_MAX_PACKET = 4094


def run_point_migen(frame_bits, latency, cycles, threshold, warm=60):
    """Quick mode's error-rate point: RIFLLoopback(frame_bits, latency) in Migen's simulator, its CSR storages
    set directly (cycle-exact, as the Verilated harness does). Generators on (1-bit error bursts) with the
    per-frame error threshold `threshold` both ways, `warm` cycles, `cycles` measured cycles, then the
    generators off and no errors for warm + 8 * latency cycles. Like sim.verilated.rifl.run_point but with a
    shorter warm-up and drain (that one: WARM_CYCLES, DRAIN_CYCLES) for short runs, so its figures are not
    those of a Verilated point. Returns every counter at the end and `frames` (numbered frames both
    endpoints accepted during the measured cycles)."""
    dut = RIFLLoopback(frame_bits, latency)
    cnt = dut.counters
    res = {}

    def proc():
        yield dut.control.storage.eq(LOOPBACK_CONTROL.pack(enable=1, burst=1))
        yield dut.err_ab.storage.eq(threshold)
        yield dut.err_ba.storage.eq(threshold)
        for _ in range(warm):
            yield
        a0, b0 = (yield cnt["a_rx_frames"]), (yield cnt["b_rx_frames"])
        for _ in range(cycles):
            yield
        res["frames"] = (yield cnt["a_rx_frames"]) - a0 + (yield cnt["b_rx_frames"]) - b0
        yield dut.control.storage.eq(LOOPBACK_CONTROL.pack(burst=1))
        yield dut.err_ab.storage.eq(0)
        yield dut.err_ba.storage.eq(0)
        for _ in range(warm + 8 * latency):
            yield
        for name, sig in cnt.items():
            res[name] = yield sig
    run_simulation(dut, [proc()])
    return res


def measure_latency(frame_bits):
    """Cycles from a beat accepted at A's sink to the same beat valid at B's source, zero-delay channel."""
    bench = RIFLLinkBench(frame_bits, latency=0)
    a, b = bench.a, bench.b
    res = {}

    def proc():
        yield b.source.ready.eq(1)
        for _ in range(40):        # link bring-up
            yield
        yield a.sink.valid.eq(1)
        yield a.sink.nbytes.eq(payload_bytes(frame_bits))
        yield a.sink.data.eq(0xABCDEF)
        while not (yield a.sink.ready):
            yield
        yield
        yield a.sink.valid.eq(0)
        n = 1
        while not (yield b.source.valid):
            yield
            n += 1
        res["latency"] = n
    run_simulation(bench, [proc()])
    return res["latency"]


@functools.lru_cache(maxsize=None)
def _loopback(frame_bits, latency):
    """The loopback's model, converted once per process (the driver converts it for the digest, and forked
    workers inherit it), built on first use."""
    return verilated.loopback(frame_bits, latency, build=False)


def _ber_gateware(p):
    return _loopback(p["frame_bits"], p["latency"]).digest


def ber_point(frame_bits, latency, cycles, threshold, quick):
    """Task: one error-rate point of RIFLLoopback(frame_bits, latency) with per-frame error threshold
    `threshold` for `cycles` measured cycles: the Verilated model (sim.verilated.rifl.run_point, progress
    reported to the sweep), or in Migen's simulator when `quick` (run_point_migen). Every counter and
    `frames`."""
    if quick:
        return run_point_migen(frame_bits, latency, cycles, threshold)
    return verilated.run_point(_loopback(frame_bits, latency).build(), cycles, threshold, progress=progress)


def latency_point(frame_bits):
    """Task: measure_latency(frame_bits)."""
    return {"latency": measure_latency(frame_bits)}


def _latency_gateware(p):
    return verilog_digest(RIFLLinkBench(p["frame_bits"], latency=0))


def ber_plan(quick, frame_sizes, bers, max_cycles=MAX_CYCLES):
    """[(F, latency, BER or None for the error-free reference, ber_point's parameters)] of every point."""
    base_cycles = 150 if quick else 400000
    plan = []
    for F in frame_sizes:
        latency = 4 if quick else round(RTT_S * LINE_RATE / F / 2)
        plan.append((F, latency, None, dict(frame_bits=F, latency=latency, cycles=base_cycles, threshold=0,
                                             quick=quick)))
        for ber in bers:
            thr = frame_error_threshold(ber, F)
            p_frame = thr / 2**32
            cycles = base_cycles if quick else min(max_cycles, max(base_cycles, int(1.3 * MIN_ERRORS / (2 * p_frame))))
            plan.append((F, latency, ber, dict(frame_bits=F, latency=latency, cycles=cycles, threshold=thr,
                                               quick=quick)))
    return plan


def ber_order(plan):
    """Indices of `plan`, the longest points (lowest BER, largest F) first, so that the last to finish are short."""
    return sorted(range(len(plan)), key=lambda i: -plan[i][3]["cycles"] * plan[i][0])


def run(quick=False, frame_sizes=None, bers=None, ecp5=True, max_cycles=MAX_CYCLES):
    """quick: Migen simulation of a small configuration at high error rates (seconds, no Verilated build).
    frame_sizes / bers: subsets of the full sweep; ecp5: include the synthesis; max_cycles: cap per point.
    Every BER point, latency and ECP5 run is a task of one sweep (sim.bench.sweep: every core or a cluster,
    cached)."""
    result = BenchResult("rifl")
    frame_sizes = frame_sizes or ([64] if quick else [256, 1024])
    bers = bers or ([1e-3] if quick else [1e-9, 1e-8, 1e-7, 1e-6, 1e-5, 1e-4])
    t0 = time.time()
    plan = ber_plan(quick, frame_sizes, bers, max_cycles)
    order = ber_order(plan)
    points = tasks(ber_point, [plan[i][3] for i in order], _ber_gateware)
    points += tasks(latency_point, [dict(frame_bits=F) for F in frame_sizes], _latency_gateware)
    synth = ecp5_points() if ecp5 and not quick else []
    results = sweep("rifl", points + synth)
    measured = {i: r for i, r in zip(order, results)}
    walls = {i: w for i, w in zip(order, sweep_stats().walls)}
    latencies = results[len(order):len(order) + len(frame_sizes)]

    table = Table("Goodput vs BER (relative to error-free, same build), RTT 300 ns at 100 Gb/s",
                  ["F (bits)", "RTT (frames)", "BER", "cycles", "channel errors", "replays", "goodput ratio",
                   "recovery per error (RTT)", "wall (s)", "lost+dup+ooo+corrupt"])
    plot_data = {}
    for i, (F, latency, ber, params) in enumerate(plan):
        rtt = 2 * latency
        r = measured[i]
        if ber is None:
            ref_rate = r["frames"] / params["cycles"]
            plot_data[F] = []
            continue
        cycles = params["cycles"]
        errors = sum(r[f"{d}_channel_errors"] for d in LOOPBACK_DIRECTIONS)
        ratio = r["frames"] / cycles / ref_rate
        bad = sum(r[f"{d}_{k}"] for d in LOOPBACK_DIRECTIONS for k in CHK_FAULTS)
        if bad or any(r[f"{d}_sent"] != r[f"{d}_delivered"] for d in LOOPBACK_DIRECTIONS):
            raise RuntimeError(f"RIFL bench: delivery mismatch at F={F} BER={ber}: {r}")
        lost_slots = (ref_rate - r["frames"] / cycles) * cycles / 2   # per direction
        per_error = lost_slots / max(1, errors / 2) / rtt if errors else 0.0
        table.add(F, rtt, ber, cycles, errors, r["a_replays"] + r["b_replays"], ratio, per_error, round(walls[i], 1),
                  bad)
        plot_data[F].append((ber, ratio))
    table.notes = (f"Error model: one error event per corrupted frame (2^32 (1-(1-BER)^F) threshold); each point runs "
                   f"1.3 x {MIN_ERRORS} / (2 p_frame) cycles (cap {max_cycles}), so it expects {int(1.3 * MIN_ERRORS)} "
                   f"channel errors (both directions); 'recovery per error' = frame slots lost (both directions "
                   f"together) per channel error / RTT. Goal >= 0.99 at "
                   f"BER 1e-7. Payload efficiency (F-16)/F: " +
                   ", ".join(f"F={F}: {efficiency(F):.4f}" for F in frame_sizes) + f". Wall time {time.time() - t0:.0f} s.")
    result.tables.append(table)
    result.data["goodput"] = {str(F): v for F, v in plot_data.items()}

    lat = Table("Latency, zero-delay channel", ["F (bits)", "cycles TX sink -> RX source", "ns at 100 Gb/s"])
    for F, r in zip(frame_sizes, latencies):
        lat.add(F, r["latency"], r["latency"] * F / LINE_RATE * 1e9)
    result.tables.append(lat)

    sizes = Table("Buffers for the 300 ns round trip", ["F (bits)", "RTT (frames)", "hold-off (cycles)",
                                                         "replay buffer (frames)", "receive buffer (frames)"])
    for F in frame_sizes:
        rtt = 8 if quick else 2 * round(RTT_S * LINE_RATE / F / 2)
        sizes.add(F, rtt, holdoff_cycles(rtt), 1 << replay_log2(rtt), rx_depth_for(rtt))
    result.tables.append(sizes)

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 4))
        for F, pts in plot_data.items():
            ax.semilogx([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"F = {F} bits")
        ax.axhline(0.99, color="grey", ls="--", lw=0.8)
        ax.set_xlabel("bit error rate")
        ax.set_ylabel("goodput / error-free goodput")
        ax.legend()
        ax.grid(True, which="both", alpha=0.3)
        path = plot_path("rifl_goodput")
        fig.tight_layout()
        fig.savefig(path, dpi=100)
        plt.close(fig)
        result.plots.append(path)
    except ImportError:
        pass

    if synth:
        result.tables += ecp5_tables(results[-len(synth):])
    return result


def ecp5_endpoint():
    """ECP5 factory (sim.bench.ecp5.synth_point): one endpoint at F = 256, RTT 118 frames (block RAMs with
    their output registers, cores.lib.block_ram)."""
    from cores.lib.block_ram import ecp5_special_overrides
    m = RIFLEndpoint(256, rtt=2 * round(RTT_S * LINE_RATE / 256 / 2))
    return (m, [m.tx_frame, m.rx_frame, m.link_up] + list(m.sink.flatten()) + list(m.source.flatten()),
            ecp5_special_overrides)


def stream_ios(m):
    """The ports of a module whose interface is its `sink` and `source` streams (the Layer 2 segmenter and
    reassembler) for an out-of-context run: (module, ios)."""
    return m, list(m.sink.flatten()) + list(m.source.flatten())


def ecp5_l2(part):
    """ECP5 factory of the Layer 2 segmenter or reassembler (F = 256, 256-bit beats; the reassembler with
    REA_SOURCES contexts of REA_MAX_PACKET bytes, which fit the 25F's block RAM)."""
    from cores.rifl.l2 import L2Reassembler, L2Segmenter
    return stream_ios(L2Segmenter(256, 256) if part == "segmenter" else
                      L2Reassembler(256, 256, n_sources=REA_SOURCES, max_packet=REA_MAX_PACKET))


def ecp5_aligner(frame_bits=256):
    """ECP5 factory of the bit aligner (F = frame_bits)."""
    from cores.rifl.align import RIFLAligner
    m = RIFLAligner(frame_bits)
    return m, [m.rx_bits, m.rx_frame, m.locked]


# part: (module, factory, its arguments, build name, nextpnr target MHz: issue 18's 125 where it was met)
ECP5_PARTS = {"endpoint": ("RIFLEndpoint", "ecp5_endpoint", {}, "rifl_ep256", 125),
              "segmenter": ("L2Segmenter", "ecp5_l2", {"part": "segmenter"}, "rifl_l2segmenter256", 100),
              "reassembler": ("L2Reassembler", "ecp5_l2", {"part": "reassembler"}, "rifl_l2reassembler256", 100),
              "aligner": ("RIFLAligner", "ecp5_aligner", {}, "rifl_riflaligner256", 100)}


def _ecp5_parts(parts):
    parts = [p for part in parts for p in (("segmenter", "reassembler") if part == "l2" else (part,))]
    unknown = set(parts) - set(ECP5_PARTS)
    if unknown:
        raise ValueError(f"unknown ECP5 parts {sorted(unknown)}: endpoint, l2, segmenter, reassembler, aligner")
    return [p for p in ECP5_PARTS if p in parts]


def ecp5_points(parts=("endpoint", "l2", "aligner"), seed=1):
    """synth_point tasks of the out-of-context ECP5 (LFE5U-25F) figures of `parts` (endpoint, l2 (=
    segmenter,reassembler), segmenter, reassembler, aligner), in ECP5_PARTS order, nextpnr seed `seed`."""
    return tasks(synth_point, [dict(factory=f"sim.bench.bench_rifl:{ECP5_PARTS[p][1]}", args=ECP5_PARTS[p][2],
                                    name=ECP5_PARTS[p][3], device="LFE5U-25F", freq_mhz=ECP5_PARTS[p][4],
                                    seed=seed)
                               for p in _ecp5_parts(parts)], point_digest)


def ecp5_tables(results, parts=("endpoint", "l2", "aligner")):
    """Tables of ecp5_points(parts)' results: one endpoint at F = 256 (RTT 118 frames), the Layer 2
    segmenter and reassembler and the bit aligner (F = 256)."""
    tables = []
    cols = ["module", "LUT4", "FF", "DP16KD", "LUTRAM", "Fmax (MHz)", "line rate at Fmax (Gb/s)"]
    figures = dict(zip(_ecp5_parts(parts), results))
    for r in figures.values():
        if r["how"] != "placed and routed":
            raise RuntimeError(f"ECP5 run of {r}: {r['how']}")
    if "endpoint" in figures:
        t = Table(f"ECP5 (LFE5U-25F), one endpoint, F = 256, RTT 118 frames, target {figures['endpoint']['target_mhz']} MHz, "
                  f"seed {figures['endpoint']['seed']}", cols)
        tables.append(t)
        r = figures.pop("endpoint")
        fmax = min(r["fmax_mhz"].values()) if r["fmax_mhz"] else 0
        t.add("RIFLEndpoint", r["lut4"], r["ff"], r["bram_dp16kd"], r["lutram"], fmax, fmax * 1e6 * 256 / 1e9)
    if figures:
        t = Table("ECP5 (LFE5U-25F), Layer 2 gateware (F = 256, 256-bit beats; reassembler "
                  f"{REA_SOURCES} x {REA_MAX_PACKET} bytes) and bit aligner (F = 256)", cols)
        t.notes = "Line rate at Fmax: one 256-bit frame (or Layer 1 beat) a cycle."
        for part, r in figures.items():
            fmax = min(r["fmax_mhz"].values()) if r["fmax_mhz"] else 0
            t.add(ECP5_PARTS[part][0], r["lut4"], r["ff"], r["bram_dp16kd"], r["lutram"], fmax,
                  fmax * 1e6 * 256 / 1e9)
        tables.append(t)
    return tables


def versa_serdes_build(frame_bits=64, linerate=2.5e9, seed=1, two_boards=False):
    """Synthesise, place and route (yosys, nextpnr-ecp5 for the LFE5UM5G-45F, ecppack) the Versa DCU target
    of cores/rifl/serdes.py (loopback, or two_boards) under build/rifl/versa_serdes[2]_F<F>; returns a Table
    with nextpnr's utilisation and Fmax per clock."""
    import json
    import sys
    from litex_boards.platforms import lattice_versa_ecp5
    from cores.rifl.serdes import RIFLVersaSerDes
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    platform = lattice_versa_ecp5.Platform(toolchain="trellis")
    top = RIFLVersaSerDes(platform, frame_bits=frame_bits, linerate=linerate, two_boards=two_boards)
    out = os.path.join(ROOT, "build", "rifl", f"versa_serdes{'2' if two_boards else ''}_F{frame_bits}")
    os.makedirs(out, exist_ok=True)
    platform.toolchain._pnr_opts += " --report report.json"
    t0 = time.time()
    platform.build(top, build_dir=os.path.relpath(out, os.getcwd()), build_name="rifl_versa", seed=seed,
                   timingstrict=False, ignoreloops=True)
    with open(os.path.join(out, "report.json")) as f:
        rep = json.load(f)
    util = rep.get("utilization", {})
    what = "two boards (elastic buffer, periodic IDLE)" if two_boards else "SMA loopback"
    table = Table(f"ECP5 Versa (LFE5UM5G-45F): RIFL link on DCU0 channel 1, {what}, F = {frame_bits}, "
                  f"{linerate / 1e9:g} Gb/s 8b/10b, with traffic generator and checker", ["resource / clock", "used", "available or target"])
    for k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD", "TRELLIS_RAMW", "DCUA", "EXTREFB"):
        if k in util:
            table.add(k, util[k].get("used", 0), util[k].get("available", 0))
    for clk, v in rep.get("fmax", {}).items():
        table.add(f"Fmax {clk} (MHz)", round(v["achieved"], 1), round(v["constraint"], 1))
    table.notes = f"yosys + nextpnr-ecp5 + ecppack, {time.time() - t0:.0f} s."
    return table


def main(argv=None):
    """`python -m sim.bench.bench_rifl`: the sweep or a subset of it, the ECP5 tables alone (--ecp5-only) or the
    Versa DCU build (--versa)."""
    frame_bits = checked(integer, check_frame_bits)
    parser = bench_parser(run, __doc__)
    parser.add_argument("--frame-bits", dest="frame_sizes", metavar="F", type=frame_bits, action="append",
                        help="frame size(s) to run (default 256, 1024)")
    parser.add_argument("--ber", dest="bers", metavar="BER", type=fraction, action="append",
                        help="bit error rate(s) to run")
    parser.add_argument("--max-cycles", type=positive_int, default=MAX_CYCLES, help="cycle cap per point")
    parser.add_argument("--ecp5-only", metavar="PARTS", type=names([*ECP5_PARTS, "l2"], "ECP5 parts", empty=False),
                        help="only the ECP5 tables of endpoint,l2,segmenter,reassembler,aligner")
    parser.add_argument("--ecp5-seed", type=int_in(0), default=1,
                        help="nextpnr seed of the ECP5 runs (with --ecp5-only)")
    parser.add_argument("--versa", type=frame_bits, metavar="F",
                        help="only build the Versa DCU target for frame size F")
    parser.add_argument("--two-boards", action="store_true", help="with --versa: the two-board target")
    args = parser.parse_args(argv)
    if args.two_boards and not args.versa:
        parser.error("--two-boards goes with --versa F")
    if args.versa:
        print(versa_serdes_build(args.versa, two_boards=args.two_boards).markdown())
        return 0
    if args.ecp5_only:
        for t in ecp5_tables(sweep("rifl", ecp5_points(args.ecp5_only, args.ecp5_seed)), args.ecp5_only):
            print(t.markdown())
        return 0
    return report(run_with(run, args))


if __name__ == "__main__":
    raise SystemExit(main())

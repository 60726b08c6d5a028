"""Sparsr benchmark: receiver input rate, wire efficiency versus row density, PCIe DMA path, ECP5 figures.

* Input rate: frames queued back to back into the RTL receiver: words accepted per cycle between the first
  and the last word (goal 1.0, the line rate), for the most expensive frames (four LIL slots filling the
  payload, raw pieces) and random row mixes; in Migen simulation, and (full mode) a long run of the
  generated Verilog as a Verilated model, checked against the reference model.
* PCIe (full mode): write frames through LitePCIe's endpoint and DMA reader into the receiver, the host
  modelled at TLP level (sim/models/pcie.py), as a Verilated model: words per cycle at the receiver.
* Wire efficiency: row bytes delivered per frame byte, LIL+raw (the encoder's raw escape) against raw
  only (every row sent raw, the reference), for rows of 0..256 non-zero lanes.
* ECP5: LUT4/FF/BRAM/Fmax of the receiver (WMEM 16 rows, XMEM 8 rows) out of context (full mode only).
"""
import random

from cores.sparsr.common import FRAME_WORDS, ROW_LANES, ROW_WORDS, KIND_LIL, XMEM_BRAM, XMEM_DRAM, make_tag
from cores.sparsr.receiver import SparsrReceiver
from sim.bench.framework import BenchResult, Table, plot_path
from software.sparsr.frames import encode_rows, frame, lil_payload, status_frame
from software.sparsr.reference import CardModel
from software.sparsr.rows import random_row
from sim.models.sparsr_link import MigenLink
from cores.sparsr.common import CMD_WRITE_WMEM

DENSITIES = (0, 1, 8, 16, 32, 48, 64, 80, 102, 103, 128, 204, 256)
# The goal: PCIe Gen2 x1 (5 GT/s, 8b/10b) carries 4 Gb/s = 125 M words/s, one word per cycle at 125 MHz (the
# AC701 target's sys clock). synth_ecp5 reports the achieved Fmax when the target is missed.
ECP5_TARGET_MHZ = 125


def _frames(rng, n_mixed_rows, wmem_rows):
    """Expensive hand-made frames, then random rows of random density (encoder)."""
    frames = []
    for counts in ((48, 48, 49, 49), (0, 0, 0, 0), (102, 90), (60, 60, 60)):
        slots = []
        for k, n in enumerate(counts):
            slots += [make_tag(KIND_LIL, n), k % wmem_rows] + lil_payload(random_row(rng, n))
        frames.append(frame(CMD_WRITE_WMEM, slots, len(counts)))
    rows = [random_row(rng, rng.choice(DENSITIES)) for _ in range(n_mixed_rows)]
    for k in range(0, len(rows), wmem_rows):
        frames += encode_rows(0, rows[k:k + wmem_rows])
    return frames


def input_rate(n_mixed_rows, seed=1, wmem_rows=8):
    frames = _frames(random.Random(seed), n_mixed_rows, wmem_rows)
    link = MigenLink(SparsrReceiver(wmem_rows, 4, with_csr=False), seed=seed)
    model = CardModel(wmem_rows, 4)
    try:
        for f in frames + [status_frame()]:
            link.send_frame(f)
            model.receive(f)
        answer = link.recv_frame()
    finally:
        link.close()
    if answer[3] != model.counters["frames_ok"]:
        raise RuntimeError("receiver accepted a different number of frames than the model")
    return len(frames) + 1, link.words_in, link.input_rate()


def input_rate_verilog(n_mixed_rows, seed=3, wmem_rows=8):
    """The long run: the same kind of frames through the generated Verilog (Verilated model), at full rate."""
    from sim.verilated.sparsr import VerilatedReceiver
    frames = _frames(random.Random(seed), n_mixed_rows, wmem_rows) + [status_frame()]
    model = CardModel(wmem_rows, 4)
    expected = [a for f in frames for a in model.receive(f)]
    run = VerilatedReceiver(wmem_rows, 4).run(frames, seed=seed)
    if run.answers != expected or run.counters != model.counters:
        raise RuntimeError("Verilated receiver disagrees with the reference model")
    return len(frames), run.words_in, run.input_rate


def pcie_rate(n_rows, seed=4, ready_prob=1.0, valid_prob=1.0, interleave=True, frames_per_descriptor=1, wmem_rows=8):
    """Write frames (random rows) + status through LitePCIe's DMA reader into the receiver (Verilated model,
    host at TLP level): receiver words per cycle between its first and last word."""
    from sim.models.pcie import PCIeCard, exchange
    from sim.verilated import CycleSim
    rng = random.Random(seed)
    rows = [random_row(rng, rng.choice(DENSITIES)) for _ in range(n_rows)]
    frames = [f for k in range(0, n_rows, wmem_rows) for f in encode_rows(0, rows[k:k + wmem_rows])]
    frames.append(status_frame())
    model = CardModel(wmem_rows, 4)
    expected = [a for f in frames for a in model.receive(f)]
    card = PCIeCard(wmem_rows, 4)
    sim = CycleSim(card, card.ports(), name="sparsr_pcie")
    try:
        answers, fires, _ = exchange(sim, frames, len(expected), seed=seed, ready_prob=ready_prob,
                                     valid_prob=valid_prob, interleave=interleave,
                                     frames_per_descriptor=frames_per_descriptor)
    finally:
        sim.close()
    if answers != expected:
        raise RuntimeError("PCIe path: answer frames disagree with the reference model")
    return len(frames), len(fires), len(fires) / (fires[-1] - fires[0] + 1)


def efficiency(n_rows=64, seed=2):
    rng = random.Random(seed)
    out = []
    for n in DENSITIES:
        rows = [random_row(rng, n) for _ in range(n_rows)]
        f_lil = len(encode_rows(0, rows))
        f_raw = len(encode_rows(0, rows, allow_lil=False))
        out.append(dict(nonzero=n, lil=n_rows * ROW_WORDS / (f_lil * FRAME_WORDS),
                        raw=n_rows * ROW_WORDS / (f_raw * FRAME_WORDS), frames_lil=f_lil, frames_raw=f_raw))
    return out


def ecp5_receiver(wmem_rows=16, xmem_rows=8, dram=None):
    """ECP5 factory (sim.bench.ecp5.synth_point): SparsrReceiver with its block RAMs on DP16KD primitives with
    their output registers (cores.lib.block_ram); dram = (data bits, address bits): XMEM in DRAM through a
    LiteDRAM native port of that size (its streams are ports), else in block RAM."""
    from litedram.common import LiteDRAMNativePort
    from cores.lib.block_ram import ecp5_special_overrides
    port = None if dram is None else LiteDRAMNativePort("both", address_width=dram[1], data_width=dram[0])
    m = SparsrReceiver(wmem_rows=wmem_rows, xmem_rows=xmem_rows, with_csr=False,
                       xmem=XMEM_BRAM if port is None else XMEM_DRAM, dram_port=port)
    ios = [m.sink.valid, m.sink.ready, m.sink.data, m.sink.last, m.source.valid, m.source.ready,
           m.source.data, m.source.last, m.idle]
    if port is not None:
        ios += [port.cmd.valid, port.cmd.ready, port.cmd.last, port.cmd.we, port.cmd.addr,
                port.wdata.valid, port.wdata.ready, port.wdata.data, port.wdata.we,
                port.rdata.valid, port.rdata.ready, port.rdata.data]
    return m, ios, ecp5_special_overrides


def run(quick=False):
    result = BenchResult("sparsr")
    n_frames, words, rate = input_rate(4 if quick else 48)
    t = Table("Receiver input rate, unthrottled host (Migen simulation; long run: generated Verilog in Verilator)",
              ["frames", "words", "words/cycle", "goal", "ratio to goal"])
    t.add(n_frames, words, rate, 1.0, rate / 1.0)
    if not quick:
        n_frames, words, vrate = input_rate_verilog(2000)
        t.add(f"{n_frames} (Verilator, generated Verilog)", words, vrate, 1.0, vrate / 1.0)
        result.data["input_rate_verilog"] = vrate
    result.tables.append(t)
    result.data["input_rate"] = rate

    if not quick:
        t = Table("PCIe: write frames through LitePCIe's endpoint and DMA reader into the receiver "
                  "(Verilator, host modelled at TLP level, 64-bit Gen2 x1 datapath, completions of 128 bytes)",
                  ["host", "completions", "frames per DMA descriptor", "frames", "words", "words/cycle",
                   "goal", "ratio to goal"],
                  notes="words/cycle at the receiver's input between its first and last word; `host` is the "
                        "probability that the host model offers a completion beat / takes a card TLP beat "
                        "in a cycle; completions answer the oldest pending read first (in order) or a random "
                        "one of up to 8 (interleaved).")
        pcie = []
        for prob, interleave, per_desc in ((1.0, False, 1), (1.0, False, 16), (1.0, True, 16), (0.8, True, 16),
                                           (0.5, True, 16)):
            n, w, r = pcie_rate(64, ready_prob=prob, valid_prob=prob, interleave=interleave,
                                frames_per_descriptor=per_desc)
            order = "interleaved" if interleave else "in order"
            t.add(prob, order, per_desc, n, w, r, 1.0, r)
            pcie.append(dict(host_prob=prob, completions=order, frames_per_descriptor=per_desc, frames=n,
                             words=w, rate=r))
        result.tables.append(t)
        result.data["pcie"] = pcie

    eff = efficiency(16 if quick else 256)
    t = Table("Wire efficiency: row bytes delivered per frame byte",
              ["non-zero lanes", "density", "frames LIL+raw", "frames raw only", "LIL+raw", "raw only",
               "gain"],
              notes="raw only is the reference: every row sent raw, split in pieces. The encoder switches to "
                    "raw above 102 non-zero lanes, so both coincide there.")
    for e in eff:
        t.add(e["nonzero"], e["nonzero"] / ROW_LANES, e["frames_lil"], e["frames_raw"], e["lil"], e["raw"],
              e["lil"] / e["raw"])
    result.tables.append(t)
    result.data["efficiency"] = eff

    if not quick:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.plot([e["nonzero"] for e in eff], [e["lil"] for e in eff], "o-", label="LIL + raw escape")
        ax.plot([e["nonzero"] for e in eff], [e["raw"] for e in eff], "s--", label="raw only")
        ax.set_xlabel("non-zero lanes per row (of 256)")
        ax.set_ylabel("row bytes / frame byte")
        ax.set_yscale("log")
        ax.legend()
        fig.tight_layout()
        path = plot_path("sparsr_efficiency")
        fig.savefig(path)
        result.plots.append(path)

        from sim.bench.ecp5 import point_digest, synth_point
        from sim.bench.sweep import sweep, tasks
        (r,) = sweep("sparsr", tasks(synth_point, [dict(factory="sim.bench.bench_sparsr:ecp5_receiver", args={},
                                                         name="sparsr_rx", device="LFE5U-45F",
                                                         freq_mhz=ECP5_TARGET_MHZ)], point_digest))
        if r["how"] != "placed and routed":
            raise RuntimeError(f"ECP5 run of the Sparsr receiver: {r['how']}")
        t = Table("ECP5 (LFE5U-45F, out of context): SparsrReceiver, WMEM 16 rows, XMEM 8 rows",
                  ["LUT4", "FF", "DP16KD", "LUTRAM", "Fmax MHz", "target MHz", "words/s at Fmax (Gb/s)"])
        fmax = min(r["fmax_mhz"].values()) if r["fmax_mhz"] else 0.0
        t.add(r["lut4"], r["ff"], r["bram_dp16kd"], r["lutram"], fmax, r["target_mhz"], fmax * 1e6 * 32 / 1e9)
        result.tables.append(t)
        result.data["ecp5"] = r
    print(result.markdown())
    result.write()
    return result


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

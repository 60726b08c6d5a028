"""Sparsr with XMEM in DRAM: the DMA's XMEM -> WMEM rows against the DRAM's bandwidth, in the same run.

The receiver with DRAM_XMEM_ROWS XMEM rows on LiteDRAM's SDRAM models (sim.models.dram: SDR like the
Colorlight's, DDR3 like the Versa's), Verilated (sim.verilated.sparsr): raw rows and LIL rows written into
XMEM at full rate, copied to WMEM by the DMA (steady state), and the DRAM's own read and write rates on a
native port (LiteDRAM's DMA reader and writer streaming consecutive words on the same crossbar while the
receiver is idle); every answer checked against the reference model.
"""
import random

from cores.sparsr.common import FRAME_WORDS, ROW_LANES, ROW_BYTES, CMD_WRITE_XMEM
from sim.bench.framework import BenchResult, Table
from software.sparsr.rows import random_row
from software.sparsr.frames import encode_rows, dma_frame, status_frame
from software.sparsr.reference import CardModel

DRAM_XMEM_ROWS = 4096
BOARD_CLK_HZ = 60e6           # rows/s at the Versa build's sys clock (boards/lattice_versa_ecp5.py)
LIL_LANES = 48


def dram_rates(dram, wmem_rows, probe_words, seed=5):
    """XMEM in DRAM model `dram`: raw rows and LIL rows (LIL_LANES lanes) written into XMEM at full rate, DMA'd
    into WMEM (8 rows, then wmem_rows: the difference is the steady state), the DRAM's native read and write
    streams of `probe_words` words. Rates in bytes or words per cycle, DMA in cycles a row."""
    from sim.verilated.sparsr import VerilatedReceiver, WAIT, Probe
    rng = random.Random(seed)
    card = VerilatedReceiver(wmem_rows, DRAM_XMEM_ROWS, dram=dram)
    raw = encode_rows(0, [random_row(rng, ROW_LANES) for _ in range(wmem_rows)], CMD_WRITE_XMEM)
    lil = encode_rows(wmem_rows, [random_row(rng, LIL_LANES) for _ in range(wmem_rows)], CMD_WRITE_XMEM)
    first = min(8, wmem_rows)
    items = raw + [WAIT] + lil + [WAIT]
    for xr in (0, wmem_rows):
        items += [dma_frame(xr, 0, first), WAIT, dma_frame(xr, 0, wmem_rows), WAIT]
    items += [Probe(write=False, words=probe_words), Probe(write=True, words=probe_words), status_frame()]
    model = CardModel(wmem_rows, DRAM_XMEM_ROWS)
    expected = [a for f in items if isinstance(f, list) for a in model.receive(f)]
    run = card.run(items, seed=seed)
    if run.answers != expected or run.counters != model.counters:
        raise RuntimeError(f"XMEM in DRAM ({dram}): the Verilated receiver disagrees with the reference model")
    w = run.waits
    (_, _, rd_cycles), (_, _, wr_cycles) = run.probes
    native_bytes = card.native_bits // 8

    def per_row(k):          # DMA k (0: raw rows, 1: LIL rows): cycles a row in the steady state
        t_first, t_all = (w[i][1] - w[i][0] for i in (2 + 2 * k, 3 + 2 * k))
        return (t_all - t_first) / (wmem_rows - first) if wmem_rows > first else t_all / wmem_rows
    return dict(dram=dram, native_bits=card.native_bits,
                dram_read=probe_words * native_bytes / rd_cycles, dram_write=probe_words * native_bytes / wr_cycles,
                write_rate=len(raw) * FRAME_WORDS / (w[0][0] - run.first_word_cycle + 1),
                raw_cycles=per_row(0), lil_cycles=per_row(1))


def run(quick=False):
    result = BenchResult("sparsr_dram")
    mhz = f"{BOARD_CLK_HZ / 1e6:.0f} MHz"
    t = Table(f"XMEM in DRAM ({DRAM_XMEM_ROWS} rows, Verilated, LiteDRAM's SDRAM models): the DMA XMEM -> WMEM "
              "against the DRAM's bandwidth, measured in the same run",
              ["DRAM model", "native port (bits)", "DRAM read (B/cycle)", "DRAM write (B/cycle)",
               "raw rows into XMEM (words/cycle)", "DMA raw row (cycles)", "DMA raw (B/cycle)",
               "DMA / DRAM read", f"DMA raw rows/s at {mhz}", f"DMA LIL-{LIL_LANES} row (cycles)",
               f"DMA LIL-{LIL_LANES} rows/s at {mhz}"],
              notes="DRAM read/write: LiteDRAM's DMA reader/writer streaming consecutive native words on a port of "
                    "the same crossbar while the receiver is idle (the reference). DMA: steady state (a DMA of 8 "
                    "rows, then one of all WMEM's rows: the difference), from the DMA frame's last word until "
                    "the receiver is idle. A raw row is 1024 bytes; a LIL row of 48 lanes is 60 payload words. "
                    "The executor copies one 32-bit word a cycle into WMEM, which caps the DMA at 4 B/cycle "
                    "whatever the DRAM gives.")
    points = []
    for dram in ("sdr",) if quick else ("sdr", "ddr3"):
        d = dram_rates(dram, 8 if quick else 64, 1024 if quick else 16384)
        points.append(d)
        raw_bpc = ROW_BYTES / d["raw_cycles"]
        t.add(dram, d["native_bits"], d["dram_read"], d["dram_write"], d["write_rate"], d["raw_cycles"], raw_bpc,
              raw_bpc / d["dram_read"], BOARD_CLK_HZ / d["raw_cycles"], d["lil_cycles"],
              BOARD_CLK_HZ / d["lil_cycles"])
    result.tables.append(t)
    result.data["xmem_dram"] = points
    print(result.markdown())
    result.write()
    return result


if __name__ == "__main__":
    from sim.bench.framework import bench_main
    raise SystemExit(bench_main(run, __doc__))

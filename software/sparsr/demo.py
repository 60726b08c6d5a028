"""demo(bus): random rows of mixed density through the SoC block, read back and compared.

Rows go through `Sparsr` over an `EtherboneLink`; most batches are written to WMEM directly, every
fourth one to XMEM (half of it at its first rows, half at its last rows) and then copied by the card's DMA; a row past
the end of XMEM must be refused. With XMEM in DRAM the block's DRAM counters must show every stored XMEM word
written to the DRAM and the DMA's rows read from it. Raises on any mismatch or missing refusal.
"""
import random

from cores.sparsr.common import ROW_LANES, KIND_LIL, FRAME_WORDS, ROW_WORDS, CMD_WRITE_XMEM, CONFIG_ROWS_BITS
from software.sparsr.api import Sparsr, RowRefused
from software.sparsr.frames import encode_rows, choose_kind, stored_words
from software.sparsr.links import EtherboneLink
from software.sparsr.rows import random_row
from soc.common import CORE_NAMES

DEMO_DENSITIES = (0, 1, 8, 48, 49, 102, 103, 204, 256)


def demo(bus, n_rows=300, seed=1, prefix=CORE_NAMES["sparsr"]):
    link = EtherboneLink(bus, name=prefix)
    config = getattr(bus.regs, f"{prefix}_config").read()
    wmem_rows, xmem_rows = config & ((1 << CONFIG_ROWS_BITS) - 1), config >> CONFIG_ROWS_BITS
    in_dram = getattr(bus.regs, f"{prefix}_memories").read() & 1
    dram = [getattr(bus.regs, f"{prefix}_receiver_dram_words_{k}") for k in ("written", "read")] if in_dram else []
    dram0 = [r.read() for r in dram]
    api = Sparsr(link, wmem_rows, xmem_rows)
    rng = random.Random(seed)
    done = frames = frames_raw = lil = batches = xmem_words = xmem_batches = 0
    while done < n_rows:
        to_xmem = batches % 4 == 3
        batch = min(min(xmem_rows, wmem_rows) if to_xmem else wmem_rows, n_rows - done)
        rows = [random_row(rng, rng.choice(DEMO_DENSITIES)) for _ in range(batch)]
        lil += sum(choose_kind(r) == KIND_LIL for r in rows)
        frames += len(encode_rows(0, rows))
        frames_raw += len(encode_rows(0, rows, allow_lil=False))
        if to_xmem:
            # the first half of the rows at XMEM's first rows, the rest at its last rows
            half = (batch + 1) // 2
            for xr, part, wr in ((0, rows[:half], 0), (xmem_rows - (batch - half), rows[half:], half)):
                if part:
                    api.write_xmem(xr, part)
                    api.dma_xmem_to_wmem(xr, wr, len(part))
                    xmem_words += stored_words(encode_rows(xr, part, CMD_WRITE_XMEM), CMD_WRITE_XMEM, xmem_rows)
            xmem_batches += 1
        else:
            api.write_wmem(0, rows)
        back = api.read_wmem(0, batch)
        for i, (a, b) in enumerate(zip(rows, back)):
            if a != b:
                bad = [k for k in range(ROW_LANES) if a[k] != b[k]]
                raise RuntimeError(f"sparsr demo: batch {batches} row {i} differs in lanes {bad[:8]}")
        done += batch
        batches += 1
    try:
        api.write_xmem(xmem_rows, [random_row(rng, 8)])
        raise RuntimeError(f"sparsr demo: XMEM row {xmem_rows} (past the end) was not refused")
    except RowRefused:
        pass
    status = api.status()
    eff = done * ROW_WORDS / (frames * FRAME_WORDS)
    eff_raw = done * ROW_WORDS / (frames_raw * FRAME_WORDS)
    lines = [f"sparsr: {done} rows ({lil} LIL, {done - lil} raw) written in {frames} frames and read back: OK",
             f"sparsr: wire efficiency {eff:.2f} row bytes per frame byte ({frames_raw} frames and "
             f"{eff_raw:.2f} if every row went raw)",
             f"sparsr: card counters {status}"]
    if in_dram:
        written, read = (r.read() - r0 for r, r0 in zip(dram, dram0))
        if written != xmem_words or (xmem_batches and read == 0):
            raise RuntimeError(f"sparsr demo: the DRAM took {written} XMEM words (expected {xmem_words}) and "
                               f"returned {read}")
        lines.append(f"sparsr: XMEM in DRAM ({xmem_rows} rows): {written} words written, {read} read by the DMA")
    return lines

"""demo(bus): random rows of mixed density through the SoC block, read back and compared.

Rows go through `Sparsr` over an `EtherboneLink`; most batches are written to WMEM directly, every
fourth one to XMEM and then copied by the card's DMA. Raises on any mismatch or refusal.
"""
import random

from cores.sparsr.common import ROW_LANES, KIND_LIL, FRAME_WORDS, ROW_WORDS
from software.sparsr.api import Sparsr
from software.sparsr.frames import encode_rows, choose_kind
from software.sparsr.links import EtherboneLink
from soc.common import CORE_NAMES

DEMO_DENSITIES = (0, 1, 8, 48, 49, 102, 103, 204, 256)


def random_row(rng, n_nonzero):
    row = [0] * ROW_LANES
    for lane in rng.sample(range(ROW_LANES), n_nonzero):
        row[lane] = rng.getrandbits(32) or 1
    return row


def demo(bus, n_rows=300, seed=1, prefix=CORE_NAMES["sparsr"]):
    link = EtherboneLink(bus, name=prefix)
    config = getattr(bus.regs, f"{prefix}_config").read()
    wmem_rows, xmem_rows = config & 0xffff, config >> 16
    api = Sparsr(link, wmem_rows, xmem_rows)
    rng = random.Random(seed)
    done = frames = frames_raw = lil = batches = 0
    while done < n_rows:
        batch = min(xmem_rows if batches % 4 == 3 else wmem_rows, n_rows - done)
        rows = [random_row(rng, rng.choice(DEMO_DENSITIES)) for _ in range(batch)]
        lil += sum(choose_kind(r) == KIND_LIL for r in rows)
        frames += len(encode_rows(0, rows))
        frames_raw += len(encode_rows(0, rows, allow_lil=False))
        if batches % 4 == 3:
            api.write_xmem(0, rows)
            api.dma_xmem_to_wmem(0, 0, batch)
        else:
            api.write_wmem(0, rows)
        back = api.read_wmem(0, batch)
        for i, (a, b) in enumerate(zip(rows, back)):
            if a != b:
                bad = [k for k in range(ROW_LANES) if a[k] != b[k]]
                raise RuntimeError(f"sparsr demo: batch {batches} row {i} differs in lanes {bad[:8]}")
        done += batch
        batches += 1
    status = api.status()
    eff = done * ROW_WORDS / (frames * FRAME_WORDS)
    eff_raw = done * ROW_WORDS / (frames_raw * FRAME_WORDS)
    return [f"sparsr: {done} rows ({lil} LIL, {done - lil} raw) written in {frames} frames and read back: OK",
            f"sparsr: wire efficiency {eff:.2f} row bytes per frame byte ({frames_raw} frames and "
            f"{eff_raw:.2f} if every row went raw)",
            f"sparsr: card counters {status}"]

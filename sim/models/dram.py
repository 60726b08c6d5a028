"""DRAM in simulation: LiteDRAM's SDRAM model (`SDRAMPHYModel`: the chip and its PHY at DFI level) behind a
LiteDRAM core (controller and crossbar), as the boards' DRAM sits behind theirs; and a bandwidth probe.

    dram = DRAMModel("sdr")               # or "ddr3"; dram.crossbar.get_port(...) as on a board
    probe = BandwidthProbe(dram.crossbar.get_port(), write=False)

Models (`DRAM_MODELS`): "sdr" is the Colorlight's kind of memory (SDR SDRAM, 32-bit bus, 8 MiB: M12L64322A,
the 5A-75E's), its native port 32 bits wide; "ddr3" is the Versa's chip (MT41K64M16, DDR3 x16, 128 MiB) at
LiteDRAM's model rate 1:4, a 128-bit native port (the Versa's ECP5 PHY runs 1:2, its native port is 128 bits
wide too). Timings are the chips' at TIMING_CLK_FREQ (LiteX's litex_sim does the same: the simulated clock has
no real frequency).
"""
from migen import *

from litex.gen import LiteXModule

from litedram import modules
from litedram.core import LiteDRAMCore
from litedram.frontend.dma import LiteDRAMDMAReader, LiteDRAMDMAWriter
from litedram.phy.model import SDRAMPHYModel, sdram_module_nphases

TIMING_CLK_FREQ = int(100e6)
DRAM_MODELS = {"sdr": ("M12L64322A", 32), "ddr3": ("MT41K64M16", 16)}


def dram_module(model):
    """The LiteDRAM module (chip geometry and timings) and the data width of model `model`."""
    if model not in DRAM_MODELS:
        raise ValueError(f"DRAM model must be one of {sorted(DRAM_MODELS)}, got {model!r}")
    name, data_width = DRAM_MODELS[model]
    cls = getattr(modules, name)
    return cls(TIMING_CLK_FREQ, f"1:{sdram_module_nphases[cls.memtype]}"), data_width


class DRAMModel(LiteXModule):
    """SDRAMPHYModel + LiteDRAMCore for DRAM model `model` (DRAM_MODELS). `crossbar`: get ports from it.
    `size`: bytes of DRAM. The model needs no initialisation sequence: the controller runs from reset."""
    def __init__(self, model="sdr"):
        module, data_width = dram_module(model)
        self.phy = SDRAMPHYModel(module, data_width=data_width, clk_freq=TIMING_CLK_FREQ)
        self.core = LiteDRAMCore(self.phy, module.geom_settings, module.timing_settings, clk_freq=TIMING_CLK_FREQ)
        self.crossbar = self.core.crossbar
        g = module.geom_settings
        self.size = 2**(g.bankbits + g.rowbits + g.colbits) * self.phy.settings.databits // 8


class BandwidthProbe(LiteXModule):
    """Streams `n` words from (write=False) or to (write=True) consecutive addresses of a LiteDRAM native
    `port`, through LiteDRAM's DMA reader or writer (up to `fifo_depth` requests in flight), and counts cycles.

    `start` (a pulse, with `n`, taken then): begin; `busy` until the last word was returned by the port (read) or taken by
    it (write); `cycles`: cycles from `start` to the end of the last run."""
    def __init__(self, port, write=False, fifo_depth=32):
        self.start = Signal()
        self.n = Signal(32)
        self.busy = Signal()
        self.cycles = Signal(32)

        # # #

        n, issued, moved = Signal(32), Signal(32), Signal(32)
        if write:
            self.dma = dma = LiteDRAMDMAWriter(port, fifo_depth=fifo_depth)
            self.comb += dma.sink.data.eq(Replicate(issued, len(port.wdata.data) // 32))
            word = port.wdata.valid & port.wdata.ready
        else:
            self.dma = dma = LiteDRAMDMAReader(port, fifo_depth=fifo_depth)
            self.comb += [dma.sink.last.eq(issued == n - 1), dma.source.ready.eq(1)]
            word = dma.source.valid
        self.comb += [dma.sink.valid.eq(self.busy & (issued != n)), dma.sink.address.eq(issued)]
        self.sync += [
            If(self.start,
                self.busy.eq(1), n.eq(self.n), issued.eq(0), moved.eq(0), self.cycles.eq(0),
            ).Elif(self.busy,
                self.cycles.eq(self.cycles + 1),
                If(dma.sink.valid & dma.sink.ready, issued.eq(issued + 1)),
                If(word, moved.eq(moved + 1)),
                If(moved == n, self.busy.eq(0)),
            ),
        ]

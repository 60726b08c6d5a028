"""Links that carry Sparsr frames to a card: `send_frame(words)` / `recv_frame() -> words`.

`EtherboneLink`: the SoC block (`cores.sparsr.soc_block.SparsrBlock`) over Etherbone: a frame is written
into the block's TX buffer and started with the `tx_go` CSR; answers are read from its RX buffer and
released with `rx_pop`. (The simulated link for tests and the benchmark is `sim.models.sparsr_link.MigenLink`.)
"""
import time

from cores.sparsr.common import FRAME_WORDS, TX_OFFSET, RX_OFFSET, STATUS_TX_BUSY, STATUS_RX_VALID


class LinkTimeout(RuntimeError):
    """No answer frame arrived in time."""


class EtherboneLink:
    """The SoC block over Etherbone. bus: software.client.InnetClient; name: the block's name in the SoC
    (CSR prefix, and the memory region holding its buffers unless `base` is given)."""
    def __init__(self, bus, name="sparsr", base=None, timeout=60.0):
        self.bus, self.timeout = bus, timeout
        self.base = base if base is not None else getattr(bus.mems, name).base
        self.reg = lambda r: getattr(bus.regs, f"{name}_{r}")

    def _wait(self, field_mask, value):
        deadline = time.monotonic() + self.timeout
        while (self.reg("status").read() & field_mask) != value:
            if time.monotonic() > deadline:
                raise LinkTimeout("Sparsr SoC block did not get ready")

    def send_frame(self, words):
        if len(words) != FRAME_WORDS:
            raise ValueError(f"a frame is {FRAME_WORDS} words")
        self._wait(STATUS_TX_BUSY, 0)
        self.bus.write(self.base + 4 * TX_OFFSET, list(words))
        self.reg("tx_go").write(1)

    def recv_frame(self):
        self._wait(STATUS_RX_VALID, STATUS_RX_VALID)
        words = self.bus.read(self.base + 4 * RX_OFFSET, FRAME_WORDS)
        self.reg("rx_pop").write(1)
        return words

"""SparsrBlock: the Sparsr receiver for the SoC, fed and read by the host through a Wishbone window.

Window (32-bit words, `self.bus`, WINDOW_BYTES = 2 KiB; offsets in cores/sparsr/common.py): words
TX_OFFSET..+255 are the TX frame buffer (host writes one frame), words RX_OFFSET..+255 the RX buffer (holds
one answer frame). CSRs:
``tx_go`` (write: stream the TX buffer into the receiver as one frame), ``status`` (tx_busy, rx_valid),
``rx_pop`` (write: release the RX buffer for the next answer), ``config`` (wmem_rows, xmem_rows),
``memories`` (xmem_in_dram), plus the receiver's counters (``receiver_<counter>``; with XMEM in DRAM also
``receiver_dram_words_written`` / ``receiver_dram_words_read``). The TX engine feeds one word per cycle; the host's Etherbone access is the limit.
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import wishbone
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField

from cores.sparsr.common import FRAME_WORDS, RX_OFFSET, XMEM_BRAM, XMEM_DRAM, CONFIG_ROWS_BITS
from cores.sparsr.receiver import SparsrReceiver

RX_SELECT = log2_int(RX_OFFSET)    # the window address bit that selects the RX buffer (the TX buffer is at 0)


class SparsrBlock(LiteXModule):
    """Parameters: wmem_rows, xmem_rows, xmem, dram_port, xmem_base (see SparsrReceiver). The SoC maps `bus` as
    a WINDOW_BYTES region."""
    def __init__(self, wmem_rows=16, xmem_rows=8, xmem=XMEM_BRAM, dram_port=None, xmem_base=0):
        self.bus = wishbone.Interface(data_width=32)
        self.tx_go = CSRStorage(description="Write 1: send the TX buffer to the receiver as one frame.")
        self.rx_pop = CSRStorage(description="Write 1: the host has read the RX buffer; take the next answer.")
        self.status = CSRStatus(fields=[
            CSRField("tx_busy", size=1, description="The TX buffer is being sent; do not write it."),
            CSRField("rx_valid", size=1, description="The RX buffer holds an answer frame."),
        ])
        self.config = CSRStatus(fields=[
            CSRField("wmem_rows", size=CONFIG_ROWS_BITS, reset=wmem_rows, description="Rows of WMEM."),
            CSRField("xmem_rows", size=CONFIG_ROWS_BITS, offset=CONFIG_ROWS_BITS, reset=xmem_rows,
                     description="Rows of XMEM."),
        ])
        self.memories = CSRStatus(fields=[
            CSRField("xmem_in_dram", size=1, reset=int(xmem == XMEM_DRAM), description="XMEM is in DRAM."),
        ])
        self.receiver = rx = SparsrReceiver(wmem_rows=wmem_rows, xmem_rows=xmem_rows, with_csr=True, xmem=xmem,
                                            dram_port=dram_port, xmem_base=xmem_base)

        # # #

        txbuf = Memory(32, FRAME_WORDS, name="sparsr_txbuf")
        rxbuf = Memory(32, FRAME_WORDS, name="sparsr_rxbuf")
        tx_w, tx_r = txbuf.get_port(write_capable=True), txbuf.get_port()
        rx_w, rx_r = rxbuf.get_port(write_capable=True), rxbuf.get_port()
        self.specials += txbuf, rxbuf, tx_w, tx_r, rx_w, rx_r

        # Wishbone window: writes go to the TX buffer, reads come from the RX buffer (one wait state).
        bus = self.bus
        access = Signal()
        self.comb += [
            access.eq(bus.cyc & bus.stb & ~bus.ack),
            tx_w.adr.eq(bus.adr[:8]), tx_w.dat_w.eq(bus.dat_w),
            tx_w.we.eq(access & bus.we & (bus.adr[RX_SELECT] == 0)),
            rx_r.adr.eq(bus.adr[:8]),
            bus.dat_r.eq(Mux(bus.adr[RX_SELECT], rx_r.dat_r, 0)),
        ]
        self.sync += bus.ack.eq(access)

        # TX engine: the read port always shows word `tcnt`; it moves on when the receiver takes a word.
        tx_busy, tx_run = Signal(), Signal()
        tcnt = Signal(8)
        sink = rx.sink
        self.comb += [
            tx_r.adr.eq(Mux(sink.valid & sink.ready, tcnt + 1, tcnt)),
            sink.valid.eq(tx_run),
            sink.data.eq(tx_r.dat_r),
            sink.last.eq(tcnt == FRAME_WORDS - 1),
        ]
        self.sync += [
            If(self.tx_go.re & ~tx_busy,
                tx_busy.eq(1), tcnt.eq(0),
            ),
            If(tx_busy & ~tx_run, tx_run.eq(1)),          # one cycle for the read port to show word 0
            If(sink.valid & sink.ready,
                tcnt.eq(tcnt + 1),
                If(sink.last, tx_busy.eq(0), tx_run.eq(0)),
            ),
        ]

        # RX engine: one answer frame into the RX buffer, held until rx_pop.
        rx_valid = Signal()
        rcnt = Signal(8)
        source = rx.source
        self.comb += [
            source.ready.eq(~rx_valid),
            rx_w.adr.eq(rcnt), rx_w.dat_w.eq(source.data), rx_w.we.eq(source.valid & source.ready),
        ]
        self.sync += [
            If(source.valid & source.ready,
                rcnt.eq(rcnt + 1),
                If(source.last, rx_valid.eq(1), rcnt.eq(0)),
            ),
            If(self.rx_pop.re, rx_valid.eq(0)),
        ]
        self.comb += [self.status.fields.tx_busy.eq(tx_busy), self.status.fields.rx_valid.eq(rx_valid)]

"""A RIFL NIC: a RIFL network endpoint (cores.rifl.endpoint.RIFLHost) behind a LitePCIe DMA.

Host -> network: `RIFLNICTx` turns TX descriptors into DMA reads and the read beats into packets for the
Layer 2 segmenter. Network -> host: `RIFLNICRx` writes each reassembled packet into a free host slot, then
its completion record into the host's ring. `RIFLNICPort` joins both to a `LitePCIeDMA` built without
descriptor tables (the NIC issues the descriptors itself). The ABI: cores/rifl_nic/common.py.
"""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import L2_RX_PARAMS, L2_TX_PARAMS, check_l2_data_width, l2_data_layout
from cores.rifl_nic.common import (NIC_ADDRESS_BITS, NIC_COUNTERS, NIC_DMA_BITS, NIC_DMA_BYTES, NIC_MAX_PACKET,
                                   RX_RECORD, RX_RECORD_BYTES, RX_RING_LOG2_MAX, RX_SLOT_LAYOUT, TX_DESC_LAYOUT)

DMA_DESC_LAYOUT = [("address", NIC_ADDRESS_BITS), ("length", 24)]


def _words(length):
    """DMA beats of a packet of `length` bytes (a Migen expression)."""
    return (length + NIC_DMA_BYTES - 1) >> 3


class RIFLNICTx(LiteXModule):
    """TX descriptors in, DMA read descriptors and packets out.

    desc_sink: TX_DESC_LAYOUT. A descriptor of length 0 or above NIC_MAX_PACKET is dropped (`refused`
    pulses, nothing is read); a valid one becomes a read of its bytes rounded up to 8 on `read_desc` and
    the packet's params. dma_sink: the read beats (64 bits, the buffer's lowest byte in the low bits), in
    descriptor order. source: the packet as the segmenter takes it (data_width-bit beats, full except the
    last; params length and route). `sent` pulses at each packet's last beat.
    Throughput: one DMA beat a cycle; `depth` descriptors in flight.
    """
    def __init__(self, data_width=256, depth=8):
        check_l2_data_width(data_width)
        self.desc_sink = desc = stream.Endpoint(TX_DESC_LAYOUT)
        self.read_desc = rd = stream.Endpoint(DMA_DESC_LAYOUT)
        self.dma_sink = dma = stream.Endpoint([("data", NIC_DMA_BITS)])
        self.source = source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width),
                                                                          L2_TX_PARAMS))
        self.refused = Signal()
        self.sent = Signal()

        # # #

        # Two copies of each packet's params: one counts its beats into the converter, the other goes with
        # the converted beats (the converter holds one packet's end while the next one's beats arrive).
        self.count_fifo = cf = stream.SyncFIFO([("length", 16)], depth)
        self.param_fifo = pf = stream.SyncFIFO(L2_TX_PARAMS, depth)
        self.conv = conv = stream.Converter(NIC_DMA_BITS, data_width)
        ok = Signal()
        self.comb += [
            ok.eq((desc.length != 0) & (desc.length <= NIC_MAX_PACKET)),
            rd.address.eq(desc.address),
            rd.length.eq(_words(desc.length) << 3),
            cf.sink.length.eq(desc.length),
            pf.sink.length.eq(desc.length),
            pf.sink.route.eq(desc.route),
            rd.valid.eq(desc.valid & ok & cf.sink.ready & pf.sink.ready),
            cf.sink.valid.eq(desc.valid & ok & rd.ready & pf.sink.ready),
            pf.sink.valid.eq(desc.valid & ok & rd.ready & cf.sink.ready),
            desc.ready.eq(~ok | (rd.ready & cf.sink.ready & pf.sink.ready)),
            self.refused.eq(desc.valid & ~ok),
        ]
        beat = Signal(16)
        last_beat = Signal()
        self.comb += [
            last_beat.eq(beat == _words(cf.source.length) - 1),
            conv.sink.data.eq(dma.data),
            conv.sink.last.eq(last_beat),
            conv.sink.valid.eq(dma.valid & cf.source.valid),
            dma.ready.eq(conv.sink.ready & cf.source.valid),
            cf.source.ready.eq(dma.valid & conv.sink.ready & last_beat),
        ]
        self.sync += If(dma.valid & dma.ready, If(last_beat, beat.eq(0)).Else(beat.eq(beat + 1)))
        self.comb += [
            source.data.eq(conv.source.data),
            source.last.eq(conv.source.last),
            source.length.eq(pf.source.length),
            source.route.eq(pf.source.route),
            source.valid.eq(conv.source.valid & pf.source.valid),
            conv.source.ready.eq(source.ready & pf.source.valid),
            pf.source.ready.eq(source.valid & source.ready & source.last),
            self.sent.eq(pf.source.ready),
        ]


class RIFLNICRx(LiteXModule):
    """Packets in, host slots and completion records out.

    sink: the reassembler's packets (data_width-bit beats, params length, header, reply). slot_sink: free
    slots (RX_SLOT_LAYOUT), taken one a packet in posting order. ring_base / ring_log2: the completion
    ring (2^ring_log2 entries of RX_RECORD_BYTES). For each packet: a write descriptor for its bytes
    (rounded up to 8) at the slot and the packet's 64-bit words on `dma_source`, then one for its record
    at ring entry n mod 2^ring_log2 and the record's two words (LitePCIe's writer accepts a descriptor only
    once it is written: `write_desc` needs a queue of 2 before the writer). `written` pulses when a record's last word leaves;
    `wait_slot` is high while a packet waits for a slot (the sink is held: back-pressure into the link).
    Throughput: one DMA beat a cycle, 4 cycles a packet besides its words.
    """
    def __init__(self, data_width=256):
        check_l2_data_width(data_width)
        self.sink = sink = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))
        self.slot_sink = slot = stream.Endpoint(RX_SLOT_LAYOUT)
        self.ring_base = Signal(NIC_ADDRESS_BITS)
        self.ring_log2 = Signal(max=RX_RING_LOG2_MAX + 1)
        self.write_desc = wd = stream.Endpoint(DMA_DESC_LAYOUT)
        self.dma_source = dma = stream.Endpoint([("data", NIC_DMA_BITS)])
        self.written = Signal()
        self.wait_slot = Signal()

        # # #

        ratio = data_width // NIC_DMA_BITS
        index = Signal(RX_RING_LOG2_MAX)               # records written (the ring entry, before the mask)
        seq = Signal(RX_RECORD.width("seq"))
        record = Signal(8 * RX_RECORD_BYTES)
        left = Signal(16)                              # the packet's words still to send
        word = Signal(max=max(ratio, 2))               # the word of the current beat
        half = Signal()                                # the record's word
        entry = Signal(NIC_ADDRESS_BITS)
        self.comb += [
            record.eq(RX_RECORD.value(length=sink.length, seq=seq + 1, header=sink.header, reply=sink.reply)),
            entry.eq(self.ring_base + ((index & ((1 << self.ring_log2) - 1)) << 4)),
            self.wait_slot.eq(sink.valid & ~slot.valid),
        ]
        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(sink.valid & slot.valid, NextValue(left, _words(sink.length)), NextState("SLOT_DESC")))
        fsm.act("SLOT_DESC",
            wd.valid.eq(1), wd.address.eq(slot.address), wd.length.eq(_words(sink.length) << 3),
            If(wd.ready, NextState("DATA")))
        beat_words = Array([sink.data[NIC_DMA_BITS * k:NIC_DMA_BITS * (k + 1)] for k in range(ratio)])
        end_of_beat = Signal()
        self.comb += end_of_beat.eq((word == ratio - 1) | (left == 1))
        fsm.act("DATA",
            dma.valid.eq(1), dma.data.eq(beat_words[word]),
            If(dma.ready,
                NextValue(left, left - 1),
                If(end_of_beat, NextValue(word, 0), sink.ready.eq(left != 1)).Else(NextValue(word, word + 1)),
                If(left == 1, NextState("RING_DESC")),
            ))
        fsm.act("RING_DESC",
            wd.valid.eq(1), wd.address.eq(entry), wd.length.eq(RX_RECORD_BYTES),
            If(wd.ready, NextState("RECORD")))
        fsm.act("RECORD",
            dma.valid.eq(1), dma.data.eq(Mux(half, record[NIC_DMA_BITS:], record[:NIC_DMA_BITS])),
            If(dma.ready,
                NextValue(half, ~half),
                If(half,
                    sink.ready.eq(1), slot.ready.eq(1), self.written.eq(1),
                    NextValue(index, index + 1), NextValue(seq, seq + 1),
                    NextState("IDLE"),
                ),
            ))


class RIFLNICPort(LiteXModule):
    """The NIC between `dma` (a LitePCIeDMA built with with_table=False, 64-bit data) and `host` (a RIFLHost:
    sink = the segmenter's packets, source = the reassembler's).

    tx_desc / rx_slot: the host's TX descriptors and free slots, queues of `depth` and `slots` entries that
    the host must not overfill (streams; CSRs with `with_csr`: writing
    `tx_route_hi`, `tx_route_lo`, `tx_address`, then `tx_length` posts a descriptor; writing `rx_slot` posts a
    slot; `rx_ring_base`, `rx_ring_log2`). Counters: NIC_COUNTERS.
    """
    def __init__(self, dma, host, data_width=256, depth=8, slots=64, with_csr=False):
        if dma.data_width != NIC_DMA_BITS:
            raise ValueError(f"the NIC's DMA must be {NIC_DMA_BITS} bits wide, got {dma.data_width}")
        if not hasattr(dma.reader, "desc_sink") or not hasattr(dma.writer, "desc_sink"):
            raise ValueError("the NIC issues its own DMA descriptors: build the LitePCIeDMA with with_table=False")
        self.tx = tx = RIFLNICTx(data_width, depth)
        self.rx = rx = RIFLNICRx(data_width)
        self.tx_queue = tx_fifo = stream.SyncFIFO(TX_DESC_LAYOUT, depth)
        self.slots = slot_fifo = stream.SyncFIFO(RX_SLOT_LAYOUT, slots)
        self.write_queue = wq = stream.SyncFIFO(DMA_DESC_LAYOUT, 2)
        self.tx_desc = tx_fifo.sink
        self.rx_slot = slot_fifo.sink
        self.ring_base, self.ring_log2 = rx.ring_base, rx.ring_log2

        # # #

        self.comb += [
            tx_fifo.source.connect(tx.desc_sink),
            tx.read_desc.connect(dma.reader.desc_sink, keep={"valid", "ready", "address", "length"}),
            dma.source.connect(tx.dma_sink, keep={"valid", "ready", "data"}),
            tx.source.connect(host.sink),
            host.source.connect(rx.sink),
            slot_fifo.source.connect(rx.slot_sink),
            rx.write_desc.connect(wq.sink),
            wq.source.connect(dma.writer.desc_sink, keep={"valid", "ready", "address", "length"}),
            dma.writer.desc_sink.last_disable.eq(1),
            rx.dma_source.connect(dma.sink, keep={"valid", "ready", "data"}),
        ]
        add_counters(self, NIC_COUNTERS, {"tx_packets": tx.sent, "tx_refused": tx.refused,
                                          "rx_packets": rx.written, "rx_wait_slot": rx.wait_slot})
        if with_csr:
            self.add_csr()

    def add_csr(self):
        from litex.soc.interconnect.csr import CSRStorage
        self._tx_route_hi = CSRStorage(16, description="Bits 47..32 of the next TX descriptor's Layer 2 route.")
        self._tx_route_lo = CSRStorage(32, description="Bits 31..0 of the next TX descriptor's Layer 2 route.")
        self._tx_address = CSRStorage(NIC_ADDRESS_BITS, description="Host byte address of the next TX packet.")
        self._tx_length = CSRStorage(16, description="Writing the packet's length (bytes) posts the descriptor.")
        self._rx_slot = CSRStorage(NIC_ADDRESS_BITS, description="Writing a slot's host address posts it.")
        self._rx_ring_base = CSRStorage(NIC_ADDRESS_BITS, description="Host byte address of the completion ring.")
        self._rx_ring_log2 = CSRStorage(len(self.ring_log2), description="log2 of the ring's entries.")
        self.comb += [
            self.tx_desc.valid.eq(self._tx_length.re),
            self.tx_desc.address.eq(self._tx_address.storage),
            self.tx_desc.length.eq(self._tx_length.storage),
            self.tx_desc.route.eq(Cat(self._tx_route_lo.storage, self._tx_route_hi.storage)),
            self.rx_slot.valid.eq(self._rx_slot.re),
            self.rx_slot.address.eq(self._rx_slot.storage),
            self.ring_base.eq(self._rx_ring_base.storage),
            self.ring_log2.eq(self._rx_ring_log2.storage),
        ]
        add_counter_csrs(self, NIC_COUNTERS)

"""RIFL over an 8b/10b SERDES word interface (LiteICLink): frame <-> word adapter, a clock-enabled link
(endpoint + bit aligner + adapter) and a Lattice ECP5 Versa loopback target on the DCU (build only)."""
from migen import *
from migen.genlib.resetsync import AsyncResetSynchronizer

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import reduce_or
from cores.rifl.align import RIFLAligner
from cores.rifl.common import CC_INTERVAL_FRAMES, CHK_FAULTS, SERDES_COMMA, check_frame_bits, user_layout
from cores.rifl.elastic import RIFLElasticBuffer
from cores.rifl.link import RIFLEndpoint


def serdes_word_layout(nbytes):
    """LiteICLink SERDES stream: nbytes bytes a word (byte 0 sent first) and a K flag per byte."""
    return [("data", 8 * nbytes), ("ctrl", nbytes)]


def shift_in_data_bytes(words, sr):
    """`sr` (F bits) with the bytes of the word stream `words` that are not flagged K shifted in, byte 0
    first, whatever lane they arrive in."""
    shifted = sr
    for i in range(len(words.ctrl)):
        shifted = Mux(words.ctrl[i], shifted, Cat(words.data[8 * i:8 * i + 8], shifted[:len(sr) - 8]))
    return shifted


class RIFLSerDesAdapter(LiteXModule):
    """Frames <-> words of an 8b/10b SERDES (LiteICLink's sink/source: `nbytes` bytes a word).

    A frame slot is F / (8 nbytes) data words followed by one comma word (K28.5 in every byte): the
    SERDES's comma aligner needs them, and they leave room for clock compensation. `ce` is high in the
    last cycle of each slot; the endpoint and the aligner advance only then (one frame a slot).
    TX: `tx_frame` is loaded at `ce` and sent MSB first (word byte 0 first). RX: the bytes of `rx_words`
    not flagged K shift into an F-bit register, whatever lane they arrive in; `rx_bits` samples it at `ce`,
    so the frame boundary is at an arbitrary offset (RIFLAligner finds it). A slot that delivers more or
    fewer than F bits (clocks of both ends differ, no skip handling) is a bit slip: the aligner re-locks
    and the endpoints replay. Line efficiency F / (F + 8 nbytes) (94.1% for F = 256, nbytes = 2).
    """
    def __init__(self, frame_bits=256, nbytes=2):
        check_frame_bits(frame_bits)
        if not isinstance(nbytes, int) or nbytes < 1 or (frame_bits // 8) % nbytes:
            raise ValueError(f"nbytes must divide the frame's {frame_bits // 8} bytes, got {nbytes!r}")
        F = frame_bits
        words = F // (8 * nbytes)
        self.slot_cycles = words + 1
        self.ce = Signal()
        self.tx_frame = Signal(F)
        self.rx_bits = Signal(F)
        self.tx_words = tx = stream.Endpoint(serdes_word_layout(nbytes))
        self.rx_words = rx = stream.Endpoint(serdes_word_layout(nbytes))

        # # #

        slot = Signal(max=words + 1)
        self.comb += self.ce.eq(slot == words)
        self.sync += If(self.ce, slot.eq(0)).Else(slot.eq(slot + 1))

        sr = Signal(F)
        self.sync += If(self.ce, sr.eq(self.tx_frame)).Else(sr.eq(sr << (8 * nbytes)))
        self.comb += [
            tx.valid.eq(1),
            If(self.ce,
                tx.data.eq(Replicate(C(SERDES_COMMA, 8), nbytes)),
                tx.ctrl.eq(2**nbytes - 1),
            ).Else(
                tx.data.eq(Cat(*[sr[F - 8 * (i + 1):F - 8 * i] for i in range(nbytes)])),
            ),
        ]

        rx_sr = Signal(F)
        self.comb += rx.ready.eq(1)
        self.sync += [
            If(rx.valid, rx_sr.eq(shift_in_data_bytes(rx, rx_sr))),
            If(self.ce, self.rx_bits.eq(rx_sr)),
        ]


class RIFLSerDesDeframer(LiteXModule):
    """The far end's frame slots in the receive clock: the bytes of `rx_words` not flagged K shift into an
    F-bit register (shift_in_data_bytes, as in RIFLSerDesAdapter); a word whose last byte is K ends a slot (its comma word, or
    the second half of one split across two words): `frame` takes the register and `strobe` pulses. A
    slot that carried F data bits gives a frame aligned to the comma."""
    def __init__(self, frame_bits=256, nbytes=2):
        F = frame_bits
        self.rx_words = rx = stream.Endpoint(serdes_word_layout(nbytes))
        self.frame = Signal(F)
        self.strobe = Signal()

        # # #

        sr = Signal(F)
        shifted = shift_in_data_bytes(rx, sr)
        self.comb += rx.ready.eq(1)
        self.sync += [
            If(rx.valid, sr.eq(shifted)),
            self.strobe.eq(rx.valid & rx.ctrl[nbytes - 1]),
            If(rx.valid & rx.ctrl[nbytes - 1], self.frame.eq(shifted)),
        ]


class RIFLSerDesLink(LiteXModule):
    """A RIFL endpoint on a SERDES: RIFLEndpoint and RIFLAligner with the adapter's slot clock enable, in
    the module's clock domain (the SERDES TX clock). sink/source: the endpoint's user streams, a beat
    accepted only in `ce` cycles. rtt: round trip in frame slots (including both adapters and aligners).
    tx_words/rx_words: the SERDES word streams.
    elastic=False: rx_words already in this clock domain (one reference clock for both ends).
    elastic=True: rx_words in clock domain `rx` (the recovered clock of a far end on its own oscillator):
    a RIFLSerDesDeframer there, then a RIFLElasticBuffer (`elastic`) into the slots of this domain; the
    endpoint sends an IDLE at least every CC_INTERVAL_FRAMES slots for the far end's buffer.
    fc_source: the endpoint's received flow-control frames (each held over the cycles of its slot: a
    pause or resume applied again is the same)."""
    def __init__(self, frame_bits=256, rtt=16, nbytes=2, elastic=False):
        self.adapter = adapter = RIFLSerDesAdapter(frame_bits, nbytes)
        cc = CC_INTERVAL_FRAMES if elastic else None
        self.endpoint = ep = CEInserter()(RIFLEndpoint(frame_bits, rtt=rtt, cc_interval=cc, ce=adapter.ce))
        self.aligner = al = CEInserter()(RIFLAligner(frame_bits))
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.source = source = stream.Endpoint(user_layout(frame_bits))
        self.tx_words = adapter.tx_words
        self.fc_source = ep.fc_source
        self.link_up = ep.link_up
        self.locked = al.locked

        # # #

        ce = adapter.ce
        if elastic:
            self.deframer = dfr = ClockDomainsRenamer("rx")(RIFLSerDesDeframer(frame_bits, nbytes))
            self.elastic = eb = RIFLElasticBuffer(frame_bits, cd_write="rx", cd_read="sys")
            self.rx_words = dfr.rx_words
            self.comb += [eb.wr_frame.eq(dfr.frame), eb.wr_ce.eq(dfr.strobe), eb.rd_ce.eq(ce),
                          al.rx_bits.eq(eb.rd_frame)]
        else:
            self.rx_words = adapter.rx_words
            self.comb += al.rx_bits.eq(adapter.rx_bits)
        self.comb += [
            ep.ce.eq(ce), al.ce.eq(ce),
            adapter.tx_frame.eq(ep.tx_frame),
            ep.rx_frame.eq(al.rx_frame),
            sink.connect(ep.sink, omit={"valid", "ready"}),
            ep.sink.valid.eq(sink.valid & ce),
            sink.ready.eq(ep.sink.ready & ce),
            ep.source.connect(source, omit={"valid", "ready"}),
            source.valid.eq(ep.source.valid & ce),
            ep.source.ready.eq(source.ready & ce),
        ]


class RIFLVersaSerDes(LiteXModule):
    """Lattice ECP5 Versa: one RIFL link on the DCU channel of the SMA connectors (DCU0 channel 1) through
    LiteICLink's SerDesECP5 (8b/10b, 20-bit words), with the SoC block's traffic generator and checker on
    its user streams. LEDs: link up, aligner locked, a checker error seen. Build only (not run on
    hardware). refclk_freq: the reference clock on the `refclk` 0 pads (EXTREF0).
    two_boards=False: loop the SMA TX to RX (received words into the TX clock through an AsyncFIFO: one
    oscillator). two_boards=True: one bitstream for both ends of a link between two boards on their own
    oscillators (cross the SMA cables): RIFLSerDesLink(elastic=True), the received slots framed in the
    recovered clock and compensated into the local one."""
    def __init__(self, platform, frame_bits=256, linerate=2.5e9, refclk_freq=156.25e6, rtt=16, two_boards=False):
        from liteiclink.serdes.serdes_ecp5 import SerDesECP5, SerDesECP5PLL
        from cores.rifl.soc_block import TrafficChecker, TrafficGenerator
        self.cd_sys = ClockDomain()

        # # #

        self.comb += self.cd_sys.clk.eq(platform.request("clk100"))
        self.specials += AsyncResetSynchronizer(self.cd_sys, ~platform.request("rst_n"))
        platform.add_period_constraint(self.cd_sys.clk, 1e9 / 100e6)

        refclk_pads = platform.request("refclk", 0)
        self.comb += [platform.request("refclk_en").eq(1), platform.request("refclk_rst_n").eq(1)]
        refclk = Signal()
        self.specials.extref0 = Instance("EXTREFB",
            i_REFCLKP=refclk_pads.p, i_REFCLKN=refclk_pads.n, o_REFCLKO=refclk,
            p_REFCK_PWDNB="0b1", p_REFCK_RTERM="0b1")
        self.extref0.attr.add(("LOC", "EXTREF0"))
        self.serdes_pll = pll = SerDesECP5PLL(refclk, refclk_freq=refclk_freq, linerate=linerate)
        self.serdes = serdes = SerDesECP5(pll, platform.request("sma_tx"), platform.request("sma_rx"),
                                          dual=0, channel=1, data_width=20)
        serdes.add_stream_endpoints()
        # LiteICLink 2024.12 keeps its 8b/10b decoders in a list attribute, which no Module registers: without
        # this their logic is never generated and every received word reads 0 (the receive path vanishes).
        known = {id(m) for _, m in serdes._submodules}
        serdes.submodules += [d for d in serdes.decoders if id(d) not in known]
        platform.add_period_constraint(serdes.txoutclk, 1e9 / serdes.tx_clk_freq)
        platform.add_period_constraint(serdes.rxoutclk, 1e9 / serdes.rx_clk_freq)

        if two_boards:
            self.link = link = ClockDomainsRenamer({"sys": "tx", "rx": "rx"})(
                RIFLSerDesLink(frame_bits, rtt=rtt, nbytes=serdes.nwords, elastic=True))
            self.comb += serdes.source.connect(link.rx_words)
        else:
            self.link = link = ClockDomainsRenamer("tx")(RIFLSerDesLink(frame_bits, rtt=rtt, nbytes=serdes.nwords))
            self.rx_cdc = cdc = ClockDomainsRenamer({"write": "rx", "read": "tx"})(
                stream.AsyncFIFO(serdes_word_layout(serdes.nwords), 8))
            self.comb += [serdes.source.connect(cdc.sink), cdc.source.connect(link.rx_words)]
        self.gen = gen = ClockDomainsRenamer("tx")(TrafficGenerator(frame_bits))
        self.chk = chk = ClockDomainsRenamer("tx")(TrafficChecker(frame_bits))
        self.comb += [
            link.tx_words.connect(serdes.sink),
            gen.enable.eq(link.link_up),
            gen.source.connect(link.sink),
            link.source.connect(chk.sink),
        ]
        error = Signal()
        self.sync.tx += If(reduce_or([chk.counters[name] for name in CHK_FAULTS]), error.eq(1))
        leds = [platform.request("user_led", i) for i in range(3)]
        self.comb += [leds[0].eq(~link.link_up), leds[1].eq(~link.locked), leds[2].eq(~error)]

"""Ethernet PHY models for litex_sim, each joined to a TAP device inside the runner's network namespace.

* `TapPHY`: the management port, `width` bytes a cycle on the project's `innet_tap` sim module
  (sim/litex_sim/modules/innet_tap), which polls its TAP every few cycles. A LiteEth PHY (dw = 8 * width,
  no preamble/CRC): frames with `last` and a one-hot `last_be`.
* `GMIIDataPort`: a data port on LiteX's `gmii_ethernet` sim module (one TAP each, clock-edge state per
  instance, so several can run on one clock), with a LiteEth MAC core (preamble, FCS, padding) in `sys`.
"""
from migen import ClockDomainsRenamer

from litex.build.generic_platform import Pins, Subsignal
from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from liteeth.common import eth_phy_description
from liteeth.mac.core import LiteEthMACCore
from liteeth.phy.gmii import LiteEthPHYGMIIRX, LiteEthPHYGMIITX
from liteeth.phy.model import LiteEthPHYModelCRG

TAP_POLL_CYCLES = 8     # innet_tap polls its TAP this often while no frame is being received


def tap_pads(name, width):
    """Platform IO of a `width`-byte TapPHY port, and the SoC's management identity (soc_ip, soc_mac: driven
    by innet_tap from its arguments, so that one build runs as several SoCs)."""
    return (name, 0, *[Subsignal(f"{d}_{s}", Pins(w)) for d in ("source", "sink")
                       for s, w in (("valid", 1), ("data", 8 * width), ("last", 1), ("last_be", width))],
            Subsignal("soc_ip", Pins(32)), Subsignal("soc_mac", Pins(48)))


def gmii_pads(name, index):
    return (name, index,
            Subsignal("rx_data", Pins(8)), Subsignal("rx_dv", Pins(1)), Subsignal("rx_er", Pins(1)),
            Subsignal("tx_data", Pins(8)), Subsignal("tx_en", Pins(1)), Subsignal("tx_er", Pins(1)))


class TapPHY(LiteXModule):
    """LiteEth PHY on `innet_tap` pads of `width` bytes (1, 2, 4 or 8). Latency: one cycle each way
    (the received beat is registered)."""
    with_preamble_crc = False
    model = True            # LiteX adds no timing constraints for a model PHY

    def __init__(self, pads, width=4):
        if width not in (1, 2, 4, 8):
            raise ValueError(f"TapPHY width must be 1, 2, 4 or 8 bytes, not {width!r}")
        self.dw = dw = 8 * width
        self.crg = LiteEthPHYModelCRG()
        self.sink = sink = stream.Endpoint(eth_phy_description(dw))
        self.source = source = stream.Endpoint(eth_phy_description(dw))

        # # #

        self.comb += [
            pads.source_valid.eq(sink.valid), pads.source_data.eq(sink.data),
            pads.source_last.eq(sink.last), pads.source_last_be.eq(sink.last_be),
            sink.ready.eq(1),
        ]
        self.sync += [
            source.valid.eq(pads.sink_valid), source.data.eq(pads.sink_data),
            source.last.eq(pads.sink_last), source.last_be.eq(pads.sink_last_be),
        ]


class GMIIDataPort(LiteXModule):
    """One simulated Ethernet data port: GMII model pads and a LiteEth MAC core (preamble, FCS, padding)
    in the sys domain. `sink`/`source`: frames without preamble/FCS, 8 bits a beat."""
    def __init__(self, pads):
        phy = LiteXModule()
        phy.dw = 8
        phy.tx = LiteEthPHYGMIITX(pads)
        phy.rx = LiteEthPHYGMIIRX(pads)
        phy.sink, phy.source = phy.tx.sink, phy.rx.source
        self.phy = phy
        self.mac = ClockDomainsRenamer({"eth_tx": "sys", "eth_rx": "sys"})(
            LiteEthMACCore(phy, dw=8, with_preamble_crc=True, with_padding=True))
        self.sink, self.source = self.mac.sink, self.mac.source

"""SoC block: MiniSharpCore on NUM_PORTS 8-bit LiteEth-PHY streams, with CSRs, a frame injector and a
frame capture so that the host can run a whole reduction over the CSR bus alone."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField
from litex.soc.interconnect.packet import Arbiter

from cores.lib.counters import add_counter_csrs
from cores.lib.header import csr_fields
from cores.minisharp.common import (
    CAPTURE_CTRL_CSR, CAPTURE_DATA_CSR, CONFIG_CSR, DEFAULT_DST_MAC, DEFAULT_SRC_MAC, INJECT_CTRL_CSR,
    INJECT_STATUS_CSR, MS_CHUNK_ELEMENTS, MSP_TRANSPARENT, counters, port_description,
)
from cores.minisharp.core import MiniSharpCore


class _Injector(LiteXModule):
    """Frame buffer filled through CSRs (one 32-bit big-endian word a write), sent once on `go`."""
    def __init__(self, nbytes, num_ports):
        self.data = CSRStorage(32, description="Append 4 frame bytes (first byte in bits 31:24).")
        self.ctrl = CSRStorage(fields=csr_fields(INJECT_CTRL_CSR, {
            "length": "Frame length in bytes.",
            "port": "Input port the frame is injected into.",
            "go": "Send the buffer; the buffer is then emptied.",
        }, pulse={"go"}))
        self.status = CSRStatus(fields=csr_fields(INJECT_STATUS_CSR, {"busy": "A frame is being sent."}))
        self.sources = [stream.Endpoint(port_description(8)) for _ in range(num_ports)]

        # # #

        mem = Memory(8, nbytes)

        self.specials += mem
        wr = mem.get_port(write_capable=True)
        self.specials += wr
        rd = mem.get_port()
        self.specials += rd
        wptr = Signal(max=nbytes + 4)
        pending = Signal(32)
        nfill = Signal(3)
        self.sync += [
            If(self.data.re, pending.eq(self.data.storage), nfill.eq(4)
            ).Elif(nfill != 0, pending.eq(pending << 8), nfill.eq(nfill - 1), wptr.eq(wptr + 1)),
        ]
        self.comb += wr.adr.eq(wptr), wr.dat_w.eq(pending[24:]), wr.we.eq(nfill != 0)

        idx = Signal(16)
        length, port = Signal(16), Signal(8)
        src = stream.Endpoint(port_description(8))
        self.comb += [
            Case(port, {i: src.connect(s) for i, s in enumerate(self.sources)}),
            src.data.eq(rd.dat_r), src.last.eq(idx == length - 1), src.last_be.eq(src.last),
        ]
        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            rd.adr.eq(0),
            If(self.ctrl.fields.go & (self.ctrl.fields.length != 0),
                NextValue(length, self.ctrl.fields.length), NextValue(port, self.ctrl.fields.port),
                NextValue(idx, 0), NextState("SEND"))
        )
        fsm.act("SEND",
            self.status.fields.busy.eq(1),
            src.valid.eq(1),
            rd.adr.eq(Mux(src.ready, idx + 1, idx)),
            If(src.ready,
                NextValue(idx, idx + 1),
                If(src.last, NextValue(wptr, 0), NextState("IDLE")))
        )


class _Capture(LiteXModule):
    """Records the bytes leaving one output port (with a frame-end flag) for CSR read-back."""
    def __init__(self, nbytes, sources):
        self.ctrl = CSRStorage(fields=csr_fields(CAPTURE_CTRL_CSR, {
            "port": "Output port to capture.",
            "arm": "Empty the capture buffer.",
        }, pulse={"arm"}))
        self.level = CSRStatus(16, description="Bytes captured.")
        self.addr = CSRStorage(16, description="Read address.")
        self.data = CSRStatus(fields=csr_fields(CAPTURE_DATA_CSR, {
            "byte": "Captured byte at `addr`.",
            "last": "The byte ends a frame.",
        }))

        # # #

        mem = Memory(9, nbytes)

        self.specials += mem
        wr = mem.get_port(write_capable=True)
        self.specials += wr
        rd = mem.get_port()
        self.specials += rd
        level = Signal(16)
        sel = stream.Endpoint(port_description(8))
        self.comb += Case(self.ctrl.fields.port, {i: [sel.valid.eq(s.valid & s.ready), sel.data.eq(s.data),
                                                      sel.last.eq(s.last)] for i, s in enumerate(sources)})
        take = Signal()
        self.comb += [
            take.eq(sel.valid & (level < nbytes)),
            wr.adr.eq(level), wr.dat_w.eq(Cat(sel.data, sel.last)), wr.we.eq(take),
            rd.adr.eq(self.addr.storage),
            self.data.fields.byte.eq(rd.dat_r[:8]), self.data.fields.last.eq(rd.dat_r[8]),
            self.level.status.eq(level),
        ]
        self.sync += If(self.ctrl.fields.arm, level.eq(0)).Elif(take, level.eq(level + 1))


class MiniSharpSoCBlock(LiteXModule):
    """MiniSharp on `num_ports` 8-bit LiteEth PHY streams (sinks[i] from a PHY, sources[i] to it: raw
    Ethernet frames without preamble/FCS, e.g. LiteEthPHYModel).

    CSRs: policy; fwd_map (static output port of forwarded frames, per input port); port<i>_dst_mac /
    port<i>_src_mac (COL_RES headers); config (capability limits); drop_<reason> counters; per port
    port<i>_rx_frames / _rx_drops / _fwd_frames / _tx_frames; setups, chunks; inject_* (a frame buffer
    sent into any input port: while it sends, that port's PHY frames are not accepted); capture_* (the bytes
    leaving one output port).
    """
    def __init__(self, num_ports=2, chunk_elements=MS_CHUNK_ELEMENTS, n_contexts=8, n_slots=4, max_ranks=64,
                 inject_bytes=2048, capture_bytes=4096):
        self.core = core = MiniSharpCore(num_ports=num_ports, dw=8, chunk_elements=chunk_elements,
                                         n_contexts=n_contexts, n_slots=n_slots, max_ranks=max_ranks)
        self.sinks = [stream.Endpoint(port_description(8)) for _ in range(num_ports)]
        self.sources = core.sources

        self.policy = CSRStorage(fields=[CSRField("policy", size=1, reset=MSP_TRANSPARENT, description=
            "Outer policy for non-MiniSharp frames: 0 MSP_TRANSPARENT (forward), 1 MSP_MINISHARP_ONLY (drop).")])
        self.fwd_map = CSRStorage(fields=[CSRField(f"port{i}", size=8, reset=(i + 1) % num_ports,
            description=f"Output port of frames forwarded from input port {i}.") for i in range(num_ports)])
        self.config = CSRStatus(fields=csr_fields(CONFIG_CSR, {
            "num_ports": "Ports.",
            "max_ranks": "Largest expected_local_contributors accepted.",
            "n_contexts": "Context table entries.",
            "n_slots": "Chunk slots (chunks accumulating at once).",
        }))
        self.chunk_elements = CSRStatus(16, description="Elements per chunk (ABI).")
        self.comb += [
            self.config.fields.num_ports.eq(num_ports), self.config.fields.max_ranks.eq(max_ranks),
            self.config.fields.n_contexts.eq(n_contexts), self.config.fields.n_slots.eq(n_slots),
            self.chunk_elements.status.eq(chunk_elements),
            core.policy.eq(self.policy.fields.policy),
        ]
        for i in range(num_ports):
            dst = CSRStorage(48, reset=DEFAULT_DST_MAC, name=f"port{i}_dst_mac",
                             description=f"Destination MAC of COL_RES frames sent on port {i}.")
            src = CSRStorage(48, reset=DEFAULT_SRC_MAC + i, name=f"port{i}_src_mac",
                             description=f"Source MAC of COL_RES frames sent on port {i}.")
            setattr(self, f"port{i}_dst_mac", dst)
            setattr(self, f"port{i}_src_mac", src)
            self.comb += [core.dst_macs[i].eq(dst.storage), core.src_macs[i].eq(src.storage),
                          core.fwd_map[i].eq(getattr(self.fwd_map.fields, f"port{i}"))]
        add_counter_csrs(self, counters(num_ports), core.counters)

        # # #

        self.inject = inj = _Injector(inject_bytes, num_ports)
        self.capture = _Capture(capture_bytes, core.sources)
        for i in range(num_ports):
            arb = Arbiter([self.sinks[i], inj.sources[i]], core.sinks[i])
            self.submodules += arb

"""SoC block: MiniSharpCore on NUM_PORTS LiteEth-PHY streams, with CSRs, a frame injector and a
frame capture so that the host can run a whole reduction over the CSR bus alone."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRStorage, CSRStatus, CSRField
from litex.soc.interconnect.packet import Arbiter

from cores.lib.counters import add_counter_csrs, add_counters
from cores.lib.header import csr_fields
from cores.minisharp.common import (
    CAPTURE_CTRL_CSR, CAPTURE_DATA_CSR, CONFIG_CSR, DEFAULT_DST_MAC, DEFAULT_SRC_MAC, INJECT_COUNTERS,
    INJECT_CTRL_CSR, INJECT_STATUS_CSR, MS_CHUNK_ELEMENTS, MSP_TRANSPARENT, counters, port_description,
    DEFAULT_MAC, TIMEOUT_BITS,
)
from cores.minisharp.core import MiniSharpCore


class MSFrameInjector(LiteXModule):
    """Frame buffer of `nbytes` bytes (a multiple of 4) filled through CSRs, one 32-bit big-endian word a
    write (any write rate, one a cycle included: a word is stored in the cycle of its write), sent once on
    `go` into input port `port`, one `dw`-bit beat (8, 16 or 32: dw / 8 bytes, the first in the low bits, as
    LiteEth's PHY streams) a cycle, `last_be` on the frame's last byte.

    Refused and counted in `refused` (nothing of them is stored or sent): a data write while a frame is
    being sent or with the buffer full; a `go` while a frame is being sent, with length 0, with a length
    beyond the bytes written, with a port >= num_ports, or after a refused data write of the same frame. A
    `go` (sent or refused) empties the buffer.
    """
    def __init__(self, nbytes, num_ports, dw=8):
        if nbytes < 4 or nbytes % 4:
            raise ValueError(f"inject buffer bytes must be a positive multiple of 4, got {nbytes}")
        if dw not in (8, 16, 32):
            raise ValueError(f"the injector sends 8-, 16- or 32-bit beats, not {dw}")
        self.data = CSRStorage(32, description="Append 4 frame bytes (first byte in bits 31:24).")
        self.ctrl = CSRStorage(fields=csr_fields(INJECT_CTRL_CSR, {
            "length": "Frame length in bytes.",
            "port": "Input port the frame is injected into.",
            "go": "Send the buffer; the buffer is then emptied.",
        }, pulse={"go"}))
        self.status = CSRStatus(fields=csr_fields(INJECT_STATUS_CSR, {"busy": "A frame is being sent."}))
        self.sources = [stream.Endpoint(port_description(dw)) for _ in range(num_ports)]

        # # #

        nwords = nbytes // 4
        mem = Memory(32, nwords)
        wr, rd = mem.get_port(write_capable=True), mem.get_port()
        self.specials += mem, wr, rd
        busy = self.status.fields.busy
        wptr = Signal(max=nwords + 1)           # words held
        bad = Signal()                          # a data write of this frame was refused
        full = Signal()
        self.comb += [
            full.eq(wptr == nwords),
            wr.adr.eq(wptr), wr.dat_w.eq(self.data.storage), wr.we.eq(self.data.re & ~busy & ~full),
        ]
        go, length = self.ctrl.fields.go, self.ctrl.fields.length
        start = Signal()
        self.comb += start.eq(go & ~busy & ~bad & (length != 0) & (length <= Cat(C(0, 2), wptr)) &
                              (self.ctrl.fields.port < num_ports))
        self.sync += [
            If(go, wptr.eq(0), bad.eq(0)
            ).Elif(wr.we, wptr.eq(wptr + 1)
            ).Elif(self.data.re, bad.eq(1)),
        ]
        add_counters(self, INJECT_COUNTERS, {"refused": (self.data.re & ~wr.we) | (go & ~start)})
        add_counter_csrs(self, INJECT_COUNTERS)

        B = dw // 8                             # bytes a beat
        lanes = log2_int(4 // B)                # beats a word: 2^lanes
        idx = Signal(16)                        # the beat being sent
        port = Signal(8)
        slength = Signal(16)
        src = stream.Endpoint(port_description(dw))
        word = rd.dat_r
        first_byte_first = [word[24:32], word[16:24], word[8:16], word[0:8]]
        beats = Array([Cat(*first_byte_first[k * B:(k + 1) * B]) for k in range(4 // B)])
        end = Signal(16)
        self.comb += [
            Case(port, {i: src.connect(s) for i, s in enumerate(self.sources)}),
            src.data.eq(beats[idx[:lanes]] if lanes else beats[0]),
            end.eq(slength - 1),
            src.last.eq(idx == end[log2_int(B):]),
        ]
        self.comb += If(src.last, src.last_be.eq(1) if B == 1 else
                        Case(end[:log2_int(B)], {k: src.last_be.eq(1 << k) for k in range(B)}))
        # The RAM reads the word of the next beat (idx is 0 while idle); the beat's lane follows `idx`.
        self.comb += rd.adr.eq(Mux(src.valid & src.ready, idx + 1, idx)[lanes:])
        self.fsm = fsm = FSM(reset_state="IDLE")
        fsm.act("IDLE",
            If(start, NextValue(slength, length), NextValue(port, self.ctrl.fields.port), NextState("SEND"))
        )
        fsm.act("SEND",
            busy.eq(1),
            src.valid.eq(1),
            If(src.ready,
                If(src.last, NextValue(idx, 0), NextState("IDLE")).Else(NextValue(idx, idx + 1)))
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
    """MiniSharp on `num_ports` `dw`-bit LiteEth PHY streams (sinks[i] from a PHY, sources[i] to it: raw
    Ethernet frames without preamble/FCS, e.g. LiteEthPHYModel or a LiteEthMACCore's user side).

    CSRs: policy; fwd_map (static output port of forwarded frames, per input port); port<i>_dst_mac /
    port<i>_src_mac (COL_RES headers); config (capability limits); drop_<reason> counters; per port
    port<i>_rx_frames / _rx_drops / _fwd_frames / _tx_frames; setups, chunks; inject_* (a frame buffer
    sent into any input port: while it sends, that port's PHY frames are not accepted); capture_* (the bytes
    leaving one output port); v0.2: admin_ports, mac_filter, mac, slot_timeout, ctx_timeout (MiniSharpCore's
    inputs of the same names); teardowns, slot_timeouts, ctx_timeouts counters. partials, carry_limbs:
    MiniSharpCore's parameters. The injector exists with with_inject (default: in 8-bit builds; 16- and
    32-bit builds may have it too), the capture in 8-bit builds with the injector.
    mgmt_ports (a port mask, None: no management port): a management stack on mgmt_source / mgmt_sink
    (MiniSharpCore's management port, MAC mgmt_mac) reached from these ports only. CSRs mgmt_ports (reset:
    the build's mask; ANDed with it, so it can only narrow the set), mgmt_src (enable: only frames from
    mgmt_src_mac reach the stack); counters mgmt_rx_frames, mgmt_tx_frames and drop_mgmt_refused.
    """
    def __init__(self, num_ports=2, dw=8, chunk_elements=MS_CHUNK_ELEMENTS, n_contexts=8, n_slots=4, max_ranks=64,
                 inject_bytes=2048, capture_bytes=4096, partials=True, carry_limbs=None, with_inject=None,
                 mgmt_ports=None, mgmt_mac=None):
        with_inject = dw == 8 if with_inject is None else with_inject
        if with_inject and dw not in (8, 16, 32):
            raise ValueError(f"the injector takes 8-, 16- and 32-bit ports: with_inject needs one of them, not {dw}")
        with_mgmt = mgmt_ports is not None
        if with_mgmt and not 0 < mgmt_ports < 2**num_ports:
            raise ValueError(f"mgmt_ports must be a non-empty mask of the {num_ports} ports, got {mgmt_ports:#x}")
        if with_mgmt and mgmt_mac is None:
            raise ValueError("a management port needs its MAC (mgmt_mac)")
        self.core = core = MiniSharpCore(num_ports=num_ports, dw=dw, chunk_elements=chunk_elements,
                                         n_contexts=n_contexts, n_slots=n_slots, max_ranks=max_ranks,
                                         partials=partials, carry_limbs=carry_limbs,
                                         mgmt_mac=mgmt_mac if with_mgmt else None)
        self.sinks = [stream.Endpoint(port_description(dw)) for _ in range(num_ports)]
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
        self.admin_ports = CSRStorage(num_ports, reset=2**num_ports - 1, description=
            "Bit i: port i may send COL_SETUP / COL_TEARDOWN (others are dropped as not_admin).")
        self.mac_filter = CSRStorage(fields=[CSRField("enable", size=1, reset=0, description=
            "1: consume only MiniSharp frames to `mac` or the group MAC, forward the others (v0.2); "
            "0: consume every MiniSharp frame (v0.1).")])
        self.mac = CSRStorage(48, reset=DEFAULT_MAC, description="The switch's MAC (v0.2 addressing).")
        self.timeouts = CSRStorage(fields=[
            CSRField("slot", size=TIMEOUT_BITS, description="Chunk slot idle timeout in ticks (0: never)."),
            CSRField("ctx", size=TIMEOUT_BITS, description="Context idle timeout in ticks (0: never)."),
        ])
        self.comb += [
            core.admin_ports.eq(self.admin_ports.storage), core.mac_filter.eq(self.mac_filter.fields.enable),
            core.mac.eq(self.mac.storage),
            core.slot_timeout.eq(self.timeouts.fields.slot), core.ctx_timeout.eq(self.timeouts.fields.ctx),
        ]
        if with_mgmt:
            self.mgmt_source, self.mgmt_sink = core.mgmt_source, core.mgmt_sink
            self.mgmt_ports = CSRStorage(num_ports, reset=mgmt_ports, description=
                f"Bit i: port i may reach the management port. ANDed with the build's set ({mgmt_ports:#x}): "
                "writes can only narrow it.")
            self.mgmt_src = CSRStorage(fields=[CSRField("enable", size=1, reset=0, description=
                "1: only frames whose source MAC is `mgmt_src_mac` reach the management port.")])
            self.mgmt_src_mac = CSRStorage(48, description="The one source MAC allowed to manage (with enable).")
            self.comb += [
                core.mgmt_ports.eq(self.mgmt_ports.storage & mgmt_ports),
                core.mgmt_src_filter.eq(self.mgmt_src.fields.enable), core.mgmt_src_mac.eq(self.mgmt_src_mac.storage),
            ]
        add_counter_csrs(self, counters(num_ports, with_mgmt), core.counters)

        # # #

        if not with_inject:
            self.comb += [self.sinks[i].connect(core.sinks[i]) for i in range(num_ports)]
            return
        self.inject = inj = MSFrameInjector(inject_bytes, num_ports, dw)
        if dw == 8:
            self.capture = _Capture(capture_bytes, core.sources)
        for i in range(num_ports):
            arb = Arbiter([self.sinks[i], inj.sources[i]], core.sinks[i])
            self.submodules += arb

    def connect_phys(self, phys):
        """Connects port i to phys[i] = (to_port, from_port): whole Ethernet frames, 8 bits, LiteEth PHY
        layout, every field (a frame the PHY/MAC flags in `error`, e.g. a bad FCS, is dropped as phy_error)."""
        if len(phys) != len(self.sinks):
            raise ValueError(f"{len(self.sinks)} ports, {len(phys)} PHYs given")
        for i, (to_port, from_port) in enumerate(phys):
            self.comb += from_port.connect(self.sinks[i]), self.sources[i].connect(to_port)

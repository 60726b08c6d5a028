"""MiniSharp datapath: NUM_PORTS Ethernet ports around one collective engine."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.packet import Arbiter, Dispatcher

from cores.lib.buffers import RegisteredBuffer, SkidBuffer
from cores.lib.commit_fifo import CommitFIFO
from cores.lib.counters import add_counters
from cores.minisharp.common import (
    DEFAULT_MAC, DONE_WINDOW, DROP_REASONS, MS_CHUNK_ELEMENTS, TIMEOUT_BITS, TIMEOUT_TICK_LOG2, counters,
    port_description, result_meta_layout, v02_chunk_elements,
)
from cores.minisharp.egress import MSResultFanout, MSResultSerializer, result_word_layout
from cores.minisharp.engine import MSCollectiveEngine
from cores.minisharp.ingress import MSPortIngress


class MSForwardTee(LiteXModule):
    """The forwarding path of one port in builds with a management port: each frame of `sink` goes to `fwd`
    (the static map), `mgmt` (the management port) or both, as its record on `tag` says (one record a frame,
    MSPortIngress.fwd_tag). A copied frame moves when both outputs take it. Each output ends in a register
    (valid and data): one cycle of latency, and no ready depends on a valid."""
    def __init__(self, dw):
        self.sink = stream.Endpoint(port_description(dw))
        self.tag = stream.Endpoint([("mgmt", 1), ("fwd", 1)])
        self.fwd = stream.Endpoint(port_description(dw))
        self.mgmt = stream.Endpoint(port_description(dw))

        # # #

        self.pipe_fwd, self.pipe_mgmt = pf, pm = [stream.PipeValid(port_description(dw)) for _ in range(2)]
        sink, tag = self.sink, self.tag
        room_f, room_m = Signal(), Signal()
        self.comb += [
            sink.connect(pf.sink, omit={"valid", "ready"}), sink.connect(pm.sink, omit={"valid", "ready"}),
            pf.source.connect(self.fwd), pm.source.connect(self.mgmt),
            room_f.eq(pf.sink.ready | ~tag.fwd), room_m.eq(pm.sink.ready | ~tag.mgmt),
            pf.sink.valid.eq(sink.valid & tag.valid & tag.fwd & room_m),
            pm.sink.valid.eq(sink.valid & tag.valid & tag.mgmt & room_f),
            sink.ready.eq(tag.valid & room_f & room_m),
            tag.ready.eq(sink.valid & sink.ready & sink.last),
        ]


class MiniSharpCore(LiteXModule):
    """MiniSharp switch datapath.

    sinks[i] / sources[i]: port i, LiteEth PHY layout, `dw` bits (raw Ethernet frames, no preamble/FCS).
    Per port: parser + store-and-forward buffers (MSPortIngress), a COL_RES serializer with the port's
    MACs, and a packet arbiter between results and forwarded frames. One collective engine of `lanes`
    FP32 lanes serves all ports (round robin per frame).
    Config inputs: policy (MSP_*), dst_macs[i]/src_macs[i] (COL_RES headers), fwd_map[i] (output port of
    frames forwarded from input i), admin_ports (bit i: port i may send COL_SETUP / COL_TEARDOWN), mac_filter
    and mac (v0.2 addressing, common.GROUP_MAC), slot_timeout / ctx_timeout (idle timeouts in ticks of
    2^tick_log2 cycles, 0: never). Counters (cores.lib.counters, 32-bit, wrap): counters[name] for each name of
    common.counters(num_ports): drop_<reason>, port<i>_rx_frames / _rx_drops / _fwd_frames / _tx_frames,
    setups, chunks.
    Parameters: num_ports >= 2, dw in (8, 16, 32, 64), lanes (power of two, lanes*32 multiple of dw;
    default max(1, dw/32)), chunk_elements (ABI: MS_CHUNK_ELEMENTS), n_contexts >= 2, n_slots >= 1,
    max_ranks <= 256, window (completion window, DONE_WINDOW), tick_log2 (TIMEOUT_TICK_LOG2), partials (v0.2
    exact partials in and out; default: one lane, the only width that has them), carry_limbs (limbs a
    carry stage of the rounding pipeline resolves: MSAccumulatorBank's; more limbs, fewer stages and
    flip-flops, a longer carry chain).
    mgmt_mac (None: no management port): a management stack (e.g. LiteEth's MAC under Etherbone) is an
    internal port of the forwarding path. mgmt_source carries to it the frames to mgmt_mac and the broadcast
    ARPs from the ports set in the input mgmt_ports whose source MAC is mgmt_src_mac when mgmt_src_filter
    is set (others to mgmt_mac are dropped as mgmt_refused); the frames of mgmt_sink leave by the port of
    the last frame delivered to it. Counters mgmt_rx_frames / mgmt_tx_frames; forwarded frames take one
    cycle more (MSForwardTee).
    """
    def __init__(self, num_ports=2, dw=8, lanes=None, chunk_elements=MS_CHUNK_ELEMENTS, n_contexts=8,
                 n_slots=4, max_ranks=64, res_fifo_words=None, window=DONE_WINDOW, tick_log2=TIMEOUT_TICK_LOG2,
                 partials=None, carry_limbs=None, mgmt_mac=None):
        if num_ports < 2:
            raise ValueError(f"num_ports must be >= 2, got {num_ports}")
        if n_contexts < 2:
            raise ValueError(f"n_contexts must be >= 2, got {n_contexts}")
        lanes = lanes or max(1, dw // 32)
        partials = lanes == 1 if partials is None else partials
        wpc = chunk_elements // max(lanes, 1)
        self.num_ports, self.dw, self.lanes = num_ports, dw, lanes
        self.sinks = [stream.Endpoint(port_description(dw)) for _ in range(num_ports)]
        self.sources = [stream.Endpoint(port_description(dw)) for _ in range(num_ports)]
        self.policy = Signal()
        self.dst_macs = [Signal(48) for _ in range(num_ports)]
        self.src_macs = [Signal(48) for _ in range(num_ports)]
        self.fwd_map = [Signal(max=num_ports) for _ in range(num_ports)]
        self.admin_ports = Signal(num_ports, reset=2**num_ports - 1)
        self.mac_filter, self.mac = Signal(), Signal(48, reset=DEFAULT_MAC)
        self.slot_timeout, self.ctx_timeout = Signal(TIMEOUT_BITS), Signal(TIMEOUT_BITS)
        self.with_mgmt = with_mgmt = mgmt_mac is not None
        if with_mgmt:
            self.mgmt_source = stream.Endpoint(port_description(dw))
            self.mgmt_sink = stream.Endpoint(port_description(dw))
            self.mgmt_ports = Signal(num_ports, reset=1)
            self.mgmt_src_filter, self.mgmt_src_mac = Signal(), Signal(48)

        # # #

        chunk_bytes = 4 * chunk_elements
        pbytes = 1 << max(11, (2 * chunk_bytes - 1).bit_length())   # two chunks, at least 2 KiB
        self.ingress = [MSPortIngress(dw, lanes, payload_bytes=pbytes, raw_bytes=2048, with_mgmt=with_mgmt)
                        for _ in range(num_ports)]
        self.engine = engine = MSCollectiveEngine(num_ports, lanes, chunk_elements, n_contexts, n_slots, max_ranks,
                                                  window, tick_log2, partials, carry_limbs)
        self.comb += engine.slot_timeout.eq(self.slot_timeout), engine.ctx_timeout.eq(self.ctx_timeout)
        self.fanout = fanout = MSResultFanout(num_ports, lanes)
        # Between the engine and the fan-out: a meta queue (the engine emits a chunk's meta record when it
        # accepts the completing contribution, while the previous results may still be in flight) and a
        # registered valid and ready for the result words (timing).
        self.meta_buf = stream.SyncFIFO(engine.meta.description, 4, buffered=True)
        self.meta_pipe = RegisteredBuffer(engine.meta.description)
        self.result_buf = RegisteredBuffer(engine.result.description)
        self.comb += [
            engine.meta.connect(self.meta_buf.sink), self.meta_buf.source.connect(self.meta_pipe.sink),
            self.meta_pipe.source.connect(fanout.meta),
            engine.result.connect(self.result_buf.sink), self.result_buf.source.connect(fanout.result),
        ]
        # a port's result words: a v0.1 chunk streams through; a store-and-forward chunk (EXACT in, FP32 out)
        # waits whole, with room to spare
        res_fifo_words = res_fifo_words or max(wpc, 2, 2 * v02_chunk_elements(chunk_elements) if partials else 0)
        fwd = [[stream.Endpoint(port_description(dw)) for _ in range(num_ports)] for _ in range(num_ports)]
        mgmt_rx = [stream.Endpoint(port_description(dw)) for _ in range(num_ports)]
        mgmt_tx = [stream.Endpoint(port_description(dw)) for _ in range(num_ports)]
        for i, ing in enumerate(self.ingress):
            self.submodules += ing
            self.comb += [
                self.sinks[i].connect(ing.sink), ing.policy.eq(self.policy), ing.admin.eq(self.admin_ports[i]),
                ing.mac_filter.eq(self.mac_filter), ing.mac.eq(self.mac),
                ing.desc.connect(engine.desc_sinks[i]),
            ]
            # Payload words cross to the engine register to register (valid and ready): the engine's payload
            # handshake (port multiplexer -> take -> load) stays local. Words wait here while their frame is
            # validated, so this adds no latency.
            pbuf = RegisteredBuffer([("data", 32 * lanes)])
            self.submodules += pbuf
            self.comb += ing.payload.connect(pbuf.sink), pbuf.source.connect(engine.payload_sinks[i])
            fwd_in = ing.fwd
            if with_mgmt:
                tee = MSForwardTee(dw)
                self.submodules += tee
                self.comb += [
                    ing.mgmt_en.eq(self.mgmt_ports[i]), ing.mgmt_mac.eq(mgmt_mac),
                    ing.src_filter.eq(self.mgmt_src_filter), ing.src_mac.eq(self.mgmt_src_mac),
                    ing.fwd.connect(tee.sink), ing.fwd_tag.connect(tee.tag), tee.mgmt.connect(mgmt_rx[i]),
                ]
                fwd_in = tee.fwd
            disp = Dispatcher(fwd_in, [fwd[i][o] for o in range(num_ports)])
            self.submodules += disp
            self.comb += disp.sel.eq(self.fwd_map[i])
        for o in range(num_ports):
            mfifo = stream.SyncFIFO(result_meta_layout, 2, buffered=True)
            # Result words in block RAM (the RAM's read ends in a plain register).
            wfifo = CommitFIFO(32 * lanes, res_fifo_words)
            # Registered ready towards the fan-out (its broadcast ANDs every port's ready).
            wskid = SkidBuffer(result_word_layout(lanes))
            self.comb += fanout.word_sources[o].connect(wskid.sink)
            words = wskid.source
            ser = MSResultSerializer(dw, lanes)
            # The serializer's byte multiplexers end in a register before the port arbiter; registered ready back.
            # Words become visible to the serializer one cycle after a word that commits (CommitFIFO: what was
            # written before the commit's cycle).
            self.sync += wfifo.commit.eq(words.valid & ~wfifo.full & words.commit)
            ser_out = RegisteredBuffer(port_description(dw))
            arb = Arbiter([ser_out.source] + [fwd[i][o] for i in range(num_ports)] + ([mgmt_tx[o]] if with_mgmt else []),
                          self.sources[o])
            self.submodules += mfifo, wfifo, wskid, ser, ser_out, arb
            self.comb += ser.source.connect(ser_out.sink)
            self.comb += [
                fanout.meta_sources[o].connect(mfifo.sink),
                wfifo.we.eq(words.valid), wfifo.din.eq(words.data), words.ready.eq(~wfifo.full),
                mfifo.source.connect(ser.meta), wfifo.source.connect(ser.words),
                ser.dst_mac.eq(self.dst_macs[o]), ser.src_mac.eq(self.src_macs[o]),
            ]

        if with_mgmt:
            # To the management port: one frame at a time from the ports; its answers leave by the port of
            # the last frame it received (a request's answer follows the request).
            self.mgmt_arb = Arbiter(mgmt_rx, self.mgmt_source)
            reply = Signal(max=num_ports)
            self.sync += [If(m.valid & m.ready & m.last, reply.eq(i)) for i, m in enumerate(mgmt_rx)]
            self.mgmt_disp = Dispatcher(self.mgmt_sink, mgmt_tx)
            self.comb += self.mgmt_disp.sel.eq(reply)

        self._add_event_counters()

    def _add_event_counters(self):
        """The counters (cores.lib.counters) of common.counters(num_ports), one cycle after their events; the
        drop events are registered and their sums registered again before the counters' adders (timing)."""
        engine = self.engine

        def reg(sig):
            r = Signal.like(sig)
            self.sync += r.eq(sig)
            return r

        def total(events):
            s = Signal(max=len(events) + 1)
            self.comb += s.eq(sum(events))
            return s
        ev = [(reg(ing.drop), reg(ing.drop_reason)) for ing in self.ingress]
        e_drop, e_reason, e_port = reg(engine.drop), reg(engine.drop_reason), reg(engine.drop_port)
        events = {f"drop_{name}": total([d & (rs == r) for d, rs in ev] + [e_drop & (e_reason == r)])
                  for r, (name, _) in enumerate(DROP_REASONS)}
        for i, ing in enumerate(self.ingress):
            src = self.sources[i]
            events.update({
                f"port{i}_rx_frames": ing.frame, f"port{i}_rx_drops": total([ev[i][0], e_drop & (e_port == i)]),
                f"port{i}_fwd_frames": ing.fwd_frame, f"port{i}_tx_frames": src.valid & src.ready & src.last,
            })
        events.update(setups=engine.setup_done, chunks=engine.chunk_done, teardowns=engine.teardown_done,
                      slot_timeouts=engine.slots_expired, ctx_timeouts=engine.ctx_expired)
        if self.with_mgmt:
            ms, mk = self.mgmt_source, self.mgmt_sink
            events.update(mgmt_rx_frames=ms.valid & ms.ready & ms.last, mgmt_tx_frames=mk.valid & mk.ready & mk.last)
        add_counters(self, counters(self.num_ports, self.with_mgmt), events, register=True)

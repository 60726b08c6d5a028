"""RIFL Layer 2 receive side: the reassembler (Layer 2 packets of several sources into upper-layer
packets), top of the unit parser, the context table, the body packer and the packet store."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream
from litex.soc.interconnect.csr import CSRField, CSRStorage

from cores.lib.counters import add_counter_csrs, add_counters
from cores.rifl.common import (
    L2_LENGTH_OFFSET, L2_MAX_PACKET_BYTES, L2_RX_CONTEXTS, L2_RX_CONTEXTS_MAX, L2_RX_COUNTERS, L2_RX_PARAMS,
    L2_RX_TIMEOUT, L2_RX_TIMEOUT_BITS, L2_RX_TIMEOUT_STEPS, SEGMENT_BYTES, check_frame_bits, check_l2_data_width,
    l2_data_layout, l2_segments, payload_bytes, user_layout)
from cores.rifl.l2.context_table import L2ContextTable
from cores.rifl.l2.pack import BytePacker
from cores.rifl.l2.packet_store import L2PacketStore, read_plan
from cores.rifl.l2.parser import L2UnitParser


class L2Reassembler(LiteXModule):
    """Layer 2 reassembly per source: Layer 2 packets in (from RIFLEndpoint.source), upper-layer packets out.

    sink: user_layout(frame_bits) with `last`, one L2 packet per Layer 1 packet. source: `data` beats of
    data_width bits (full except the last), params `length`, `header` (as received in the first segment)
    and `reply` (its reply route, cores.rifl.common.reply_route, computed in gateware).

    Segments of different sources may arrive interleaved (behind a switch); those of one source arrive in
    order. `n_sources` contexts (1..L2_RX_CONTEXTS_MAX) are keyed by the reply route of the received
    header: a segment whose key has an open context continues its packet, any other segment starts one
    (its length prefix is read) and takes a free context. Each context owns a block-RAM region of
    max_packet (1..L2_MAX_PACKET_BYTES) bytes rounded up to a power of two of segments, where segment k
    of a packet is stored at k * SEGMENT_BYTES; a context is freed when its packet has left on source.
    Complete packets leave whole, in completion order, one after the other (store and forward per packet).

    A first segment finding no free context waits (back-pressure) while a complete packet holds one,
    since that context frees itself once the packet has left; if every context is still assembling it
    is dropped (`no_context`), as one longer than max_packet (`too_long`), and its key is entered in one
    of n_sources skip entries, which drop its continuation segments (`orphans`); with every skip entry
    busy too the drop is counted in `untracked`. A first segment with length 0 or too large is dropped
    (`bad_length`). A Layer 1 packet shorter than L2_PACKET_BYTES is completed with zeros, a longer one
    truncated (`malformed`).
    Timeout: a context assembling a packet (OPEN) that gets no segment for more than `timeout` cycles
    (at most (1 + 1/L2_RX_TIMEOUT_STEPS) x `timeout`; cycles with the sink stalled by the reassembler
    do not count, each taken out a cycle later: the pause is registered) is freed, its partial packet discarded (`timeouts`), and its key entered in a skip
    entry for its remaining segments, so late continuations are dropped (`orphans`); a skip entry idle
    as long frees itself too, so a source silent for 2.5 x `timeout` starts afresh. `timeout`: multiple
    of L2_RX_TIMEOUT_STEPS in [2 L2_RX_TIMEOUT_STEPS, 2^L2_RX_TIMEOUT_BITS), run-time CSR `timeout` if with_csr.
    Throughput: one Layer 1 beat a cycle on sink; on source one beat a cycle within a packet and at most
    one idle cycle between packets (the packet's words are read from the 2-byte length prefix on, up to
    a whole number of beats), so with data_width >= 8 * payload bytes a segment leaves in no more cycles
    than its Layer 1 packet took to arrive. Latency: a packet's first beat leaves 8 cycles after its last
    Layer 1 beat (F = 256; 7 at F = 128), 3 of them the read pipeline's: the next packet's read plan, the
    block RAM's output and the word's prefix drop and mask, each registered.
    Submodules: parser (L2UnitParser), contexts (L2ContextTable), body_packer (BytePacker), store
    (L2PacketStore).
    """
    def __init__(self, frame_bits=256, data_width=64, n_sources=L2_RX_CONTEXTS, max_packet=L2_MAX_PACKET_BYTES,
                 timeout=L2_RX_TIMEOUT, with_csr=False):
        check_frame_bits(frame_bits)
        check_l2_data_width(data_width)
        if not isinstance(n_sources, int) or not 1 <= n_sources <= L2_RX_CONTEXTS_MAX:
            raise ValueError(f"n_sources must be an integer in [1, {L2_RX_CONTEXTS_MAX}], got {n_sources!r}")
        if not isinstance(max_packet, int) or not 1 <= max_packet <= L2_MAX_PACKET_BYTES:
            raise ValueError(f"max_packet must be an integer in [1, {L2_MAX_PACKET_BYTES}], got {max_packet!r}")
        if not isinstance(timeout, int) or timeout % L2_RX_TIMEOUT_STEPS or \
                not 2 * L2_RX_TIMEOUT_STEPS <= timeout < 2**L2_RX_TIMEOUT_BITS:
            raise ValueError(f"timeout must be a multiple of {L2_RX_TIMEOUT_STEPS} in [{2 * L2_RX_TIMEOUT_STEPS}, "
                             f"2**{L2_RX_TIMEOUT_BITS}), got {timeout!r}")
        W = data_width // 8
        P = payload_bytes(frame_bits)
        M = max(W, 1 << (P - 1).bit_length())      # memory word bytes: >= P, divides SEGMENT_BYTES
        S = 1 << (l2_segments(max_packet) - 1).bit_length()    # segment slots per context
        self.n_sources, self.max_packet, self.timeout = n_sources, max_packet, timeout
        self.memory_bytes = n_sources * S * SEGMENT_BYTES
        self.sink = sink = stream.Endpoint(user_layout(frame_bits))
        self.source = source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))
        if with_csr:
            self._timeout = CSRStorage(fields=[CSRField("cycles", size=L2_RX_TIMEOUT_BITS, reset=timeout,
                description="Idle timeout of an assembling context or skip entry, in cycles (a multiple of "
                            f"{L2_RX_TIMEOUT_STEPS}: the low bits are ignored).")])

        # # #

        # Layer 1 beats -> units; each unit's context decided at its decision beat, before its first body word
        # leaves the body packer (segment bodies: length prefix, packet, padding, SEGMENT_BYTES each, packed
        # into M-byte words); the words go to the packet store.
        self.parser = inp = L2UnitParser(frame_bits)
        self.contexts = ctxs = L2ContextTable(n_sources, S, max_packet, plan=lambda m, length: read_plan(m, W, M, length),
                                              late_match=L2_LENGTH_OFFSET // P >= 1)
        self.body_packer = wp = BytePacker(P, M, sizes=(M,), clean=True, ahead=True)
        self.store = store = L2PacketStore(data_width, n_sources, S, M, planned=True)
        # the timeout's pause, registered (a cycle late): the sink's handshake does not reach the prescaler
        stalled = Signal()
        self.sync += stalled.eq(sink.valid & ~sink.ready)
        self.comb += [
            sink.connect(inp.sink),
            [getattr(ctxs, name).eq(getattr(inp, name))
             for name in ("hdr_now", "key", "hdr", "length", "length_zero", "length_load", "start",
                          "hold", "at_decision")],
            ctxs.length_now.eq(inp.length_raw),
            ctxs.beat0.eq(inp.first),
            ctxs.pre_decision.eq(inp.pre_decision),
            ctxs.decide.eq(inp.go & inp.at_decision),
            ctxs.stalled.eq(stalled),
            ctxs.timeout_cycles.eq(self._timeout.storage if with_csr else C(timeout, L2_RX_TIMEOUT_BITS)),
            wp.size.eq(M),
            wp.sink.data.eq(inp.body_data),
            wp.sink.n.eq(inp.body_n),
            wp.sink.valid.eq(inp.valid & (~inp.at_decision | (store.units.ready & ~ctxs.wait))),
            store.units.valid.eq(inp.valid & inp.at_decision & wp.sink.ready & ~ctxs.wait),
            store.units.ctx.eq(ctxs.ctx),
            store.units.seg.eq(ctxs.seg),
            store.units.keep.eq(ctxs.keep),
            store.units.complete.eq(ctxs.complete),
            inp.go.eq(wp.sink.valid & wp.sink.ready),
            wp.source.connect(store.words),
            ctxs.lookup.eq(store.lookup),
            store.length.eq(ctxs.lookup_length),
            store.header.eq(ctxs.lookup_header),
            store.reply.eq(ctxs.lookup_key),
            [store.plan[name].eq(sig) for name, sig in ctxs.lookup_plan.items()],
            [getattr(ctxs, name).eq(getattr(store, name)) for name in ("out_beat", "out_last", "out_ctx")],
            store.source.connect(source),
        ]
        add_counters(self, L2_RX_COUNTERS, {**inp.events, **ctxs.events, **store.events})
        if with_csr:
            add_counter_csrs(self, L2_RX_COUNTERS)

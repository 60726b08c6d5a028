"""MiniSharp result path: broadcast of result chunks to the egress range, COL_RES frame serializers."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.minisharp.common import (
    ETHERTYPE, MS_OP_COL_RES, MS_HEADER_BYTES, FP32_BYTES, RES_HEADER, result_meta_layout, port_description,
    version_byte,
)
from cores.minisharp.engine import engine_meta_layout
from cores.minisharp.ingress import lane_byteswap


class _Broadcast(Module):
    """Offers one stream beat to every port of `targets`; the beat is consumed once all took it."""
    def __init__(self, sink, sources, targets):
        n = len(sources)
        done = Signal(n)
        take = Signal(n)
        self.complete = Signal()
        for i, src in enumerate(sources):
            self.comb += [
                src.valid.eq(sink.valid & targets[i] & ~done[i]),
                take[i].eq(~targets[i] | done[i] | src.ready),
            ]
        self.comb += [self.complete.eq(sink.valid & (take == (2 ** n - 1))), sink.ready.eq(self.complete)]
        self.sync += If(self.complete, done.eq(0)).Else(
            done.eq(done | Cat(*[s.valid & s.ready for s in sources])))


class MSResultFanout(LiteXModule):
    """Copies each result chunk (meta record + ceil(n/lanes) words) to the ports of its `targets` mask.
    Ports outside the mask are untouched; a port that stalls holds the copy (its FIFO fills) without
    affecting what the others receive. One word per cycle when all targets are ready."""
    def __init__(self, num_ports, lanes):
        self.meta = stream.Endpoint(engine_meta_layout(num_ports))
        self.result = stream.Endpoint([("data", 32 * lanes)])
        self.meta_sources = [stream.Endpoint(result_meta_layout) for _ in range(num_ports)]
        self.word_sources = [stream.Endpoint([("data", 32 * lanes)]) for _ in range(num_ports)]

        # # #

        targets = Signal(num_ports)
        targets_now = Signal(num_ports)
        self.comb += targets_now.eq(self.meta.targets)
        remaining = Signal(16)
        in_words = Signal()
        meta_in = stream.Endpoint(result_meta_layout)
        word_in = stream.Endpoint([("data", 32 * lanes)])
        self.comb += [
            meta_in.valid.eq(self.meta.valid & ~in_words),
            meta_in.collective_id.eq(self.meta.collective_id), meta_in.chunk_index.eq(self.meta.chunk_index),
            meta_in.n_elements.eq(self.meta.n_elements),
            self.meta.ready.eq(meta_in.ready & ~in_words),
            word_in.valid.eq(self.result.valid & in_words), word_in.data.eq(self.result.data),
            self.result.ready.eq(word_in.ready & in_words),
        ]
        for src in self.meta_sources:
            self.comb += [src.collective_id.eq(meta_in.collective_id), src.chunk_index.eq(meta_in.chunk_index),
                          src.n_elements.eq(meta_in.n_elements)]
        for src in self.word_sources:
            self.comb += src.data.eq(word_in.data)
        self.bmeta = _Broadcast(meta_in, self.meta_sources, targets_now)
        self.bword = _Broadcast(word_in, self.word_sources, targets)
        self.sync += [
            If(self.bmeta.complete,
                targets.eq(targets_now),
                remaining.eq((self.meta.n_elements + lanes - 1) >> log2_int(lanes)),
                in_words.eq(1)),
            If(self.bword.complete,
                remaining.eq(remaining - 1),
                If(remaining == 1, in_words.eq(0))),
        ]


class MSResultSerializer(LiteXModule):
    """Turns (meta, words) into an Ethernet COL_RES frame on a `dw`-bit port stream: the port's MAC
    addresses (`dst_mac`, `src_mac`, from CSRs), the MiniSharp header, then n FP32 big-endian.
    A frame starts once its first result word is there (words then arrive at least at the port rate).
    One beat per cycle; a stalled `source` stalls only this port."""
    def __init__(self, dw, lanes):
        B = dw // 8
        self.meta = stream.Endpoint(result_meta_layout)
        self.words = stream.Endpoint([("data", 32 * lanes)])
        self.source = stream.Endpoint(port_description(dw))
        self.dst_mac = Signal(48)
        self.src_mac = Signal(48)

        # # #

        hdr = Signal(8 * MS_HEADER_BYTES)
        self.comb += hdr.eq(RES_HEADER.value(
            dst_mac=self.dst_mac, src_mac=self.src_mac, ethertype=ETHERTYPE, version=version_byte(),
            opcode=MS_OP_COL_RES, collective_id=self.meta.collective_id, chunk_index=self.meta.chunk_index))
        k = 32 * lanes // dw
        wbytes = Signal(32 * lanes)
        self.comb += wbytes.eq(lane_byteswap(self.words.data, lanes))
        hb = Signal(max=MS_HEADER_BYTES // B + 1)
        left = Signal(18)         # payload bytes not sent yet
        j = Signal(max=max(k, 2))
        last = Signal()           # registered: left <= B
        self.fsm = fsm = FSM(reset_state="HEADER")
        fsm.act("HEADER",
            self.source.valid.eq(self.meta.valid & self.words.valid),   # the values follow without a gap
            self.source.data.eq(Array(hdr[i * dw:(i + 1) * dw] for i in range(MS_HEADER_BYTES // B))[hb]),
            If(self.source.valid & self.source.ready,
                NextValue(hb, hb + 1),
                If(hb == MS_HEADER_BYTES // B - 1, NextValue(hb, 0), NextValue(j, 0),
                   NextValue(left, self.meta.n_elements * FP32_BYTES),
                   NextValue(last, self.meta.n_elements * FP32_BYTES <= B), NextState("PAYLOAD"))
            )
        )
        last_be = Signal(B)
        for b in range(B):
            self.comb += last_be[b].eq(left == b + 1)
        fsm.act("PAYLOAD",
            self.source.valid.eq(self.words.valid),
            self.source.data.eq(Array(wbytes[i * dw:(i + 1) * dw] for i in range(k))[j] if k > 1 else wbytes),
            self.source.last.eq(last),
            self.source.last_be.eq(Mux(last, last_be if B > 1 else 1, 0)),
            If(self.source.valid & self.source.ready,
                NextValue(left, left - B), NextValue(last, left <= 2 * B),
                NextValue(j, Mux(j == k - 1, 0, j + 1)),
                self.words.ready.eq((j == k - 1) | last),
                If(last, self.meta.ready.eq(1), NextState("HEADER"))
            )
        )

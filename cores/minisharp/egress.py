"""MiniSharp result path: broadcast of result chunks to the egress range, COL_RES frame serializers."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.logic import shift_add
from cores.minisharp.common import (
    ETHERTYPE, MS_HEADER_BYTES, FP32_BYTES, DATA_HEADER, PARTIAL_ELEMENT_BYTES, PARTIAL_WORDS,
    result_meta_layout, port_description, version_byte,
)
from cores.minisharp.ingress import lane_byteswap
from cores.minisharp.validation import engine_meta_layout


def result_word_layout(lanes):
    """Result words to the ports: `commit` makes the words so far available to the port's serializer (every
    word, or a store-and-forward chunk's last one)."""
    return [("data", 32 * lanes), ("commit", 1)]


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
    """Copies each result chunk (meta record + ceil(n/lanes) words, or n * PARTIAL_WORDS for exact elements at
    one lane) to the ports of its `targets` mask.
    Ports outside the mask are untouched; a port that stalls holds the copy (its FIFO fills) without
    affecting what the others receive. One word per cycle when all targets are ready."""
    def __init__(self, num_ports, lanes):
        self.meta = stream.Endpoint(engine_meta_layout(num_ports))
        self.result = stream.Endpoint([("data", 32 * lanes)])
        self.meta_sources = [stream.Endpoint(result_meta_layout) for _ in range(num_ports)]
        self.word_sources = [stream.Endpoint(result_word_layout(lanes)) for _ in range(num_ports)]

        # # #

        targets = Signal(num_ports)
        targets_now = Signal(num_ports)
        self.comb += targets_now.eq(self.meta.targets)
        remaining = Signal(16)
        in_words = Signal()
        meta_in = stream.Endpoint(result_meta_layout)
        word_in = stream.Endpoint(result_word_layout(lanes))
        saf = Signal()
        fields = [name for name, _ in result_meta_layout]
        self.comb += [
            meta_in.valid.eq(self.meta.valid & ~in_words),
            [getattr(meta_in, f).eq(getattr(self.meta, f)) for f in fields],
            self.meta.ready.eq(meta_in.ready & ~in_words),
            word_in.valid.eq(self.result.valid & in_words), word_in.data.eq(self.result.data),
            word_in.commit.eq(~saf | (remaining == 1)),
            self.result.ready.eq(word_in.ready & in_words),
        ]
        for src in self.meta_sources:
            self.comb += [getattr(src, f).eq(getattr(meta_in, f)) for f in fields]
        for src in self.word_sources:
            self.comb += src.data.eq(word_in.data), src.commit.eq(word_in.commit)
        self.bmeta = _Broadcast(meta_in, self.meta_sources, targets_now)
        self.bword = _Broadcast(word_in, self.word_sources, targets)
        self.sync += [
            If(self.bmeta.complete,
                targets.eq(targets_now), saf.eq(self.meta.saf),
                remaining.eq(Mux(self.meta.exact, shift_add(self.meta.n_elements, PARTIAL_WORDS),
                                 (self.meta.n_elements + lanes - 1) >> log2_int(lanes))),
                in_words.eq(1)),
            If(self.bword.complete,
                remaining.eq(remaining - 1),
                If(remaining == 1, in_words.eq(0))),
        ]


class MSResultSerializer(LiteXModule):
    """Turns (meta, words) into an Ethernet frame on a `dw`-bit port stream: the meta's opcode (COL_RES, or
    COL_DATA / COL_PDATA to the parent switch) and rank, Dst MAC the meta's (use_dst) or the port's
    (`dst_mac`, a CSR), Src MAC the port's (`src_mac`), the MiniSharp header, then n FP32 or exact elements,
    big-endian.
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
        m = self.meta
        self.comb += hdr.eq(DATA_HEADER.value(
            dst_mac=Mux(m.use_dst, m.dst_mac, self.dst_mac), src_mac=self.src_mac, ethertype=ETHERTYPE,
            version=version_byte(), opcode=m.opcode, rank=m.rank, collective_id=m.collective_id,
            chunk_index=m.chunk_index))
        nbytes = Signal(18)
        self.comb += nbytes.eq(Mux(m.exact, shift_add(m.n_elements, PARTIAL_ELEMENT_BYTES),
                                   shift_add(m.n_elements, FP32_BYTES)))
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
                   NextValue(left, nbytes), NextValue(last, nbytes <= B), NextState("PAYLOAD"))
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

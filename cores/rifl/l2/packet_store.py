"""RIFL Layer 2 packet store: the reassembler's block-RAM packet memory, with the read plan of a packet."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.block_ram import BlockRAM
from cores.rifl.common import L2_HEADER_BITS, L2_LENGTH_BYTES, L2_RX_PARAMS, SEGMENT_BYTES, l2_data_layout
from cores.rifl.l2.pack import BytePacker, byte_enables, byte_mask


def _cat_fields(*fields):
    """Cat of (signal, width) pairs, LSB first, leaving out zero-width fields (Migen prints a zero-width
    slice as a backward part-select)."""
    return Cat(*[s[:w] for s, w in fields if w])


def read_plan(module, W, M, length):
    """The packet store's read plan of a packet of `length` bytes (data_width W bytes, memory words of M
    bytes): [(name, signal)] set in `module`: left (stream bytes to read: the prefix and the packet up to
    whole beats), take (the first word's bytes), more (more words follow); and its first two output beats:
    only (the first is the last), en (its byte enables), rest (the bytes after it), rest_last, rest_en (the
    second beat's)."""
    left, take, more = Signal(8 * L2_LENGTH_BYTES + 1), Signal(bits_for(M)), Signal()
    only, en, rest, rest_last = Signal(), Signal(W), Signal(8 * L2_LENGTH_BYTES), Signal()
    module.comb += [
        left.eq(Cat(C(L2_LENGTH_BYTES, log2_int(W)), (length + W - 1)[log2_int(W):])),
        take.eq(Mux(left < M, left, M)),
        more.eq(left > M),
        only.eq(length <= W),
        en.eq(byte_enables(module, length, W)),
        rest.eq(length - W),
        rest_last.eq(length <= 2 * W),
    ]
    return [("left", left), ("take", take), ("more", more), ("only", only), ("en", en), ("rest", rest),
            ("rest_last", rest_last), ("rest_en", byte_enables(module, rest, W))]


class L2PacketStore(LiteXModule):
    """The reassembler's packet memory: segment bodies in, whole packets out, in completion order.

    units (sink): one entry a unit, in unit order: ctx, seg (segment index in the context), keep (store
    the body, else drop it), complete (the packet's last segment). words (sink, always ready): the units'
    bodies, SEGMENT_BYTES / M words of M bytes each; segment k of context c is stored at (c, k).
    The words of complete packets are read back to back into a packer that drops the 2-byte length
    prefix and cuts data_width beats (source: l2_data_layout(data_width) with L2_RX_PARAMS; a packet is
    read up to a whole number of beats, the bytes past its end masked). `lookup` (out) -> length, header,
    reply (in): the parameters of the next packet's context. `out_beat` / `out_last` / `out_ctx`: a beat left on
    source, whether it was its packet's last, and its context. The memory is a `BlockRAM` (on ECP5 the
    DP16KD's output register holds the read word); skid registers (no cycle added) after the output packer
    and after the complete-packet FIFO keep the output's handshake off the read pipeline's enable and the
    FIFO's read. planned: the next packet's read plan
    (`read_plan` of its length) is an input too, `plan` (name -> signal), else it is computed from `length`.
    """
    def __init__(self, data_width, n_sources, slots, word_bytes, planned=False):
        W, M = data_width // 8, word_bytes
        n = n_sources
        cb = bits_for(n - 1)
        WPS = SEGMENT_BYTES // M                   # words per segment
        lw, ls = log2_int(WPS), log2_int(slots)
        self.units = stream.Endpoint([("ctx", cb), ("seg", max(ls, 1)), ("keep", 1), ("complete", 1)])
        self.words = stream.Endpoint([("data", 8 * M)])
        self.source = stream.Endpoint(stream.EndpointDescription(l2_data_layout(data_width), L2_RX_PARAMS))
        self.lookup = Signal(cb)
        self.length = Signal(8 * L2_LENGTH_BYTES)
        self.header = Signal(L2_HEADER_BITS)
        self.reply = Signal(L2_HEADER_BITS)
        self.out_beat = Signal()
        self.out_last = Signal()
        self.out_ctx = Signal(cb)
        self.events = {"delivered": Signal()}

        # # #

        ram_re = self._write(M, WPS, n, slots, cb, lw, ls)
        # Reading: the words of complete packets back to back (the first word of a packet in the cycle its
        # context leaves `next`), registered after the block RAM (its output is slow: 1 cycle), then its prefix
        # dropped and its bytes past the packet masked (1 cycle), into a packer that cuts data_width beats.
        # Beside the parameters, each packet's first two output beats decided ahead (computed from `next`'s
        # registers): whether each is the packet's last, their byte enables, the bytes left after the first.
        self.params = stream.SyncFIFO([("ctx", cb)] + L2_RX_PARAMS + [
            ("only", 1), ("en", W), ("rest", 8 * L2_LENGTH_BYTES), ("rest_last", 1), ("rest_en", W)], 4)
        self.out_packer = BytePacker(M, W, sizes=(W,), clean=True, ahead=True)
        nb = 8 * L2_LENGTH_BYTES + 1
        self._next_packet(W, M, cb, nb, planned)
        self._read(M, cb, lw, ls, nb, ram_re)
        self._output(W)

    def _write(self, M, WPS, n, slots, cb, lw, ls):
        """The units' bodies into the block RAM, complete packets into self.done; returns the block RAM's read
        enable."""
        words = self.words
        # Writing: one word a cycle at (context, segment, word).
        self.unit_fifo = units = stream.SyncFIFO(self.units.description, 4)
        # The read data leaves through two registers (BlockRAM: the block RAM's own, lowered on ECP5 to the
        # DP16KD's address and output registers), enabled by `advance`. A word is read only once its packet is
        # complete and its context is written again only after the packet has left: a read never meets a
        # write to its address (other reads, of unused data, may).
        ram_re = Signal()
        self.ram = ram = BlockRAM(8 * M, n * slots * WPS, re=ram_re)
        self.done = done = stream.SyncFIFO([("ctx", cb)], max(n, 2))      # complete packets, in order
        wword = Signal(max(lw, 1))
        unit_end = Signal()
        self.comb += [
            self.units.connect(units.sink),
            words.ready.eq(1),
            unit_end.eq(wword == WPS - 1),
            ram.adr_w.eq(_cat_fields((wword, lw), (units.source.seg, ls), (units.source.ctx, cb))),
            ram.dat_w.eq(words.data),
            ram.we.eq(words.valid & units.source.valid & units.source.keep),
            units.source.ready.eq(words.valid & unit_end),
            done.sink.valid.eq(words.valid & unit_end & units.source.valid & units.source.keep &
                               units.source.complete),
            done.sink.ctx.eq(units.source.ctx),
        ]
        self.sync += If(words.valid, wword.eq(Mux(unit_end, 0, wword + 1)))
        return ram_re

    def _next_packet(self, W, M, cb, nb, planned):
        # The next complete packet registered with its parameters and read plan (1 cycle): stream bytes to
        # read (the prefix and the packet up to whole beats), the first word's bytes, more words to come.
        # Between them a skid buffer (a registered ready, no cycle added): the read's handshake (from the output's
        # ready through the packers) stops at it, before the FIFO's read.
        self.done_skid = skid = stream.PipeReady([("ctx", cb)])
        self.next = nx = stream.Buffer([("ctx", cb)] + L2_RX_PARAMS + [
            ("left", nb), ("take", bits_for(M)), ("more", 1), ("only", 1), ("en", W), ("rest", 8 * L2_LENGTH_BYTES),
            ("rest_last", 1), ("rest_en", W)], pipe_valid=True)
        if planned:
            self.plan = {name: Signal(len(sig), name=f"plan_{name}") for name, sig in read_plan(LiteXModule(), W, M,
                                                                                             self.length)}
        else:
            self.plan = dict(read_plan(self, W, M, self.length))
        self.comb += [
            self.done.source.connect(skid.sink),
            self.lookup.eq(skid.source.ctx),
            nx.sink.valid.eq(skid.source.valid),
            skid.source.ready.eq(nx.sink.ready),
            nx.sink.ctx.eq(skid.source.ctx),
            nx.sink.length.eq(self.length),
            nx.sink.header.eq(self.header),
            nx.sink.reply.eq(self.reply),
            [getattr(nx.sink, name).eq(sig) for name, sig in self.plan.items()],
        ]

    def _read(self, M, cb, lw, ls, nb, ram_re):
        ram, params, op, nx = self.ram, self.params, self.out_packer, self.next
        # The packet being read: its next word and what is left, with the next word's bytes (min(left, M))
        # and whether more words follow (left > M) registered beside it.
        f_active = Signal()
        f_ctx = Signal(cb)
        f_word = Signal(max(lw + ls, 1))
        f_left = Signal(nb)                                    # stream bytes of the packet not yet read
        f_take = Signal(max=M + 1)
        f_more = Signal()
        r_ctx = Signal(cb)
        r_word = Signal(max(lw + ls, 1))
        r_left = Signal(nb)
        r_take = Signal(max=M + 1)
        r_more = Signal()
        can, advance, issue = Signal(), Signal(), Signal()
        # params.sink.ready (its level is not its depth) as a register of its own, updated with the level
        p_room = Signal(reset=1)
        self.sync += p_room.eq(Mux(params.source.valid & params.source.ready, 1,
                                   Mux(params.sink.valid & params.sink.ready, params.level != params.depth - 1,
                                       params.level != params.depth)))
        pend, pend_first = Signal(), Signal()      # a word is read (block-RAM output)
        pend_n = Signal(max=M + 1)
        raw, raw_valid, raw_first = ram.dat_r, Signal(), Signal()   # the word (the block RAM's output register)
        raw_n = Signal(max=M + 1)
        word, word_n = Signal(8 * M), Signal(max=M + 1)  # then its prefix dropped, the bytes past n zeroed
        word_valid = Signal()
        self.comb += [
            r_ctx.eq(Mux(f_active, f_ctx, nx.source.ctx)),
            r_word.eq(Mux(f_active, f_word, 0)),
            r_left.eq(Mux(f_active, f_left, nx.source.left)),
            r_take.eq(Mux(f_active, f_take, nx.source.take)),
            r_more.eq(Mux(f_active, f_more, nx.source.more)),
            can.eq(f_active | (nx.source.valid & p_room)),
            advance.eq(~word_valid | op.sink.ready),
            issue.eq(advance & can),
            ram_re.eq(advance),
            ram.adr_r.eq(_cat_fields((r_word, lw + ls), (r_ctx, cb))),
            nx.source.ready.eq(issue & ~f_active),
            params.sink.valid.eq(issue & ~f_active),
            params.sink.ctx.eq(nx.source.ctx),
            params.sink.length.eq(nx.source.length),
            params.sink.header.eq(nx.source.header),
            params.sink.reply.eq(nx.source.reply),
            [getattr(params.sink, name).eq(getattr(nx.source, name))
             for name in ("only", "en", "rest", "rest_last", "rest_en")],
            op.sink.valid.eq(word_valid),
            op.sink.data.eq(word),
            op.sink.n.eq(word_n),
        ]
        self.sync += [
            If(advance,
                word_valid.eq(raw_valid),
                word.eq(Mux(raw_first, raw >> 8 * L2_LENGTH_BYTES, raw) & byte_mask(self, raw_n, M)),
                word_n.eq(raw_n),
                raw_valid.eq(pend),
                raw_first.eq(pend_first),
                raw_n.eq(pend_n),
                pend.eq(issue),
                pend_first.eq(~f_active),
                pend_n.eq(r_take - Mux(f_active, 0, L2_LENGTH_BYTES)),
            ),
            If(issue,
                f_active.eq(r_more),
                f_ctx.eq(r_ctx),
                f_word.eq(r_word + 1),
                # read on only if r_more (left > M, so take = M): from r_left, no compare after a subtraction
                f_left.eq(r_left - M),
                f_take.eq(Mux(r_left < 2 * M, r_left - M, M)),
                f_more.eq(r_left > 2 * M),
            ),
        ]

    def _output(self, W):
        source, params, op, ev = self.source, self.params, self.out_packer, self.events
        # Output: beats of W bytes, the packet's last one holding the rest of its length. Each packet is
        # read up to a whole number of beats, so the packer's beat size is constant (no size -> valid ->
        # shifter chain); the bytes after the packet's end are masked. The last beat frees the context.
        # The beat's last flag and byte enables are registered a beat ahead (from the parameter FIFO for a
        # packet's first two beats): the remaining-byte compares are off the output path.
        started = Signal()
        out_rem = Signal(8 * L2_LENGTH_BYTES)                  # bytes left from the current beat on
        rem_last, rem_en = Signal(), Signal(W)
        en = Signal(W)
        # params.source.valid (its level is not 0) as a register of its own, updated with the level: no decode
        # of the level on the output's handshake
        p_any = Signal()
        self.sync += p_any.eq(Mux(params.sink.valid & params.sink.ready, 1,
                                  Mux(params.source.valid & params.source.ready, params.level != 1, params.level != 0)))
        # A skid register after the packer: a beat the output refuses is kept there, so the packer's handshake
        # (and behind it the read pipeline's) is registers' (no cycle added).
        sk_valid, sk_data, out_ready = Signal(), Signal(8 * W), Signal()
        self.sync += [
            If(~sk_valid, sk_data.eq(op.source.data)),
            sk_valid.eq(Mux(sk_valid, ~out_ready, op.source.valid & ~out_ready)),
        ]
        self.comb += [
            source.last.eq(Mux(started, rem_last, params.source.only)),
            en.eq(Mux(started, rem_en, params.source.en)),
            op.size.eq(W),
            out_ready.eq(source.ready & p_any),
            source.valid.eq((sk_valid | op.source.valid) & p_any),
            source.data.eq(Mux(sk_valid, sk_data, op.source.data) & Cat(*[Replicate(en[k], 8) for k in range(W)])),
            source.length.eq(params.source.length),
            source.header.eq(params.source.header),
            source.reply.eq(params.source.reply),
            op.source.ready.eq(~sk_valid),
            params.source.ready.eq(source.valid & source.ready & source.last),
            self.out_beat.eq(source.valid & source.ready),
            self.out_last.eq(source.last),
            self.out_ctx.eq(params.source.ctx),
            ev["delivered"].eq(params.source.ready),
        ]
        self.sync += If(source.valid & source.ready,
            started.eq(~source.last),
            If(started,
                out_rem.eq(out_rem - W),
                rem_last.eq(out_rem <= 2 * W),
                rem_en.eq(byte_enables(self, out_rem - W, W)),
            ).Else(
                out_rem.eq(params.source.rest),
                rem_last.eq(params.source.rest_last),
                rem_en.eq(params.source.rest_en),
            ),
        )

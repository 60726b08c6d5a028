"""MiniSharp per-port ingress: frame parser, classification and store-and-forward buffers."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.commit_fifo import CommitFIFO
from cores.minisharp.common import (
    ETHERTYPE, VERSION_MAJOR, VERSION_MAJOR_SHIFT, MS_HEADER_BYTES, ETH_HEADER_BYTES, ETH_MIN_FRAME,
    SETUP_RECORD_BYTES, MS_OP_COL_SETUP, MS_OP_COL_DATA, MS_OP_COL_RES, MS_OP_COL_TEARDOWN, MSP_TRANSPARENT,
    KIND_SETUP, KIND_DATA, KIND_TEARDOWN, KIND_RESULT, GROUP_MAC, DROP, MS_OP_COL_PDATA, SETUP_RECORD_V02_BYTES,
    VERSION_MINOR_V02, RES_HEADER, BROADCAST_MAC, ETHERTYPE_ARP, PARTIAL_WORDS, PARTIAL_MAG_BITS, ACC_FLAGS, MS_HEADER, SETUP_HEADER, DATA_HEADER, descriptor_layout, port_description, payload_word,
)


def lane_byteswap(word, lanes):
    """Swap the bytes of every 32-bit lane: payload byte order (big-endian FP32) <-> FP32 value."""
    pw = payload_word(lanes)
    return Cat(*[pw.field(word, f"e{ln}") for ln in range(lanes)])


def _check_dw(dw):
    if dw not in (8, 16, 32, 64):
        raise ValueError(f"dw must be 8, 16, 32 or 64 (divides the 24-byte header), got {dw}")


class MSHeaderCapture(LiteXModule):
    """The first `nbytes` bytes of the frames of a `dw`-bit port stream (nbytes a multiple of dw/8).

    sink: always ready. header: byte i of the frame in bits 8i..8i+7, each beat in it the cycle after the
    beat; the next frame overwrites it beat by beat (a one-hot beat index, no compares on a byte count).
    """
    def __init__(self, dw, nbytes):
        _check_dw(dw)
        if nbytes % (dw // 8):
            raise ValueError(f"nbytes ({nbytes}) must be a multiple of dw/8 ({dw // 8})")
        self.sink = sink = stream.Endpoint(port_description(dw))
        self.header = Signal(8 * nbytes)

        # # #

        self.comb += sink.ready.eq(1)
        beats = nbytes // (dw // 8)
        header_next = Signal(8 * nbytes)
        # slot bit i: this beat carries bytes i*B..i*B+B-1 (0 past the capture).
        slot = Signal(beats, reset=1)
        self.sync += If(sink.valid, If(sink.last, slot.eq(1)).Else(slot.eq(slot << 1)))
        for i in range(beats):
            self.comb += header_next[i * dw:(i + 1) * dw].eq(
                Mux(sink.valid & slot[i], sink.data, self.header[i * dw:(i + 1) * dw]))
        self.sync += If(sink.valid, self.header.eq(header_next))


class MSPayloadWriter(LiteXModule):
    """The payload of the frames of a `dw`-bit port stream as words of `lanes` FP32 values, in a CommitFIFO
    of `depth` words (a frame's words reach `source` once it is committed).

    sink: always ready; count: the byte position of the beat on sink (the header's 24 bytes are skipped).
    Words are zero-filled past the frame's end and written one cycle late, from registers (the FIFO's block
    RAM and pointers may sit far from the port). commit/abort/overflow: the FIFO's. One beat per cycle.
    """
    def __init__(self, dw, lanes, depth):
        _check_dw(dw)
        if (32 * lanes) % dw:
            raise ValueError(f"lanes*32 ({32 * lanes}) must be a multiple of dw ({dw})")
        B, wb = dw // 8, 32 * lanes
        self.sink = sink = stream.Endpoint(port_description(dw))
        self.count = Signal(16)
        self.source = stream.Endpoint([("data", wb)])
        self.commit, self.abort, self.overflow = Signal(), Signal(), Signal()
        self.partial_bad = Signal()      # one lane: the frame's payload, read as exact elements, has a bad one

        # # #

        self.comb += sink.ready.eq(1)
        k = wb // dw
        mask = Signal(dw)
        for b in range(B):
            self.comb += mask[8 * b:8 * b + 8].eq(Replicate(~sink.last | (sink.last_be[b:] != 0) | (B == 1), 8))
        # in_pl: registered "count >= 24" (this beat is payload).
        pbeat, in_pl = Signal(), Signal()
        self.comb += pbeat.eq(sink.valid & in_pl)
        self.sync += If(sink.valid, in_pl.eq(~sink.last & (self.count >= MS_HEADER_BYTES - B)))
        self.fifo = fifo = CommitFIFO(wb, depth)
        self.comb += [
            fifo.source.connect(self.source),
            fifo.commit.eq(self.commit), fifo.abort.eq(self.abort), self.overflow.eq(fifo.overflow),
        ]
        if lanes == 1:
            # Word 0 of each exact element (flags << 24 | N[311:288]): reserved flag bits zero, N[311:293]
            # copies of the sign. Checked on the words as written; the flag holds until the next frame's
            # first payload word.
            widx = Signal(max=PARTIAL_WORDS)
            fresh = Signal(reset=1)
            w0 = fifo.din
            bad = Signal()
            top = w0[PARTIAL_MAG_BITS - 288:24]
            self.comb += bad.eq((w0[24 + len(ACC_FLAGS):] != 0) | ((top != 0) & (top != 2**len(top) - 1)))
            wlast = Signal()          # the frame's last beat, in step with its last word's write
            self.sync += [
                wlast.eq(sink.valid & sink.last),
                If(fifo.we,
                    fresh.eq(0),
                    widx.eq(Mux(fresh | (widx == PARTIAL_WORDS - 1), Mux(fresh, 1, 0), widx + 1)),
                    If(fresh, self.partial_bad.eq(bad)).Elif(widx == 0, self.partial_bad.eq(self.partial_bad | bad))
                ),
                If(wlast, fresh.eq(1)),
            ]
        if k == 1:
            self.sync += fifo.we.eq(pbeat), fifo.din.eq(lane_byteswap(sink.data & mask, lanes))
        else:
            # gather k beats
            gw = Signal(wb)
            gi = Signal(max=k)
            word = Signal(wb)
            for j in range(k):
                self.comb += word[j * dw:(j + 1) * dw].eq(
                    Mux(gi == j, sink.data & mask, Mux(gi > j, gw[j * dw:(j + 1) * dw], 0)))
            self.sync += [
                fifo.we.eq(pbeat & ((gi == k - 1) | sink.last)),
                fifo.din.eq(lane_byteswap(word, lanes)),
            ]
            self.sync += If(sink.valid,
                gw.eq(word),
                If(sink.last | (gi == k - 1) | ~pbeat, gi.eq(0)).Else(gi.eq(gi + 1)))


class MSFrameClassifier(LiteXModule):
    """Sorts each frame of a `dw`-bit port at its end: forward, to the engine (kind), or drop (reason).

    Inputs, in the cycle of the frame's last beat: last_beat (1), count (its byte position), nvalid (its
    valid bytes, 1..dw/8), error (the PHY flagged the frame); header (the frame's bytes 0..23, complete one
    cycle later); policy (MSP_*); admin (this port may send COL_SETUP / COL_TEARDOWN); mac_filter and mac
    (v0.2 addressing: only frames to `mac` or GROUP_MAC are consumed, the other MiniSharp frames forwarded;
    a COL_RES to the switch goes to the engine); partial_bad (a COL_PDATA element is invalid; valid two
    cycles after the last beat).
    Three registered steps: t+1 holds the frame length and its compares (from `count`: no subtraction, one
    compare each); t+2 one flag per header check; t+3 the decision, the first failing check in priority
    order: end, forward, to_engine, kind, dropping, reason and payload_bytes (frame length - 24). The
    buffers' own end-of-frame flags are registered at t+3 too (raw_*: a frame to forward ended or another
    one; payload_*: a data frame for the engine ended or another one), apart from the decision registers.
    with_mgmt: a management port sits on the forwarding path. A frame to `mgmt_mac` goes to it (to_mgmt,
    with forward) if mgmt_en (this port is in the management set) and, with src_filter, its source MAC is
    src_mac; else it is dropped as mgmt_refused. A broadcast ARP from such a port goes to it too and, under
    MSP_TRANSPARENT, is also forwarded (copy). Both checks come right after the PHY error and runt checks.
    """
    def __init__(self, dw, with_mgmt=False):
        _check_dw(dw)
        B = dw // 8
        self.last_beat, self.error = Signal(), Signal()
        self.count = Signal(16)
        self.nvalid = Signal(max=B + 1)
        self.header = Signal(8 * MS_HEADER_BYTES)
        self.policy, self.admin, self.mac_filter = Signal(), Signal(), Signal()
        self.mac = Signal(48)
        self.partial_bad = Signal()
        self.exact, self.minor2 = Signal(), Signal()
        self.end, self.forward, self.to_engine, self.dropping = (Signal(name="dec_" + n) for n in
                                                                 ("end", "forward", "to_engine", "dropping"))
        self.kind = Signal(2, name="dec_kind")
        self.reason = Signal(max=len(DROP))
        self.payload_bytes = Signal(16)
        self.mgmt_en, self.src_filter = Signal(), Signal()
        self.mgmt_mac, self.src_mac = Signal(48), Signal(48)
        self.to_mgmt, self.copy = Signal(), Signal()
        self.raw_commit_end, self.raw_abort_end = Signal(name="raw_commit_end"), Signal(name="raw_abort_end")
        self.payload_commit_end = Signal(name="payload_commit_end")
        self.payload_abort_end = Signal(name="payload_abort_end")

        # # #

        count, nvalid, hdr = self.count, self.nvalid, self.header
        flen = Signal(17)
        self.comb += flen.eq(count + nvalid)

        # t+1: length compares.
        def flen_lt(k):
            """flen < k from `count` (a multiple of B) and `nvalid` (1..B): one compare and one equality."""
            m = B * -(-(k - B) // B)          # the one multiple of B in [k-B, k-1]
            return (count < m) | ((count == m) & (nvalid < k - m))
        end, e_error = Signal(name="e_end"), Signal(name="e_error")
        e_flen = Signal(17)
        rec_end = MS_HEADER_BYTES + SETUP_RECORD_BYTES
        rec2_end = MS_HEADER_BYTES + SETUP_RECORD_V02_BYTES
        e_lt = {k: Signal() for k in (ETH_HEADER_BYTES, MS_HEADER_BYTES, rec_end, rec2_end, ETH_MIN_FRAME + 1)}
        self.sync += [
            end.eq(self.last_beat),
            e_flen.eq(flen), e_error.eq(self.error),
            [v.eq(flen_lt(k)) for k, v in e_lt.items()],
        ]

        # t+2: one flag per check (f.plen: the payload bytes).
        major = MS_HEADER.field(hdr, "version")[VERSION_MAJOR_SHIFT:]
        opcode = MS_HEADER.field(hdr, "opcode")
        f = Record([(n, 1) for n in (
            "end", "error", "runt_eth", "runt_ms", "not_ms", "major_bad", "res", "setup", "data", "setup_res_bad",
            "data_res_bad", "setup_len_bad", "teardown", "td_len_bad", "foreign", "admin", "pdata", "minor2",
            "res_res_bad")] + [("plen", 16), ("board", 1), ("arp", 1), ("mgmt_ok", 1)], name="f")
        minor = MS_HEADER.field(hdr, "version")[:VERSION_MAJOR_SHIFT]
        dst = MS_HEADER.field(hdr, "dst_mac")
        self.sync += [
            f.end.eq(end), f.error.eq(e_error),
            f.runt_eth.eq(e_lt[ETH_HEADER_BYTES]), f.runt_ms.eq(e_lt[MS_HEADER_BYTES]),
            # setup payload < 16 bytes, or > 16 bytes in a frame longer than the Ethernet minimum
            # (a v0.2 record, minor 2 and later, is 32 bytes)
            f.setup_len_bad.eq(Mux(minor >= VERSION_MINOR_V02, e_lt[rec2_end], e_lt[rec_end]) |
                               ~e_lt[ETH_MIN_FRAME + 1]),
            f.minor2.eq(minor >= VERSION_MINOR_V02),
            # a teardown has no record: its payload is the Ethernet padding only
            f.td_len_bad.eq(~e_lt[ETH_MIN_FRAME + 1]),
            f.foreign.eq(self.mac_filter & (dst != self.mac) & (dst != GROUP_MAC)),
            f.admin.eq(self.admin),
            f.plen.eq(e_flen - MS_HEADER_BYTES),
            f.not_ms.eq(MS_HEADER.field(hdr, "ethertype") != ETHERTYPE), f.major_bad.eq(major != VERSION_MAJOR),
            f.res.eq(opcode == MS_OP_COL_RES), f.setup.eq(opcode == MS_OP_COL_SETUP),
            f.data.eq((opcode == MS_OP_COL_DATA) | (opcode == MS_OP_COL_PDATA)), f.pdata.eq(opcode == MS_OP_COL_PDATA),
            f.teardown.eq(opcode == MS_OP_COL_TEARDOWN),
            f.res_res_bad.eq((RES_HEADER.field(hdr, "reserved0") != 0) | (RES_HEADER.field(hdr, "reserved1") != 0)),
            f.setup_res_bad.eq(SETUP_HEADER.field(hdr, "reserved") != 0),
            f.data_res_bad.eq(DATA_HEADER.field(hdr, "reserved") != 0),
        ]
        if with_mgmt:
            src = MS_HEADER.field(hdr, "src_mac")
            self.sync += [
                f.board.eq(dst == self.mgmt_mac),
                f.arp.eq((dst == BROADCAST_MAC) & (MS_HEADER.field(hdr, "ethertype") == ETHERTYPE_ARP)),
                f.mgmt_ok.eq(self.mgmt_en & (~self.src_filter | (src == self.src_mac))),
            ]
        self._add_decision(f)

    def _add_decision(self, f):
        """t+3: the first failing check of the t+2 flags `f` in priority order, registered (the buffers' end
        flags apart)."""
        forward, to_engine, kind = Signal(name="forward_c"), Signal(name="to_engine_c"), Signal(2, name="kind_c")
        reason = Signal(max=len(DROP), name="reason_c")
        dropping = Signal(name="dropping_c")
        to_mgmt, copy = Signal(name="to_mgmt_c"), Signal(name="copy_c")

        def drop(r):
            return [dropping.eq(1), reason.eq(DROP[r])]

        self.comb += [
            If(f.error, *drop("phy_error")
            ).Elif(f.runt_eth, *drop("runt")
            ).Elif(f.board,
                If(f.mgmt_ok, forward.eq(1), to_mgmt.eq(1)).Else(*drop("mgmt_refused"))
            ).Elif(f.arp & f.mgmt_ok,
                forward.eq(1), to_mgmt.eq(1), copy.eq(self.policy == MSP_TRANSPARENT)
            ).Elif(f.not_ms,
                If(self.policy == MSP_TRANSPARENT, forward.eq(1)).Else(*drop("not_minisharp"))
            ).Elif(f.foreign, forward.eq(1)
            ).Elif(f.runt_ms, *drop("runt")
            ).Elif(f.major_bad, *drop("bad_version")
            ).Elif(f.res,
                If(~self.mac_filter, forward.eq(1)          # v0.1: a received COL_RES is forwarded
                ).Elif(f.res_res_bad, *drop("bad_reserved")
                ).Else(to_engine.eq(1), kind.eq(KIND_RESULT))
            ).Elif(f.setup | f.teardown,
                If(~f.admin, *drop("not_admin")
                ).Elif(f.setup_res_bad, *drop("bad_reserved")
                ).Elif(f.setup & f.setup_len_bad, *drop("bad_length")
                ).Elif(f.teardown & f.td_len_bad, *drop("bad_length")
                ).Else(to_engine.eq(1), kind.eq(Mux(f.setup, KIND_SETUP, KIND_TEARDOWN)))
            ).Elif(f.data,
                If(f.data_res_bad, *drop("bad_reserved")
                ).Elif(f.pdata & self.partial_bad, *drop("bad_partial")
                ).Else(to_engine.eq(1), kind.eq(KIND_DATA))
            ).Else(*drop("bad_opcode")),
        ]
        to_engine_data = to_engine & ((kind == KIND_DATA) | (kind == KIND_RESULT))
        self.sync += [
            self.end.eq(f.end), self.forward.eq(forward), self.to_engine.eq(to_engine), self.kind.eq(kind),
            self.dropping.eq(dropping), self.reason.eq(reason), self.payload_bytes.eq(f.plen),
            self.exact.eq(f.pdata), self.minor2.eq(f.minor2), self.to_mgmt.eq(to_mgmt), self.copy.eq(copy),
            self.raw_commit_end.eq(f.end & forward), self.raw_abort_end.eq(f.end & ~forward),
            self.payload_commit_end.eq(f.end & to_engine_data), self.payload_abort_end.eq(f.end & ~to_engine_data),
        ]


class MSPortIngress(LiteXModule):
    """Parses the Ethernet/MiniSharp frames of one port and sorts them, at the end of each frame, into:
    a descriptor + committed payload words for the collective engine (COL_SETUP, COL_DATA, COL_TEARDOWN), a
    committed raw frame for the forwarding path (non-MiniSharp frames under MSP_TRANSPARENT, received
    COL_RES, MiniSharp frames for another switch under mac_filter), or a drop with a reason. Nothing of a dropped frame reaches the engine (validate before commit).

    sink: LiteEth PHY layout, `dw` bits (8, 16, 32 or 64), always ready (a PHY cannot be stalled);
    frames that do not fit the buffers are dropped as `overflow`.
    payload: `lanes` FP32 values a word (lanes*32 must be a multiple of dw), zero-filled past the frame end.
    Submodules: capture (header + setup record), payload (MSPayloadWriter), raw (the forwarding buffer),
    classifier (MSFrameClassifier), dfifo (descriptors).
    with_mgmt: frames for a management port are committed to the forwarding buffer too; fwd_tag carries one
    record a committed frame, in order (mgmt: to the management port; fwd: to the static map, both for a
    copied broadcast ARP); inputs mgmt_en, mgmt_mac, src_filter, src_mac as MSFrameClassifier's. A frame
    whose tag finds the tag FIFO full is dropped as overflow.
    Throughput: one beat per cycle, back-to-back frames.
    """
    def __init__(self, dw=8, lanes=1, payload_bytes=2048, raw_bytes=2048, desc_depth=4, with_mgmt=False):
        _check_dw(dw)
        B = dw // 8
        self.sink = stream.Endpoint(port_description(dw))
        self.policy, self.admin, self.mac_filter = Signal(), Signal(), Signal()
        self.mac = Signal(48)
        self.desc = stream.Endpoint(descriptor_layout)
        self.payload = stream.Endpoint([("data", 32 * lanes)])
        self.fwd = stream.Endpoint(port_description(dw))
        self.frame = Signal()            # pulse: a frame ended
        self.fwd_frame = Signal()        # pulse: a frame was committed for forwarding
        self.drop = Signal()             # pulse: a frame was dropped, reason in drop_reason
        self.drop_reason = Signal(max=len(DROP))
        if with_mgmt:
            self.mgmt_en, self.src_filter = Signal(), Signal()
            self.mgmt_mac, self.src_mac = Signal(48), Signal(48)
            self.fwd_tag = stream.Endpoint([("mgmt", 1), ("fwd", 1)])

        # # #

        sink = self.sink
        self.comb += sink.ready.eq(1)
        beat = Signal()
        self.comb += beat.eq(sink.valid)

        count, nvalid, error_now = self._add_beat_position(beat, B)

        # Bytes 0 .. 39 (header + setup record).
        self.capture = capture = MSHeaderCapture(dw, MS_HEADER_BYTES + SETUP_RECORD_V02_BYTES)
        hdr = capture.header[:8 * MS_HEADER_BYTES]
        self.payload_writer = pw = MSPayloadWriter(dw, lanes, payload_bytes // (4 * lanes))
        self.comb += [
            sink.connect(capture.sink, omit={"ready"}), sink.connect(pw.sink, omit={"ready"}),
            pw.count.eq(count), pw.source.connect(self.payload),
        ]

        # Raw frames for forwarding (written two cycles late, to line up with the frame decision).
        rw = dw + 1 + (B if B > 1 else 0)
        self.rfifo = rfifo = CommitFIFO(rw, raw_bytes // B)
        r_we, r_din = Signal(), Signal(rw)
        self.sync += [
            r_we.eq(beat), r_din.eq(Cat(sink.data, sink.last, *([sink.last_be] if B > 1 else []))),
            rfifo.we.eq(r_we), rfifo.din.eq(r_din),
        ]
        self.comb += [
            self.fwd.valid.eq(rfifo.source.valid),
            self.fwd.data.eq(rfifo.source.data[:dw]),
            self.fwd.last.eq(rfifo.source.data[dw]),
            self.fwd.last_be.eq(rfifo.source.data[dw + 1:] if B > 1 else self.fwd.last),
            rfifo.source.ready.eq(self.fwd.ready),
        ]

        # Descriptor FIFO, registered output (valid and descriptor leave the port from flip-flops: the engine's
        # handshake crosses the chip once, not from the FIFO level through logic and back).
        self.dfifo = dfifo = stream.SyncFIFO(descriptor_layout, desc_depth, buffered=True)
        self.comb += dfifo.source.connect(self.desc)

        # End of frame: the classifier's decision three cycles after the last beat. By then the next frame
        # can only have rewritten capture bytes 0..2*B-1 (MACs, EtherType, control: bytes 0..15 at 64 bits),
        # which the descriptor does not use, and no payload word (24 header bytes take at least 3 beats).
        self.classifier = cl = MSFrameClassifier(dw, with_mgmt)
        self.comb += [
            cl.last_beat.eq(beat & sink.last), cl.count.eq(count), cl.nvalid.eq(nvalid), cl.error.eq(error_now),
            cl.header.eq(hdr), cl.policy.eq(self.policy), cl.admin.eq(self.admin),
            cl.mac_filter.eq(self.mac_filter), cl.mac.eq(self.mac), cl.partial_bad.eq(pw.partial_bad),
        ]
        end, forward, to_engine, kind = cl.end, cl.forward, cl.to_engine, cl.kind
        fwd_go, eng_go = Signal(name="fwd_go"), Signal(name="eng_go")
        # Room for the descriptor, registered: the FIFO was not full and no write was pending (a registered
        # write) one cycle earlier. Only the engine's reads change the level in between (a port writes one
        # descriptor a frame), so the room is still there.
        room = Signal()
        self.sync += room.eq(dfifo.sink.ready & ~dfifo.sink.valid)
        # The same for the forwarding tags (with_mgmt; one a raw frame, as deep as the raw buffer's frames of
        # the Ethernet minimum).
        raw_room = Signal(reset=1)
        if with_mgmt:
            self.comb += [
                cl.mgmt_en.eq(self.mgmt_en), cl.src_filter.eq(self.src_filter),
                cl.mgmt_mac.eq(self.mgmt_mac), cl.src_mac.eq(self.src_mac),
            ]
            self.tfifo = tfifo = stream.SyncFIFO([("mgmt", 1), ("fwd", 1)], max(4, raw_bytes // ETH_MIN_FRAME))
            self.comb += tfifo.source.connect(self.fwd_tag)
            self.sync += [
                raw_room.eq(tfifo.sink.ready & ~tfifo.sink.valid),
                tfifo.sink.valid.eq(fwd_go), tfifo.sink.mgmt.eq(cl.to_mgmt), tfifo.sink.fwd.eq(~cl.to_mgmt | cl.copy),
            ]
        raw_ok = Signal()
        self.comb += raw_ok.eq(~rfifo.overflow & raw_room)
        # Each buffer's commit/abort come from its own registered end-of-frame flags (the buffers' RAMs and
        # pointers may sit apart, and far from the other decision registers).
        self.comb += [
            fwd_go.eq(end & forward & raw_ok),
            eng_go.eq(end & to_engine & room &
                      ~(((kind == KIND_DATA) | (kind == KIND_RESULT)) & pw.overflow)),
            rfifo.commit.eq(cl.raw_commit_end & raw_ok),
            rfifo.abort.eq(cl.raw_abort_end | (cl.raw_commit_end & ~raw_ok)),
            pw.commit.eq(cl.payload_commit_end & room & ~pw.overflow),
            pw.abort.eq(cl.payload_abort_end | (cl.payload_commit_end & ~(room & ~pw.overflow))),
            self.frame.eq(end),
            self.fwd_frame.eq(fwd_go),
            self.drop.eq(end & ~fwd_go & ~eng_go),
            If(cl.dropping, self.drop_reason.eq(cl.reason)).Else(self.drop_reason.eq(DROP["overflow"])),
        ]
        self._add_descriptor_write(eng_go, hdr)

    def _add_beat_position(self, beat, B):
        """(count, nvalid, error_now) of the beat on sink: its byte position in the frame, its valid bytes
        (1..B) and whether the PHY flagged an error in the frame so far (this beat included)."""
        sink = self.sink
        count = Signal(16)
        nvalid = Signal(max=B + 1)
        if B == 1:
            self.comb += nvalid.eq(1)
        else:
            cases = nvalid.eq(B)
            for b in range(B):
                cases = If(sink.last & sink.last_be[b], nvalid.eq(b + 1)).Else(cases)
            self.comb += cases
        error_seen = Signal()
        error_now = Signal()
        self.comb += error_now.eq(error_seen | (sink.error != 0))
        self.sync += If(beat,
            If(sink.last,
                count.eq(0), error_seen.eq(0)
            ).Else(
                count.eq(Mux(count > 0xFFF0, count, count + B)),
                error_seen.eq(error_now)
            )
        )
        return count, nvalid, error_now

    def _add_descriptor_write(self, eng_go, hdr):
        """The frame's descriptor into dfifo, one cycle after the decision `eng_go`, from registers (the
        decision does not fan out to the descriptor RAM)."""
        dfifo, cl, kind = self.dfifo, self.classifier, self.classifier.kind
        self.sync += [
            dfifo.sink.valid.eq(eng_go),
            dfifo.sink.kind.eq(kind),
            dfifo.sink.collective_id.eq(Mux((kind == KIND_SETUP) | (kind == KIND_TEARDOWN),
                                            SETUP_HEADER.field(hdr, "collective_id"),
                                            DATA_HEADER.field(hdr, "collective_id"))),
            dfifo.sink.rank.eq(DATA_HEADER.field(hdr, "rank")),
            dfifo.sink.chunk_index.eq(DATA_HEADER.field(hdr, "chunk_index")),
            dfifo.sink.payload_bytes.eq(cl.payload_bytes),
            dfifo.sink.exact.eq(cl.exact), dfifo.sink.minor2.eq(cl.minor2),
            dfifo.sink.record.eq(self.capture.header[8 * MS_HEADER_BYTES:]),
        ]

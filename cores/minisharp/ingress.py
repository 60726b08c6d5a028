"""MiniSharp per-port ingress: frame parser, classification and store-and-forward buffers."""
from migen import *

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

from cores.lib.commit_fifo import CommitFIFO
from cores.minisharp.common import (
    ETHERTYPE, VERSION_MAJOR, MS_HEADER_BYTES, ETH_HEADER_BYTES, ETH_MIN_FRAME, SETUP_RECORD_BYTES,
    MS_OP_COL_SETUP, MS_OP_COL_DATA, MS_OP_COL_RES, MSP_TRANSPARENT, KIND_SETUP, KIND_DATA,
    DROP, descriptor_layout, port_description, be_bytes, CONTROL_OFFSET, DATA_OP_FIELDS, SETUP_OP_FIELDS,
)


def lane_byteswap(word, lanes):
    """Swap the bytes of every 32-bit lane: payload byte order (big-endian FP32) <-> FP32 value."""
    return Cat(*[be_bytes(word, 4 * ln, 4) for ln in range(lanes)])


class MSPortIngress(LiteXModule):
    """Parses the Ethernet/MiniSharp frames of one port and sorts them, at the end of each frame, into:
    a descriptor + committed payload words for the collective engine (COL_SETUP, COL_DATA), a committed
    raw frame for the forwarding path (non-MiniSharp frames under MSP_TRANSPARENT, received COL_RES), or
    a drop with a reason. Nothing of a dropped frame reaches the engine (validate before commit).

    sink: LiteEth PHY layout, `dw` bits (8, 16, 32 or 64), always ready (a PHY cannot be stalled);
    frames that do not fit the buffers are dropped as `overflow`.
    payload: `lanes` FP32 values a word (lanes*32 must be a multiple of dw), zero-filled past the frame end.
    Throughput: one beat per cycle, back-to-back frames.
    """
    def __init__(self, dw=8, lanes=1, payload_bytes=2048, raw_bytes=2048, desc_depth=4):
        if dw not in (8, 16, 32, 64):
            raise ValueError(f"dw must be 8, 16, 32 or 64 (divides the 24-byte header), got {dw}")
        if (32 * lanes) % dw:
            raise ValueError(f"lanes*32 ({32 * lanes}) must be a multiple of dw ({dw})")
        B = dw // 8
        wb = 32 * lanes
        self.sink = stream.Endpoint(port_description(dw))
        self.policy = Signal()
        self.desc = stream.Endpoint(descriptor_layout)
        self.payload = stream.Endpoint([("data", wb)])
        self.fwd = stream.Endpoint(port_description(dw))
        self.frame = Signal()            # pulse: a frame ended
        self.fwd_frame = Signal()        # pulse: a frame was committed for forwarding
        self.drop = Signal()             # pulse: a frame was dropped, reason in drop_reason
        self.drop_reason = Signal(max=len(DROP))

        # # #

        sink = self.sink
        self.comb += sink.ready.eq(1)
        beat = Signal()
        self.comb += beat.eq(sink.valid)

        # Byte position and valid bytes of this beat.
        count = Signal(16)
        nvalid = Signal(max=B + 1)
        if B == 1:
            self.comb += nvalid.eq(1)
        else:
            cases = nvalid.eq(B)
            for b in range(B):
                cases = If(sink.last & sink.last_be[b], nvalid.eq(b + 1)).Else(cases)
            self.comb += cases
        flen = Signal(17)
        self.comb += flen.eq(count + nvalid)
        error_seen = Signal()
        error_now = Signal()
        self.comb += error_now.eq(error_seen | (sink.error != 0))

        # Capture bytes 0 .. 39 (header + setup record), one beat slot each.
        cap_bytes = MS_HEADER_BYTES + SETUP_RECORD_BYTES
        cap = Signal(8 * cap_bytes)
        cap_next = Signal(8 * cap_bytes)
        # slot: one-hot beat index of the frame (bit i: this beat carries bytes i*B..i*B+B-1; 0 past the
        # capture), a shift register instead of compares on `count`.
        slot = Signal(cap_bytes // B, reset=1)
        self.sync += If(beat, If(sink.last, slot.eq(1)).Else(slot.eq(slot << 1)))
        for i in range(cap_bytes // B):
            self.comb += cap_next[i * dw:(i + 1) * dw].eq(Mux(beat & slot[i], sink.data, cap[i * dw:(i + 1) * dw]))
        self.sync += If(beat, cap.eq(cap_next))

        # Payload words: gather k beats, mask bytes past the end on the last beat.
        k = wb // dw
        mask = Signal(dw)
        for b in range(B):
            self.comb += mask[8 * b:8 * b + 8].eq(Replicate(~sink.last | (sink.last_be[b:] != 0) | (B == 1), 8))
        # in_pl: registered "count >= 24" (this beat is payload). Payload words are written one cycle late,
        # from registers (the FIFO's block RAM and pointers may sit far from the port).
        pbeat, in_pl = Signal(), Signal()
        self.comb += pbeat.eq(beat & in_pl)
        self.sync += If(beat, in_pl.eq(~sink.last & (count >= MS_HEADER_BYTES - B)))
        self.pfifo = pfifo = CommitFIFO(wb, payload_bytes // (4 * lanes))
        self.comb += pfifo.source.connect(self.payload)
        if k == 1:
            self.sync += pfifo.we.eq(pbeat), pfifo.din.eq(lane_byteswap(sink.data & mask, lanes))
        else:
            gw = Signal(wb)
            gi = Signal(max=k)
            word = Signal(wb)
            for j in range(k):
                self.comb += word[j * dw:(j + 1) * dw].eq(
                    Mux(gi == j, sink.data & mask, Mux(gi > j, gw[j * dw:(j + 1) * dw], 0)))
            self.sync += [
                pfifo.we.eq(pbeat & ((gi == k - 1) | sink.last)),
                pfifo.din.eq(lane_byteswap(word, lanes)),
            ]
            self.sync += If(beat,
                gw.eq(word),
                If(sink.last | (gi == k - 1) | ~pbeat, gi.eq(0)).Else(gi.eq(gi + 1)))

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

        # End of frame, three registered steps: t+1 (the cycle after the last beat) holds the frame length and
        # its compares (computed from `count` in the last beat's cycle: no subtraction, one compare each);
        # t+2 holds one flag per header check (from the completed capture); t+3 holds the decision (drop
        # priority over the flags) and applies it. By then the next frame can only have rewritten capture
        # bytes 0..2*B-1 (MACs, EtherType, control: bytes 0..15 at 64 bits), which the descriptor does not
        # use, and no payload word (24 header bytes take at least 3 beats).
        def flen_lt(k):
            """flen < k from `count` (a multiple of B) and `nvalid` (1..B): one compare and one equality."""
            m = B * -(-(k - B) // B)          # the one multiple of B in [k-B, k-1]
            return (count < m) | ((count == m) & (nvalid < k - m))
        end, e_error = Signal(), Signal()
        e_flen = Signal(17)
        rec_end = MS_HEADER_BYTES + SETUP_RECORD_BYTES
        e_lt = {k: Signal() for k in (ETH_HEADER_BYTES, MS_HEADER_BYTES, rec_end, ETH_MIN_FRAME + 1)}
        self.sync += [
            end.eq(beat & sink.last),
            e_flen.eq(flen), e_error.eq(error_now),
            [v.eq(flen_lt(k)) for k, v in e_lt.items()],
        ]

        def field(fields, name):
            for fname, off, n in fields:
                if fname == name:
                    return be_bytes(cap, off, n)
        ethertype = be_bytes(cap, 12, 2)
        major = cap[8 * CONTROL_OFFSET + 4:8 * CONTROL_OFFSET + 8]
        opcode = cap[8 * (CONTROL_OFFSET + 1):8 * (CONTROL_OFFSET + 2)]

        # t+2: one flag per check.
        f_end, f_error, f_runt_eth, f_runt_ms, f_not_ms, f_major_bad = (Signal() for _ in range(6))
        f_res, f_setup, f_data, f_setup_res_bad, f_data_res_bad, f_setup_len_bad = (Signal() for _ in range(6))
        f_plen = Signal(16)
        self.sync += [
            f_end.eq(end), f_error.eq(e_error),
            f_runt_eth.eq(e_lt[ETH_HEADER_BYTES]), f_runt_ms.eq(e_lt[MS_HEADER_BYTES]),
            # setup payload < 16 bytes, or > 16 bytes in a frame longer than the Ethernet minimum
            f_setup_len_bad.eq(e_lt[rec_end] | ~e_lt[ETH_MIN_FRAME + 1]),
            f_plen.eq(e_flen - MS_HEADER_BYTES),
            f_not_ms.eq(ethertype != ETHERTYPE), f_major_bad.eq(major != VERSION_MAJOR),
            f_res.eq(opcode == MS_OP_COL_RES), f_setup.eq(opcode == MS_OP_COL_SETUP),
            f_data.eq(opcode == MS_OP_COL_DATA),
            f_setup_res_bad.eq(field(SETUP_OP_FIELDS, "reserved") != 0),
            f_data_res_bad.eq(field(DATA_OP_FIELDS, "reserved") != 0),
        ]

        # t+3: the first failing check in priority order, registered.
        forward, to_engine, kind = Signal(), Signal(), Signal()
        reason = Signal(max=len(DROP))
        dropping = Signal()

        def drop(r):
            return [dropping.eq(1), reason.eq(DROP[r])]

        self.comb += [
            If(f_error, *drop("phy_error")
            ).Elif(f_runt_eth, *drop("runt")
            ).Elif(f_not_ms,
                If(self.policy == MSP_TRANSPARENT, forward.eq(1)).Else(*drop("not_minisharp"))
            ).Elif(f_runt_ms, *drop("runt")
            ).Elif(f_major_bad, *drop("bad_version")
            ).Elif(f_res, forward.eq(1)
            ).Elif(f_setup,
                If(f_setup_res_bad, *drop("bad_reserved")
                ).Elif(f_setup_len_bad, *drop("bad_length")
                ).Else(to_engine.eq(1), kind.eq(KIND_SETUP))
            ).Elif(f_data,
                If(f_data_res_bad, *drop("bad_reserved")
                ).Else(to_engine.eq(1), kind.eq(KIND_DATA))
            ).Else(*drop("bad_opcode")),
        ]
        d_end, d_forward, d_to_engine, d_kind, d_dropping = Signal(), Signal(), Signal(), Signal(), Signal()
        d_reason = Signal(max=len(DROP))
        d_plen = Signal(16)
        self.sync += [
            d_end.eq(f_end), d_forward.eq(forward), d_to_engine.eq(to_engine), d_kind.eq(kind),
            d_dropping.eq(dropping), d_reason.eq(reason), d_plen.eq(f_plen),
        ]
        # Each buffer's commit/abort come from its own registered end-of-frame flags (the buffers' RAMs and
        # pointers may sit apart, and far from the other decision registers).
        r_commit_end, r_abort_end = Signal(), Signal()      # raw buffer: a frame to forward ends, another ends
        p_commit_end, p_abort_end = Signal(), Signal()      # payload buffer: a data frame for the engine, another
        to_engine_data = to_engine & (kind == KIND_DATA)
        self.sync += [
            r_commit_end.eq(f_end & forward), r_abort_end.eq(f_end & ~forward),
            p_commit_end.eq(f_end & to_engine_data), p_abort_end.eq(f_end & ~to_engine_data),
        ]
        end, forward, to_engine, kind, dropping, reason = d_end, d_forward, d_to_engine, d_kind, d_dropping, d_reason
        fwd_go, eng_go = Signal(), Signal()
        # Room for the descriptor, registered: the FIFO was not full and no write was pending (a registered
        # write) one cycle earlier. Only the engine's reads change the level in between (a port writes one
        # descriptor a frame), so the room is still there.
        room = Signal()
        self.sync += room.eq(dfifo.sink.ready & ~dfifo.sink.valid)
        self.comb += [
            fwd_go.eq(end & forward & ~rfifo.overflow),
            eng_go.eq(end & to_engine & room &
                      ~((kind == KIND_DATA) & pfifo.overflow)),
            rfifo.commit.eq(r_commit_end & ~rfifo.overflow),
            rfifo.abort.eq(r_abort_end | (r_commit_end & rfifo.overflow)),
            pfifo.commit.eq(p_commit_end & room & ~pfifo.overflow),
            pfifo.abort.eq(p_abort_end | (p_commit_end & ~(room & ~pfifo.overflow))),
            self.frame.eq(end),
            self.fwd_frame.eq(fwd_go),
            self.drop.eq(end & ~fwd_go & ~eng_go),
            If(dropping, self.drop_reason.eq(reason)).Else(self.drop_reason.eq(DROP["overflow"])),
        ]
        # The descriptor is written one cycle after the decision, from registers (the decision does not fan
        # out to the descriptor RAM).
        self.sync += [
            dfifo.sink.valid.eq(eng_go),
            dfifo.sink.kind.eq(kind),
            dfifo.sink.collective_id.eq(Mux(kind == KIND_SETUP, field(SETUP_OP_FIELDS, "collective_id"),
                                            field(DATA_OP_FIELDS, "collective_id"))),
            dfifo.sink.rank.eq(field(DATA_OP_FIELDS, "rank")),
            dfifo.sink.chunk_index.eq(field(DATA_OP_FIELDS, "chunk_index")),
            dfifo.sink.payload_bytes.eq(d_plen),
            dfifo.sink.record.eq(cap[8 * MS_HEADER_BYTES:]),
        ]
        self.sync += If(beat,
            If(sink.last,
                count.eq(0), error_seen.eq(0)
            ).Else(
                count.eq(Mux(count > 0xFFF0, count, count + B)),
                error_seen.eq(error_now)
            )
        )

"""RIFL Layer 1: over channels that corrupt any frame with up to 3 inverted bits (every pattern CRC-12 is
guaranteed to detect) or lose it, the user words of one endpoint reach the other exactly once, in order and
intact: from frame id 0, and from ids just short of 2^12, so that the ids wrap to 0 within the bound."""
import dataclasses

from migen import Cat, If, Signal

from litex.gen import LiteXModule

from cores.rifl.common import SEQ_BITS, payload_bytes
from cores.rifl.link import RIFLEndpoint
from sim.formal import Mutation, Property

F = 64              # the smallest frame: 6 payload bytes
LATENCY = 1         # cycles of each channel
ERR_BITS = 3        # inverted bits a frame at most: CRC-12's Hamming distance is 4 at these lengths
TAG_BITS = 16       # the checker's sequence tag, in payload bytes 0 and 1
WRAP_START = (1 << SEQ_BITS) - 1   # the first numbered frame is 4095, the second 0


class FaultyChannel(LiteXModule):
    """One direction of the line: `latency` cycles of delay; the frame leaving gets the bits at err_pos[i]
    inverted where err_en[i] (ERR_BITS positions, so up to ERR_BITS bit errors), or is lost (all zeros: no
    valid sync header) where `lose`. The positions and enables are free inputs of the proof."""
    def __init__(self, frame_bits, latency):
        pos_bits = (frame_bits - 1).bit_length()
        self.sink = Signal(frame_bits)
        self.source = Signal(frame_bits)
        self.err_pos = [Signal(pos_bits) for _ in range(ERR_BITS)]
        self.err_en = Signal(ERR_BITS)
        self.lose = Signal()

        # # #

        line = [self.sink]
        for _ in range(latency):
            stage = Signal(frame_bits)
            self.sync += stage.eq(line[-1])
            line.append(stage)
        pattern = 0
        for i, pos in enumerate(self.err_pos):
            pattern = pattern ^ (self.err_en[i] << pos)
        self.comb += If(self.lose, self.source.eq(0)).Else(self.source.eq(line[-1] ^ pattern))


class FormalLink(LiteXModule):
    """Endpoints `a` and `b` (F bits, the channels' round trip, first frame id seq_start) joined by two
    FaultyChannels."""
    def __init__(self, frame_bits=F, latency=LATENCY, seq_start=0):
        self.a = a = RIFLEndpoint(frame_bits, rtt=2 * latency, seq_start=seq_start)
        self.b = b = RIFLEndpoint(frame_bits, rtt=2 * latency, seq_start=seq_start)
        self.ab = ab = FaultyChannel(frame_bits, latency)
        self.ba = ba = FaultyChannel(frame_bits, latency)
        self.comb += [ab.sink.eq(a.tx_frame), b.rx_frame.eq(ab.source),
                      ba.sink.eq(b.tx_frame), a.rx_frame.eq(ba.source)]


def _link(seq_start=0):
    m = FormalLink(seq_start=seq_start)
    ports = {}
    for ep, name in ((m.a.sink, "a_sink"), (m.b.source, "b_source"), (m.b.sink, "b_sink"),
                     (m.a.source, "a_source")):
        into = name.endswith("sink")
        for f in ("valid", "data", "nbytes", "last"):
            ports[f"{name}_{f}"] = (getattr(ep, f), into)
        ports[f"{name}_ready"] = (ep.ready, not into)
    for ch, name in ((m.ab, "ab"), (m.ba, "ba")):
        for i, pos in enumerate(ch.err_pos):
            ports[f"{name}_pos{i}"] = (pos, True)
        ports[f"{name}_en"] = (ch.err_en, True)
        ports[f"{name}_lose"] = (ch.lose, True)
    ports["a_link_up"] = (m.a.link_up, False)
    ports["b_link_up"] = (m.b.link_up, False)
    return m, ports


P = payload_bytes(F)
CHECK = f"""
// a's user words carry a sequence tag (bytes 0-1): the number of words a accepted before them. f_sent:
// words a accepted; f_rcvd: words b delivered. One symbolic word (tag f_k) is recorded whole when sent.
reg [{TAG_BITS - 1}:0] f_sent = 0, f_rcvd = 0;
wire f_send = a_sink_valid && a_sink_ready;
wire f_recv = b_source_valid && b_source_ready;
always @(*) begin
    assume(a_sink_nbytes >= 1 && a_sink_nbytes <= {P});
    assume(a_sink_data[{TAG_BITS - 1}:0] == f_sent);
end
always @(posedge clk) begin
    f_sent <= f_sent + f_send;
    f_rcvd <= f_rcvd + f_recv;
end
(* anyconst *) wire [{TAG_BITS - 1}:0] f_k;
reg f_k_sent = 0;
reg [{8 * P - 1}:0] f_k_data = 0;
reg [7:0] f_k_nbytes = 0;
reg f_k_last = 0;
always @(posedge clk) if (f_send && f_sent == f_k) begin
    f_k_sent <= 1; f_k_data <= a_sink_data; f_k_nbytes <= a_sink_nbytes; f_k_last <= a_sink_last;
end
// Bytes that carry data: 0..P-2 always, P-1 only in a full beat (otherwise it carries nbytes).
wire [{8 * P - 1}:0] f_mask = {{(f_k_nbytes == {P}) ? 8'hff : 8'h00, {{{8 * (P - 1)}{{1'b1}}}}}};
always @(*) if (!init && f_recv) begin
    // Exactly once and in order: b delivers the words in the order a took them, none twice, none skipped,
    // none that was never sent.
    assert(b_source_data[{TAG_BITS - 1}:0] == f_rcvd);
    assert(f_rcvd < f_sent);
    // Intact: the symbolic word arrives with its bytes, length and end-of-packet flag.
    if (f_rcvd == f_k) begin
        assert(f_k_sent);
        assert(((b_source_data ^ f_k_data) & f_mask) == 0);
        assert(b_source_nbytes == f_k_nbytes);
        assert(b_source_last == f_k_last);
    end
end
"""

# The defect both properties must catch: b then delivers a word that a did not send under its tag (sby log of
# the broken run).
ACCEPT_WITHOUT_MARKER = Mutation(
    "the receiver accepts a numbered frame while recovering without the REPLAY marker",
    r"^(assign b_riflreceiver_accept = )\(\(~b_riflreceiver_recovering\) \| b_riflreceiver_armed\);", r"\g<1>1'd1;",
    assertion="assert(((b_source_data ^ f_k_data) & f_mask) == 0)")

PROPERTIES = [
    Property(
        "rifl_link_exactly_once",
        f"Two RIFL endpoints (F = {F}, {LATENCY}-cycle channels, free traffic and back-pressure both ways) "
        f"whose channels invert up to {ERR_BITS} bits of any frame or lose it deliver a's words to b exactly "
        "once, in order and intact.",
        _link, CHECK,
        ACCEPT_WITHOUT_MARKER,
        # depth 36: the endpoints' 125 MHz stages (TX 4, RX 4 cycles, receive buffer 4, a RETRANS applied a cycle
        # after its check) moved the mutation's counterexample from within 30 cycles to step 34
        # The cover: a takes a RETRANS from b and starts a replay (a REPLAY marker pending). Not reached by
        # depth 24: the link comes up first, then a's frame corrupted on the way (TX 4 cycles, channel 1),
        # b's check (RX 4), b's RETRANS back (TX 4, channel 1, RX 4), applied a cycle after its check; the
        # cover runs to the BMC's depth and is reached at step 32 (94 s).
        cover="always @(*) if (!init) cover(a_riflreplaycontrol_marker_pending);",
        mode="bmc", depth=36),
    Property(
        "rifl_link_exactly_once_wrap",
        f"The same from frame id {WRAP_START} (RIFLEndpoint's seq_start): the ids wrap to 0 at a's second "
        "numbered frame, within the bound.",
        lambda: _link(WRAP_START), CHECK,
        # here the solver's first counterexample (step 34) delivers a word out of order
        dataclasses.replace(ACCEPT_WITHOUT_MARKER, assertion=f"assert(b_source_data[{TAG_BITS - 1}:0] == f_rcvd)"),
        # The covers, reached within the bound: a replay across the wrap (a rewound to frame 4095 with frame 0
        # already sent; step 32); a second corrupted frame arriving while b waits for the replay of the first
        # (f_b_err: b's first error on the up link, which starts its recovery; step 23): two errors in one replay
        # window; and a word that b accepts after that second error, delivered (f_mark: its place in b's
        # receive buffer; step 33).
        cover="""reg f_b_err = 0, f_b_err2 = 0, f_marked = 0;
reg [15:0] f_acc = 0, f_mark = 0;
always @(posedge clk) begin
    if (b_link_up && b_riflreceiver_fail && !b_riflreceiver_recovering) f_b_err <= 1;
    if (f_b_err && b_link_up && b_riflreceiver_recovering && b_riflreceiver_fail) f_b_err2 <= 1;
    f_acc <= f_acc + b_riflreceiver_buffer_we;
    if (f_b_err2 && !f_marked && b_riflreceiver_buffer_we) begin f_marked <= 1; f_mark <= f_acc; end
end
always @(*) if (!init) begin
""" + f"""    cover(a_riflreplaycontrol_marker_pending && a_riflreplaycontrol_rp == {SEQ_BITS}'d{WRAP_START}
          && a_riflreplaycontrol_tx_seq != {SEQ_BITS}'d{WRAP_START});
    cover(f_b_err && b_link_up && b_riflreceiver_recovering && b_riflreceiver_fail);
    cover(f_marked && f_recv && f_rcvd == f_mark);
end""",
        mode="bmc", depth=36),
]

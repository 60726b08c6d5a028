"""Sparsr receiver: a refused frame changes no row; rows change only while an accepted frame commits, and a
raw row is switched in only by the slot that finishes it. The same with XMEM in DRAM: no word enters the DRAM
write FIFO (so none reaches the DRAM) and no row entry changes outside the commit of an accepted frame, whatever
the DRAM port does."""
from cores.sparsr.common import XMEM_DRAM
from cores.sparsr.receiver import SparsrReceiver
from sim.formal import Mutation, Property

ROWS = 2            # WMEM and XMEM rows: the control does not depend on the memories' sizes
DRAM_WORDS_LOG2 = 10    # a DRAM port of 1024 words of 32 bits: room for the rows and the spare


def _stream_ports(ports, ep, name, is_input):
    """The endpoint's valid, ready and payload fields as ports (ready the other way)."""
    for f, _ in ep.description.payload_layout:
        ports[f"{name}_{f}"] = (getattr(ep, f), is_input)
    ports[f"{name}_valid"] = (ep.valid, is_input)
    ports[f"{name}_ready"] = (ep.ready, not is_input)


def _receiver(xmem="bram"):
    port = None
    if xmem == XMEM_DRAM:
        from litedram.common import LiteDRAMNativePort
        port = LiteDRAMNativePort("both", DRAM_WORDS_LOG2, 32)
    m = SparsrReceiver(wmem_rows=ROWS, xmem_rows=ROWS, fifo_depth=8, xmem=xmem, dram_port=port)
    ports = {}
    for ep, name, is_input in ((m.sink, "sink", True), (m.source, "source", False)):
        for f in ("valid", "ready", "data", "last"):
            ports[f"{name}_{f}"] = (getattr(ep, f), is_input if f != "ready" else not is_input)
    if port is not None:
        # the DRAM side is free: commands and write data taken, read data returned at any time
        _stream_ports(ports, port.cmd, "dram_cmd", False)
        _stream_ports(ports, port.wdata, "dram_wdata", False)
        _stream_ports(ports, port.rdata, "dram_rdata", True)
    return m, ports


CHECK = """
// f_open: the frames the parser accepted minus the banks the executor released.
reg [2:0] f_open = 0;
always @(posedge clk) f_open <= f_open + framebanks_accept - framebanks_release;
// (WMEM's memory0: the read side's copy of the row map, memory1: the lane mask)
wire f_row_write = wmem_word_ram_we || wmem_memory0_we || wmem_memory1_we || wmem_map_we || xmem_word_ram_we
                   || xmem_we || xmem_map_we;
wire f_executing = state != 0;
// f_commit: the executor commits (or runs a command of) a bank the parser accepted and has not released, or
// did so up to six cycles ago (its data stage handles a word the cycle after MOVE read it, the LIL writer
// registers its inputs the cycle after that, then the entries, and issues the lane mask one cycle later,
// through two registers; the word memories register their writes).
reg f_commit_d1 = 0, f_commit_d2 = 0, f_commit_d3 = 0, f_commit_d4 = 0, f_commit_d5 = 0, f_commit_d6 = 0;
always @(posedge clk) begin
    f_commit_d1 <= f_executing && framebanks_pending;
    f_commit_d2 <= f_commit_d1;
    f_commit_d3 <= f_commit_d2;
    f_commit_d4 <= f_commit_d3;
    f_commit_d5 <= f_commit_d4;
    f_commit_d6 <= f_commit_d5;
end
wire f_commit = (f_executing && framebanks_pending) || f_commit_d1 || f_commit_d2 || f_commit_d3 || f_commit_d4
                || f_commit_d5 || f_commit_d6;
always @(*) if (!init) begin
    // A frame's last word either accepts or refuses it, and only an accepted frame becomes a bank.
    assert(!(parser_accept && parser_refuse));
    assert(framebanks_accept == parser_accept);
    // Any write into WMEM, XMEM, their row maps, lane masks or forms happens while (or up to six cycles
    // after) the executor commits (or runs a command of) a bank that the parser accepted and had not released.
    if (f_row_write) assert(f_commit);
    // A row map switches (a raw row is stored) only in the cycle that commits the last word of a raw slot
    // that finishes its row.
    if (wmem_map_we || xmem_map_we) assert(executor_x_raw && executor_x_fin);
    // Lemmas: the open frames are the busy banks; the executor leaves IDLE only for a busy bank; the data
    // stage's word and the LIL writer's registered entries and lane mask belong to a slot being committed (the
    // last word's in the cycle after it, which still commits), and so does a lane mask write on its way.
    assert(f_open == framebanks_busy0 + framebanks_busy1);
    if (f_executing) assert(framebanks_pending);
    if (executor_d_we_w || executor_d_we_x || executor_d_lil || executor_d_last) assert(f_commit_d1);
    if (executor_lilwriter_i_valid || executor_lilwriter_i_last) assert(f_commit_d2);
    if (executor_lilwriter_e_valid || executor_lilwriter_e_fin) assert(f_commit_d3);
    if (executor_lilwriter_f_fin) assert(f_commit_d4);
    if (executor_d_last) assert(f_executing && framebanks_pending);
    if (executor_lilwriter_i_last) assert(f_commit_d1);
    if (executor_lilwriter_e_fin) assert(f_commit_d2);
    if (executor_lilwriter_f_fin) assert(f_commit_d3);
end
"""

# With XMEM in DRAM (Migen names the executor's state with a prefix then: the DRAM XMEM has one too): the DRAM
# write FIFO's input and the row entries (map and form) are the XMEM writes.
CHECK_DRAM = (CHECK
              .replace("xmem_word_ram_we\n                   || xmem_we || xmem_map_we",
                       "xmem_blockramfifo_sink_sink_valid\n                   || xmem_ent_a_we")
              .replace("f_executing = state != 0", "f_executing = sparsrexecutor_state != 0"))
# A frame refused at its last word (reached at step 1: a one-word frame).
REFUSED_COVER = "always @(*) if (!init) cover(parser_refuse);"

PROPERTIES = [
    Property(
        "sparsr_receiver_refused_frames",
        f"In the Sparsr receiver ({ROWS} WMEM and {ROWS} XMEM rows, any input words and framing, any answer "
        "back-pressure) no row memory, row map, lane mask or form is written except while (or up to six "
        "cycles after) the executor commits a frame the parser accepted (so a refused frame changes no row), "
        "and a row map switches "
        "only at the last word of a raw slot that finishes its row.",
        _receiver, CHECK,
        Mutation("a raw slot switches its row map even when it does not finish the row",
                 r"^(\s*)if \(executor_x_fin\) begin", r"\1if (1'd1) begin",
                 status="UNKNOWN", assertion="assert(executor_x_raw && executor_x_fin)"),
        cover=REFUSED_COVER,
        mode="prove", depth=4),
    Property(
        "sparsr_receiver_refused_frames_dram",
        f"With XMEM in DRAM ({ROWS} WMEM and {ROWS} XMEM rows, a DRAM port that takes commands and data and "
        "returns read data at any time), no word enters the DRAM write FIFO and no WMEM memory, row map, lane "
        "mask or XMEM row entry is written except while the executor commits a frame the parser accepted, and "
        "a row map switches only at the last word of a raw slot that finishes its row.",
        lambda: _receiver(XMEM_DRAM), CHECK_DRAM,
        Mutation("input words enter the DRAM write FIFO",
                 r"^assign xmem_blockramfifo_sink_sink_valid = xmem_wq_we;",
                 "assign xmem_blockramfifo_sink_sink_valid = xmem_wq_we | sink_valid;",
                 assertion="assert(f_commit)"),
        cover=REFUSED_COVER,
        mode="prove", depth=4),
]

"""Sparsr receiver: a refused frame changes no row; rows change only while an accepted frame commits, and a
raw row is switched in only by the slot that finishes it."""
from cores.sparsr.receiver import SparsrReceiver
from sim.formal import Mutation, Property

ROWS = 2            # WMEM and XMEM rows: the control does not depend on the memories' sizes


def _receiver():
    m = SparsrReceiver(wmem_rows=ROWS, xmem_rows=ROWS, fifo_depth=8)
    ports = {}
    for ep, name, is_input in ((m.sink, "sink", True), (m.source, "source", False)):
        for f in ("valid", "ready", "data", "last"):
            ports[f"{name}_{f}"] = (getattr(ep, f), is_input if f != "ready" else not is_input)
    return m, ports


CHECK = """
// f_open: the frames the parser accepted minus the banks the executor released.
reg [2:0] f_open = 0;
always @(posedge clk) f_open <= f_open + framebanks_accept - framebanks_release;
wire f_row_write = wmem_memory_we || wmem_we || wmem_map_we || xmem_memory_we || xmem_we || xmem_map_we;
wire f_executing = state != 0;
always @(*) if (!init) begin
    // A frame's last word either accepts or refuses it, and only an accepted frame becomes a bank.
    assert(!(sparsrparser_accept && sparsrparser_refuse));
    assert(framebanks_accept == sparsrparser_accept);
    // Any write into WMEM, XMEM, their row maps, lane masks or forms happens while the executor commits
    // (or runs a command of) a bank that the parser accepted and has not been released.
    if (f_row_write) assert(f_executing && framebanks_pending);
    // A row map switches (a raw row is stored) only in the cycle that commits the last word of a raw slot
    // that finishes its row.
    if (wmem_map_we || xmem_map_we) assert(sparsrexecutor_x_raw && sparsrexecutor_x_fin);
    // Lemmas: the open frames are the busy banks; the executor leaves IDLE only for a busy bank, and the
    // LIL writer's registered entries and lane mask belong to the slot being committed.
    assert(f_open == framebanks_busy0 + framebanks_busy1);
    if (f_executing) assert(framebanks_pending);
    if (sparsrexecutor_lilwriter_e_valid || sparsrexecutor_lilwriter_e_fin) assert(f_executing);
end
"""

PROPERTIES = [
    Property(
        "sparsr_receiver_refused_frames",
        f"In the Sparsr receiver ({ROWS} WMEM and {ROWS} XMEM rows, any input words and framing, any answer "
        "back-pressure) no row memory, row map, lane mask or form is written except while the executor "
        "commits a frame the parser accepted (so a refused frame changes no row), and a row map switches "
        "only at the last word of a raw slot that finishes its row.",
        _receiver, CHECK,
        Mutation("a raw slot switches its row map even when it does not finish the row",
                 r"^(\s*)if \(sparsrexecutor_x_fin\) begin", r"\1if (1'd1) begin",
                 status="UNKNOWN", assertion="assert(sparsrexecutor_x_raw && sparsrexecutor_x_fin)"),
        mode="prove", depth=4),
]

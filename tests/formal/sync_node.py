"""Synchronizer node: no completion of an ident before every participant (the node's own trigger and each
neighbour's message) has contributed to that round, and at most one completion per round."""
from cores.sync.common import (DIR_NAMES, N, S, E, IDENT_BITS, MODE_BITS, MODES, PKT_IDENT_LSB, PKT_MODE_LSB,
                               packet_bits)
from cores.sync.node import SyncNode
from sim.formal import Mutation, Property

NEIGHBOURS = (N, S, E)
N_IDENTS = 2
VALUE_WIDTH = 3     # 10-bit packets: one flit each, so the links can carry any packet in any cycle


def _node():
    m = SyncNode(NEIGHBOURS, None, N_IDENTS, VALUE_WIDTH)
    ports = {"ev_trigger_drop": (m.ev_trigger_drop, False)}
    for f in ("valid", "ready", "ident", "mode", "value"):
        ports["sink_" + f] = (getattr(m.sink, f), f != "ready")
    for f in ("valid", "ready", "ident", "mode", "error", "value"):
        ports["source_" + f] = (getattr(m.source, f), f == "ready")
    for d in NEIGHBOURS:
        for r, is_input in ((m.rx[d], True), (m.tx[d], False)):
            ports[r.name + "_valid"], ports[r.name + "_data"] = (r.valid, is_input), (r.data, is_input)
    return m, ports


def _trigger_check():
    slot = lambda v: f"syncnode_syncslots_{v}[f_id]"
    arrived = "\n".join(f"        if (syncnode_syncselect_sel_src == {i}) "
                        f"assert(!syncnode_syncslots_cur_arr_{DIR_NAMES[d]}[syncnode_syncselect_sel_ident]);"
                        for i, d in enumerate(NEIGHBOURS))
    merging = "\n".join(f"        if (syncnode_syncslots_m_src == {i}) "
                         f"assert(!syncnode_syncslots_cur_arr_{DIR_NAMES[d]}[syncnode_syncslots_m_ident]);"
                         for i, d in enumerate(NEIGHBOURS))
    local = len(NEIGHBOURS)
    m_trig = f"(syncnode_syncslots_m_ok && syncnode_syncslots_m_src == {local} && syncnode_syncslots_m_ident == f_id)"
    # Lemmas on each link receiver: its FIFO's level matches its pointers and `nonempty` its `readable`, the
    # header it decoded the cycle before is known and its FIFO's head's when that was not taken, every entry
    # in use carries its header decoded, and the decisions it registered the cycle before hold for the head it
    # offers (the slot is not retiring; a current-round packet's link has not arrived in it).
    rcv = lambda i, v: f"syncnode_synclinkreceiver{i}_{v}"
    pb = packet_bits(VALUE_WIDTH)
    taken = "\n".join(f"reg f_taken_{i} = 0;\nalways @(posedge clk) f_taken_{i} <= {rcv(i, 'take')};"
                      for i in range(len(NEIGHBOURS)))
    # every FIFO entry in use carries its header decoded (one-hot ident, bad)
    depth = 2 * N_IDENTS
    ident = lambda w: f"{w}[{PKT_IDENT_LSB + IDENT_BITS - 1}:{PKT_IDENT_LSB}]"
    mode = lambda w: f"{w}[{PKT_MODE_LSB + MODE_BITS - 1}:{PKT_MODE_LSB}]"
    decoded = lambda w: ("{" + f"({ident(w)} >= {N_IDENTS}) || ({mode(w)} > {max(MODES)}), " +
                         ", ".join(f"{ident(w)} == {j}" for j in reversed(range(N_IDENTS))) + "}")
    entries = "\n".join(
        f"    if ((({k} - {rcv(i, 'consume')}) & {depth - 1}) < {rcv(i, 'level')}) "
        f"assert({mem}[{k}][{pb + N_IDENTS}:{pb}] == {decoded(f'{mem}[{k}]')});"
        for i, mem in enumerate("storage" if i == 0 else f"storage_{i}" for i in range(len(NEIGHBOURS)))
        for k in range(depth))
    offers = "\n".join(
        f"    assert((({rcv(i, 'produce')} - {rcv(i, 'consume')}) & {2 * N_IDENTS - 1}) == "
        f"({rcv(i, 'level')} & {2 * N_IDENTS - 1}));\n"
        f"    assert({rcv(i, 'level')} <= {2 * N_IDENTS});\n"
        f"    assert({rcv(i, 'nonempty')} == {rcv(i, f'syncfifo{i}_readable')});\n"
        f"    if ({rcv(i, 'nonempty')}) assert({rcv(i, 'known')});\n"
        f"    if ({rcv(i, 'known')} && !f_taken_{i} && {rcv(i, f'syncfifo{i}_readable')}) "
        f"assert({rcv(i, 'nxt_hdr')} == {rcv(i, f'syncfifo{i}_dout')}[{pb + N_IDENTS}:{pb}]);\n"
        f"    if ({rcv(i, 'valid')} && !{rcv(i, 'dec_drop')}) begin\n"
        f"        assert({rcv(i, 'head')}[{IDENT_BITS - 1}:0] < {N_IDENTS});\n"
        f"        assert(!syncnode_syncslots_retire[{rcv(i, 'head')}[{IDENT_BITS - 1}:0]]);\n"
        f"        if ({rcv(i, 'dec_to_cur')}) "
        f"assert(!syncnode_syncslots_cur_arr_{DIR_NAMES[d]}[{rcv(i, 'head')}[{IDENT_BITS - 1}:0]]);\n"
        f"    end"
        for i, d in enumerate(NEIGHBOURS))
    return f"""
// One symbolic ident; f_open: the node's accepted triggers for it minus its completions of it.
(* anyconst *) wire [{IDENT_BITS - 1}:0] f_id;
always @(*) assume(f_id < {N_IDENTS});
reg [2:0] f_open = 0;
{taken}
wire f_trig_now = sink_valid && sink_ready && sink_ident == f_id && !ev_trigger_drop;
wire f_cpl_now = source_valid && source_ready && source_ident == f_id;
always @(posedge clk) f_open <= f_open + f_trig_now - f_cpl_now;
always @(*) if (!init) begin
    // Completions (this cycle's included) never outnumber the accepted triggers: one completion a round,
    // and none before the round's trigger.
    assert(f_open + f_trig_now >= f_cpl_now);
    // Lemmas: the open triggers are the current round's (if not done), the next round's and one in the merge
    // stage (its flags not yet in).
    assert(f_open == ({slot("cur_self")} && !{slot("cur_done")}) + {slot("nxt_self")} + {m_trig});
    // A round is done only once complete; a next round's trigger is taken only once the round is done.
    assert((syncnode_syncslots_cur_done & ~syncnode_syncslots_complete) == 0);
    assert((syncnode_syncslots_nxt_self & ~syncnode_syncslots_cur_done) == 0);
    // A packet selected for a slot's current round comes from a link that has not arrived in it yet.
    if (syncnode_syncselect_sel_valid && syncnode_syncselect_sel_to_cur && !syncnode_syncselect_sel_drop) begin
{arrived}
    end
    // The same in the merge stage; a trigger merged into a current round finds the node's own trigger not in.
    if (syncnode_syncslots_m_ok && syncnode_syncslots_m_to_cur) begin
{merging}
        if (syncnode_syncslots_m_src == {local}) assert(!syncnode_syncslots_cur_self[syncnode_syncslots_m_ident]);
    end
{offers}
{entries}
    // A completion presented is one of a complete round not yet taken.
    if (syncnode_synccompletion_c_valid) assert(syncnode_synccompletion_cand[syncnode_synccompletion_c_ident]);
end
"""


def _link_check():
    links = [DIR_NAMES[d] for d in NEIGHBOURS]
    ident = f"[{PKT_IDENT_LSB + IDENT_BITS - 1}:{PKT_IDENT_LSB}]"
    decl = "\n".join(f"reg [7:0] f_rx_{l} = 0;\nwire f_rx_{l}_now = rx_{l}_valid && rx_{l}_data{ident} == f_id;"
                     for l in links)
    count = "\n".join(f"    if (f_rx_{l}_now) f_rx_{l} <= f_rx_{l} + 1;" for l in links)
    check = "\n".join(f"    assert(f_cpl + f_cpl_now <= f_rx_{l} + f_rx_{l}_now);" for l in links)
    return f"""
// One symbolic ident; the packets for it on each link and the node's completions of it, counted.
(* anyconst *) wire [{IDENT_BITS - 1}:0] f_id;
always @(*) assume(f_id < {N_IDENTS});
reg [7:0] f_cpl = 0;
wire f_cpl_now = source_valid && source_ready && source_ident == f_id;
{decl}
always @(posedge clk) begin
    if (f_cpl_now) f_cpl <= f_cpl + 1;
{count}
end
// Completions (this cycle's included) never outnumber the packets of that ident from any neighbour.
always @(*) if (!init) begin
{check}
end
"""


PROPERTIES = [
    Property(
        "sync_node_trigger",
        f"A sync node (neighbours N, S, E; {N_IDENTS} idents; any packets on its links, any triggers) completes "
        "an ident at most once per accepted trigger of its own for it, and never before that trigger.",
        _node, _trigger_check(),
        Mutation("a slot counts as complete without the node's own trigger",
                 r"^(assign syncnode_syncslots_complete = \(\(\()syncnode_syncslots_cur_self & "
                 r"(syncnode_syncslots_cur_arr_n\))", r"\1\2",
                 assertion="assert(f_open + f_trig_now >= f_cpl_now)"),
        cover="always @(*) if (!init) cover(f_cpl_now);",         # a completion of the symbolic ident
        mode="prove", depth=12),
    Property(
        "sync_node_links",
        f"A sync node (neighbours N, S, E; {N_IDENTS} idents; any packets on its links, any triggers) completes "
        "an ident no more often than packets for it came in from each neighbour.",
        _node, _link_check(),
        Mutation("a slot counts as complete without the message from the north",
                 r"^(assign syncnode_syncslots_complete = \(\(\()syncnode_syncslots_cur_self & "
                 r"syncnode_syncslots_cur_arr_n\)", r"\1syncnode_syncslots_cur_self)",
                 assertion="assert(f_cpl + f_cpl_now <= f_rx_n + f_rx_n_now)"),
        cover="always @(*) if (!init) cover(f_cpl_now);",         # a completion of the symbolic ident
        mode="bmc", depth=12),
]

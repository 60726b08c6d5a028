"""MiniSharp engine validation: no chunk slot stays held once its chunk completed or its context is gone,
every slot's count adds up to its rank bitmap, and every descriptor taken gets exactly one outcome."""
from cores.minisharp.common import KIND_DATA
from cores.minisharp.validation import MSValidation
from sim.formal import Mutation, Property

N_PORTS, N_CONTEXTS, N_SLOTS, MAX_RANKS, WINDOW = 2, 2, 2, 4, 4
V = "msvalidation_"
T = V + "mscontexttable_"
S = V + "msslottable_"
# The Migen namer gave two of the slot table's registers a prefix (unique names in the module).
SLOT_NAME = {"bitmap": "ap_free_s_bitmap", "chunk": "ap_upd_s_chunk"}


def _validation():
    m = MSValidation(N_PORTS, 1, 256, N_CONTEXTS, N_SLOTS, MAX_RANKS, window=WINDOW, tick_log2=1)
    ports = {}
    for i, s in enumerate(m.desc_sinks):
        for f, _ in s.description.payload_layout:
            ports[f"d{i}_{f}"] = (getattr(s, f), True)
        ports[f"d{i}_valid"], ports[f"d{i}_ready"] = (s.valid, True), (s.ready, False)
    for ep, name in ((m.job, "job"), (m.meta, "meta")):
        ports[name + "_valid"], ports[name + "_ready"] = (ep.valid, False), (ep.ready, True)
    for name in ("drop", "drop_reason", "chunk_done", "setup_done", "teardown_done", "ctx_expired"):
        ports[name] = (getattr(m, name), False)
    ports["slot_timeout"], ports["ctx_timeout"] = (m.slot_timeout, True), (m.ctx_timeout, True)
    return m, ports


def _slot(name, j):
    return S + SLOT_NAME.get(name, "s_" + name) + str(j)


def _ctx(name, i):
    return f"{T}c_{name}{i}"


LW = (WINDOW - 1).bit_length()


def _open_chunk(i, chunk):
    """Chunk `chunk` of context i is incomplete by its window: in [base, base + WINDOW), its done bit clear."""
    base = _ctx("base", i)
    return (f"({{1'b0, {chunk}}} >= {base} && {{1'b0, {chunk}}} < {base} + {WINDOW} && "
            f"!{_ctx('done', i)}[{chunk}[{LW - 1}:0]])")


def _slot_lines(j):
    """What a held slot j satisfies."""
    v, ctx, chunk, bitmap, count = (_slot(n, j) for n in ("valid", "ctx", "chunk", "bitmap", "count"))
    pop = " + ".join(f"{bitmap}[{r}]" for r in range(MAX_RANKS))
    lines = [f"assert({ctx} != 0 && ({ctx} & ({ctx} - 1)) == 0);      // one context",
             f"assert({count} == {pop});                        // its count = the ranks seen"]
    for i in range(N_CONTEXTS):
        lines += [f"if ({ctx}[{i}]) begin",
                  f"    assert({_ctx('valid', i)});                                  // the context exists",
                  f"    assert({count} < {_ctx('expected', i)});                     // not complete by count",
                  f"    assert(({bitmap} >> {_ctx('expected', i)}) == 0);            // only the context's ranks",
                  f"    if (!{_ctx('child', i)}) assert({_open_chunk(i, chunk)});   // nor by its window",
                  "end"]
    for k in range(N_SLOTS):
        if k != j:
            lines.append(f"if ({_slot('valid', k)}) assert(!({_slot('ctx', k)} == {ctx} && "
                         f"{_slot('chunk', k)} == {chunk}));   // one slot a chunk")
    return [f"if ({v} && !{S}ap_upd[{j}] && !{S}ap_free[{j}]) begin"] + ["    " + x for x in lines] + ["end"]


def _write_lines(j):
    """What the decided frame's write of slot j satisfies, in DECIDE and while the write is pending."""
    v, ctx, chunk, bitmap, count = (_slot(n, j) for n in ("valid", "ctx", "chunk", "bitmap", "count"))
    same = f"{ctx} == {V}ctx_oh && {chunk} == {V}d_chunk"
    held = " || ".join(f"{_slot('valid', k)} && {_slot('ctx', k)} == {V}ctx_oh && "
                       f"{_slot('chunk', k)} == {V}d_chunk" for k in range(N_SLOTS) if k != j) or "0"
    expected = f"{_ctx('expected', 0)}" if N_CONTEXTS == 1 else \
        "(" + " : ".join(f"{V}ctx_idx == {i} ? {_ctx('expected', i)}" for i in range(N_CONTEXTS - 1)) + \
        f" : {_ctx('expected', N_CONTEXTS - 1)})"
    child = "(" + " : ".join(f"{V}ctx_idx == {i} ? {_ctx('child', i)}" for i in range(N_CONTEXTS - 1)) + \
        f" : {_ctx('child', N_CONTEXTS - 1)})"
    window = " && ".join(f"({V}ctx_idx != {i} || {_open_chunk(i, V + 'd_chunk')})" for i in range(N_CONTEXTS))
    upd = f"(state == DECIDE && {V}upd[{j}] || {S}ap_upd[{j}])"
    free = f"((state == DECIDE || f_free_q) && {V}free[{j}])"
    return [
        f"if ({upd}) begin",
        f"    assert({V}cur == {j} && !{V}data_drop && !{V}complete && {V}new_count < {expected} && "
        f"{V}d_rank < {expected});",
        f"    assert(!({held}));",
        f"    if (!{child}) assert({window});",
        f"    if ({V}init) assert(!{v} && {V}new_count == 1);",
        f"    else assert({v} && {same} && ({bitmap} & {V}rank_oh) == 0 && {V}new_count == {count} + 1);",
        "end",
        # A completing frame frees its chunk's slot, or (one contributor) names a free slot it never held.
        f"if ({free}) begin",
        f"    assert({V}cur == {j} && !{V}data_drop && {V}complete && {V}d_rank < {expected});",
        f"    if (!{child}) assert({window});",
        f"    if ({V}init) assert(!{v} && {expected} == 1 && !({held}));",
        f"    else assert({v} && {same} && {count} + 1 == {expected} && ({bitmap} & {V}rank_oh) == 0);",
        "end",
    ]


def _frame_lines():
    """The decided frame's registers: its context and rank, its one-hot writes."""
    ctx_oh = " || ".join(f"{V}ctx_idx == {i} && {V}ctx_oh == {1 << i}" for i in range(N_CONTEXTS))
    valid = " : ".join(f"{V}ctx_idx == {i} ? {_ctx('valid', i)}" for i in range(N_CONTEXTS - 1)) + \
        f" : {_ctx('valid', N_CONTEXTS - 1)}"
    return [
        f"if ({S}ap_upd != 0 || f_free_q) assert(state == IDLE && {S}ap_free == ({S}ap_upd != 0 ? 0 : {V}free) && "
        f"{S}ap_upd == (f_free_q ? 0 : {V}upd));",
        f"if (state == DECIDE || {S}ap_upd != 0 || f_free_q) begin",
        f"    assert({ctx_oh});",
        f"    assert({V}rank_oh == ((32'd1 << {V}d_rank) & {(1 << MAX_RANKS) - 1}));",
        f"    assert(({V}upd & ({V}upd - 1)) == 0 && ({V}free & ({V}free - 1)) == 0 && ({V}upd & {V}free) == 0);",
        f"    if ({V}upd != 0 || {V}free != 0) assert(({valid}) && {V}d_kind == {KIND_DATA} && {V}d_rank < {MAX_RANKS});",
        "end",
    ] + [f"if ({_ctx('valid', i)}) assert({_ctx('expected', i)} != 0 && {_ctx('expected', i)} <= {MAX_RANKS});"
         for i in range(N_CONTEXTS)]


def _check():
    m = _validation()[0]
    state = {name: code for code, name in enumerate(m.fsm.actions)}       # Migen's FSM encoding
    in_frame = " || ".join(f"state == {state[n]}" for n in
                           ("LOOKUP", "LOOKUP2", "SETUP", "CTX", "CTX2", "CHECK1", "CHECK2", "DECIDE"))
    layout = m.desc_sinks[0].description.payload_layout
    width = sum(w for _, w in layout)
    stable = "\n".join(
        f"wire [{width - 1}:0] f_desc{i} = {{{', '.join(f'd{i}_{f}' for f, _ in layout)}}};\n"
        f"reg [{width - 1}:0] f_desc{i}_q = 0;\nreg f_hold{i} = 0;\n"
        f"always @(posedge clk) begin f_hold{i} <= d{i}_valid && !d{i}_ready; f_desc{i}_q <= f_desc{i}; end\n"
        f"always @(*) if (f_hold{i}) assume(d{i}_valid && f_desc{i} == f_desc{i}_q);"
        for i in range(N_PORTS))
    fetch = " || ".join(f"d{i}_valid && d{i}_ready" for i in range(N_PORTS))
    table = [x for j in range(N_SLOTS) for x in _slot_lines(j) + _write_lines(j)] + _frame_lines()
    body = "\n".join("    " + x for x in table)
    for name in ("DECIDE", "IDLE"):
        body = body.replace(f"state == {name}", f"state == {state[name]}")
    return f"""
// The descriptor queues are streams: a descriptor stays, unchanged, until taken.
{stable}
// f_open: descriptors taken minus outcomes (a drop with its reason, a setup installed, a teardown, a data or
// result frame accepted); the engine works on one frame at a time.
wire f_taken = {fetch};
wire f_outcome = drop || setup_done || teardown_done || ({S}commit && !{V}data_drop);
reg [2:0] f_open = 0;
always @(posedge clk) f_open <= f_open + f_taken - f_outcome;
// f_free_q: the slot frees of the last cycle came from a completing frame (not a teardown or an expiry).
reg f_free_q = 0;
always @(posedge clk) f_free_q <= {S}commit && {V}free != 0;
always @(*) if (!init) begin
    assert(f_open <= 1);
    assert(!(f_outcome && f_open == 0));
    assert(drop + setup_done + teardown_done + ({S}commit && !{V}data_drop) <= 1);
    assert(!(f_taken && f_open != 0));
    // Lemmas: a frame is open from its fetch to its outcome, in the FSM's frame states; a port is read
    // only in FETCH, one at a time, and only a port whose descriptor waited there.
    assert(f_open == ({in_frame}));
    assert({" + ".join(f"d{i}_ready" for i in range(N_PORTS))} == (state == {state["FETCH"]}));
    assert({V}msportselect_fetching == (state == {state["FETCH"]}));
{chr(10).join(f"    if (d{i}_ready) assert(f_hold{i});" for i in range(N_PORTS))}
end
// The slot table: every held slot (its writes landed); the decided frame's write (lemmas).
always @(*) if (!init) begin
{body}
end
"""


# The cover: a held slot freed by its timeout (EXPIRE_SLOTS). A setup (5 cycles), a data frame that opens
# the slot (9), then slot_timeout = 1: one tick (2 cycles), the registered expiry, IDLE, EXPIRE_SLOTS
# (reached at step 20).
EXPIRY_DEPTH = 26


def _expiry_cover():
    return f"always @(*) if (!init) cover({V}slots_expired != 0);"


PROPERTIES = [
    Property(
        "minisharp_engine_slots",
        f"The MiniSharp engine's validation ({N_PORTS} ports, {N_CONTEXTS} contexts, {N_SLOTS} slots, "
        f"{MAX_RANKS} ranks, a {WINDOW}-chunk window, any descriptors, timeouts and back-pressure) holds a chunk "
        "slot only for an incomplete chunk of an installed context (never once the chunk completed, by count "
        "or by its window), with its count equal to its rank bitmap, one slot a chunk, and gives every "
        "descriptor it takes exactly one outcome.",
        _validation, _check(),
        # A leak in the slot table itself: a defect before it (the wave-1 leak, a late duplicate opening a
        # slot) trips the lemma on the decided frame's write a cycle before the slot is held, and the BMC
        # stops there. Depth 30: a setup (5 cycles), a data frame that opens a slot (9), a teardown (5), the
        # registered free, with the fetches between them.
        Mutation("a teardown (or an expired context) leaves its context's slots held",
                 r"\(msvalidation_msslottable_replace \? msvalidation_msslottable_n_contexts : 1'd0\)", "1'd0",
                 depth=30, assertion="// the context exists"),
        cover=_expiry_cover(),
        mode="prove", depth=10, cover_depth=EXPIRY_DEPTH),
]

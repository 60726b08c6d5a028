"""iSLIP scheduler: every decision is a matching; a persistent request is served within a bounded
number of decisions."""
from cores.lib.logic import index_bits
from cores.switch.islip import ISLIPScheduler
from sim.formal import Mutation, Property


def _scheduler(n, iterations):
    def build():
        m = ISLIPScheduler(n, iterations)
        ports = {"req": (m.req, True), "start": (m.start, True), "busy": (m.busy, False),
                 "done": (m.done, False), "match_valid": (m.match_valid, False),
                 "match_flat": (m.match_flat, False)}
        return m, ports
    return build


def _matching_check(n):
    w = index_bits(n)
    return f"""
// The requests of the decision in progress, latched as the scheduler latches them.
reg [{n * n - 1}:0] f_req_l = 0;
always @(posedge clk) if (start && !busy) f_req_l <= req;
wire [{n * n - 1}:0] f_req_q = {{{", ".join(f"islipscheduler_req_q{i}" for i in reversed(range(n)))}}};
integer f_a, f_b;
always @(*) if (!init) for (f_a = 0; f_a < {n}; f_a = f_a + 1) begin
    // Lemmas: the latched requests are the shadow's; a matched input's output is marked matched.
    assert(f_req_q == f_req_l);
    if (match_valid[f_a]) assert(islipscheduler_out_matched[match_flat[f_a * {w} +: {w}]]);
    // Input f_a is matched only to an output it requested ...
    if (match_valid[f_a]) assert(f_req_l[f_a * {n} + match_flat[f_a * {w} +: {w}]]);
    // ... and no output is matched to two inputs (an input holds one match by construction).
    for (f_b = f_a + 1; f_b < {n}; f_b = f_b + 1)
        if (match_valid[f_a] && match_valid[f_b]) assert(match_flat[f_a * {w} +: {w}] != match_flat[f_b * {w} +: {w}]);
end
"""


def _service_check(n, bound):
    w = index_bits(n)
    return f"""
// Requests as VOQs make them: a request may appear at any decision, and leaves only after a decision
// matched its pair (a VOQ empties only by sending).
reg [{n * n - 1}:0] f_req_l = 0, f_kept_q = 0;
reg [{n * n - 1}:0] f_kept;     // the requests that must stay, up to date in the cycle of `done`
integer f_a;
always @(*) begin
    f_kept = f_kept_q;
    if (done) begin
        f_kept = f_req_l;
        for (f_a = 0; f_a < {n}; f_a = f_a + 1)
            if (match_valid[f_a]) f_kept[f_a * {n} + match_flat[f_a * {w} +: {w}]] = 1'b0;
    end
end
wire f_accepted = start && !busy;
always @(*) if (f_accepted) assume((req & f_kept) == f_kept);
always @(posedge clk) begin
    if (f_accepted) f_req_l <= req;
    f_kept_q <= f_kept;
end
// One symbolic (input, output) pair: the decisions that leave it waiting number fewer than {bound}.
(* anyconst *) wire [{w - 1}:0] f_ii;
(* anyconst *) wire [{w - 1}:0] f_jj;
reg [7:0] f_waited = 0;
wire f_served = match_valid[f_ii] && match_flat[f_ii * {w} +: {w}] == f_jj;
always @(posedge clk) if (done) f_waited <= f_req_l[f_ii * {n} + f_jj] && !f_served ? f_waited + 1 : 0;
always @(*) if (!init) assert(f_waited < {bound});
"""


PROPERTIES = [
    *[Property(
        f"switch_islip_matching_n{n}_k{k}",
        f"Every iSLIP decision (N = {n}, {k} iterations{', as in the switch' if (n, k) == (4, 2) else ''}) "
        "matches each input to at most one requested output and each output to at most one input.",
        _scheduler(n, k), _matching_check(n),
        Mutation("an output accepted in the first iteration stays free for the second",
                 r"^(\s*islipscheduler_out_matched\[0\] <= )1'd1;", r"\g<1>1'd0;"),
        mode="prove", depth=4)
      for n, k in ((4, 2), (8, 3))],
    Property(
        "switch_islip_service_n4_k1",
        "With requests that leave only once served (as VOQs make them), a request (N = 4, 1 iteration) is "
        "served within 2 N^2 = 32 decisions (N^2 = 16 does not hold: the solver finds a 16-decision wait).",
        _scheduler(4, 1), _service_check(4, 32),
        Mutation("output 0's grant pointer stays on the input it granted (that input always wins it)",
                 r"^(\s*islipscheduler_grant_ptr0 <= )\(islipscheduler_g_index0 \+ 1'd1\);",
                 r"\g<1>islipscheduler_g_index0;"),
        mode="bmc", depth=110, slow=True),
]

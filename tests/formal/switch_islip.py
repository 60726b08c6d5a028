"""iSLIP scheduler: every decision is a matching. (The service bound: docs/verification.md.)"""
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
]

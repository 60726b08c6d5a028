"""MiniSharp port ingress: every frame that ends on the port gets exactly one decision (to the engine,
forwarded, or dropped with a reason), and each buffer commits or aborts it exactly once, as decided."""
from cores.minisharp.common import DROP, KIND_DATA, KIND_RESULT
from cores.minisharp.ingress import MSPortIngress
from sim.formal import Mutation, Property

C = "msportingress_msframeclassifier_"


def _ingress():
    m = MSPortIngress(dw=8, lanes=1, payload_bytes=64, raw_bytes=128, desc_depth=2)
    ports = {"frame": (m.frame, False), "fwd_frame": (m.fwd_frame, False), "drop": (m.drop, False),
             "drop_reason": (m.drop_reason, False), "policy": (m.policy, True), "admin": (m.admin, True),
             "mac_filter": (m.mac_filter, True), "mac": (m.mac, True)}
    for f in ("valid", "data", "last", "last_be", "error"):
        ports["sink_" + f] = (getattr(m.sink, f), True)
    for ep, name in ((m.desc, "desc"), (m.payload, "payload"), (m.fwd, "fwd")):
        ports[name + "_valid"], ports[name + "_ready"] = (ep.valid, False), (ep.ready, True)
    return m, ports


CHECK = f"""
// f_open: frames that ended on the port (last beat) minus the decisions taken (one `frame` pulse each).
reg [2:0] f_open = 0;
always @(posedge clk) f_open <= f_open + (sink_valid && sink_last) - frame;
wire f_data_kind = {C}dec_kind == {KIND_DATA} || {C}dec_kind == {KIND_RESULT};
always @(*) if (!init) begin
    // Each decision is exactly one of: to the engine, forwarded, dropped; a drop names a reason.
    if (frame) assert(msportingress_eng_go + msportingress_fwd_go + drop == 1);
    if (drop) assert(drop_reason < {len(DROP)});
    assert(fwd_frame == msportingress_fwd_go);
    // The forwarding buffer commits exactly the forwarded frames and aborts every other one, once.
    assert(msportingress_commitfifo_commit == msportingress_fwd_go);
    assert((msportingress_commitfifo_commit || msportingress_commitfifo_abort) == frame);
    assert(!(msportingress_commitfifo_commit && msportingress_commitfifo_abort));
    // The payload buffer commits exactly the data and result frames that go to the engine.
    assert(msportingress_mspayloadwriter_commitfifo_commit == (msportingress_eng_go && f_data_kind));
    assert((msportingress_mspayloadwriter_commitfifo_commit || msportingress_mspayloadwriter_commitfifo_abort) == frame);
    assert(!(msportingress_mspayloadwriter_commitfifo_commit && msportingress_mspayloadwriter_commitfifo_abort));
    // Lemmas: the frames not decided yet are the ends in the classifier's three pipeline registers; its
    // per-buffer end flags agree with its decision.
    assert(f_open == {C}e_end + {C}f_end + {C}dec_end);
    assert({C}raw_commit_end == ({C}dec_end && {C}dec_forward));
    assert({C}raw_abort_end == ({C}dec_end && !{C}dec_forward));
    assert({C}payload_commit_end == ({C}dec_end && {C}dec_to_engine && f_data_kind));
    assert({C}payload_abort_end == ({C}dec_end && !({C}dec_to_engine && f_data_kind)));
end
"""

PROPERTIES = [
    Property(
        "minisharp_ingress_decisions",
        "A MiniSharp port ingress (8-bit, any bytes, lengths, PHY errors and back-pressure) gives every frame "
        "that ends exactly one decision (engine, forward, or drop with a reason), and its forwarding and "
        "payload buffers each commit or abort that frame once, as decided.",
        _ingress, CHECK,
        Mutation("a frame forwarded while the forwarding buffer overflowed is still committed",
                 r"^(assign msportingress_commitfifo_commit = \(msportingress_msframeclassifier_raw_commit_end)"
                 r" & msportingress_raw_ok\);", r"\1);",
                 status="UNKNOWN", assertion="assert(msportingress_commitfifo_commit == msportingress_fwd_go)"),
        # a drop decision: a frame ends, then the classifier's three pipeline registers (reached at step 3)
        cover="always @(*) if (!init) cover(frame && drop);",
        mode="prove", depth=6),
]

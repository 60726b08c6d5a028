"""Batcher-Banyan network: with distinct destinations no two beats collide and each beat reaches its
output with its data, `latency` cycles after it entered."""
from cores.lib.logic import index_bits
from cores.switch.batcher_banyan import BatcherBanyan
from sim.formal import Mutation, Property

DATA_WIDTH = 4      # the data only ride a block RAM and a multiplexer: 4 bits show any misdelivery


def _network(n):
    def build():
        m = BatcherBanyan(n, DATA_WIDTH, pipeline=True)
        ports = {"collisions": (m.collisions, False)}
        for i in range(n):
            ports.update({f"in_valid{i}": (m.in_valid[i], True), f"in_dst{i}": (m.in_dst[i], True),
                          f"in_data{i}": (m.in_data[i], True),
                          f"out_valid{i}": (m.out_valid[i], False), f"out_data{i}": (m.out_data[i], False)})
        return m, ports
    return build


def _check(n):
    w, lat, d = index_bits(n), BatcherBanyan(n, DATA_WIDTH).latency, DATA_WIDTH
    cat = lambda fmt: "{" + ", ".join(fmt.format(i) for i in reversed(range(n))) + "}"
    return f"""
wire [{n - 1}:0] f_v_in = {cat("in_valid{}")};
wire [{n * w - 1}:0] f_dst_in = {cat("in_dst{}")};
wire [{n * d - 1}:0] f_data_in = {cat("in_data{}")};
wire [{n - 1}:0] f_v_out = {cat("out_valid{}")};
wire [{n * d - 1}:0] f_data_out = {cat("out_data{}")};
// The beats that the outputs present now entered {lat} cycles ago: a shadow delay line of the inputs.
reg [{n - 1}:0] f_v_q [0:{lat - 1}];
reg [{n * w - 1}:0] f_dst_q [0:{lat - 1}];
reg [{n * d - 1}:0] f_data_q [0:{lat - 1}];
integer f_k, f_i, f_j, f_hits;
initial for (f_k = 0; f_k < {lat}; f_k = f_k + 1) f_v_q[f_k] = 0;
always @(posedge clk) begin
    f_v_q[0] <= f_v_in; f_dst_q[0] <= f_dst_in; f_data_q[0] <= f_data_in;
    for (f_k = 1; f_k < {lat}; f_k = f_k + 1) begin f_v_q[f_k] <= f_v_q[f_k - 1]; f_dst_q[f_k] <= f_dst_q[f_k - 1]; f_data_q[f_k] <= f_data_q[f_k - 1]; end
end
// The environment (a matching) gives distinct destinations to the valid beats of a cycle.
always @(*) for (f_i = 0; f_i < {n}; f_i = f_i + 1) for (f_j = f_i + 1; f_j < {n}; f_j = f_j + 1)
    if (f_v_in[f_i] && f_v_in[f_j]) assume(f_dst_in[f_i * {w} +: {w}] != f_dst_in[f_j * {w} +: {w}]);
always @(*) if (!init) begin
    assert(collisions == 0);
    for (f_j = 0; f_j < {n}; f_j = f_j + 1) begin
        f_hits = 0;
        for (f_i = 0; f_i < {n}; f_i = f_i + 1)
            if (f_v_q[{lat - 1}][f_i] && f_dst_q[{lat - 1}][f_i * {w} +: {w}] == f_j) begin
                f_hits = f_hits + 1;
                assert(f_data_out[f_j * {d} +: {d}] == f_data_q[{lat - 1}][f_i * {d} +: {d}]);
            end
        assert(f_v_out[f_j] == (f_hits != 0));
    end
end
"""


PROPERTIES = [
    Property(
        f"switch_network_n{n}",
        f"The Batcher-Banyan network (N = {n}, pipelined) delivers every beat of distinct destinations to its "
        f"output with its data after exactly `latency` cycles, no other beat appears, and no 2x2 element "
        f"ever sees a collision.",
        _network(n), _check(n),
        Mutation("the first sorter stage compares ports 0 and 1 the wrong way round",
                 r"^(\s*\w*s1_lane[01] <= \(\(\w*in_lane0\[\d+:\d+\] )>( \w*in_lane1)", r"\1<\2", count=2,
                 assertion="assert(collisions == 0)"),
        # two beats leave together while more enter: the network carries several beats at once
        cover="always @(*) if (!init) cover((f_v_out & (f_v_out - 1)) != 0 && f_v_in != 0);",
        mode="prove", depth=BatcherBanyan(n, DATA_WIDTH).latency + 2)
    for n in (4, 8)
]

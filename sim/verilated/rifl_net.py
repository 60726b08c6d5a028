"""A RIFL network (cores.rifl_net.network.RIFLNetwork) as one Verilated model on sim.verilated, with a C++ harness
that plays hosts' packets in, takes what the hosts deliver, and drives the links' error and down controls.

    model = NetModel(one_switch(4), latency=8)                 # built once, cached by sim.verilated
    run = model.run(packets, events, seed=1, valid_p=0.9, ready_p=0.7)

Packets: Packet(src, t, length, dst, echo): host src offers the packet from cycle t (in order per host) with
the route topology.route(src, dst); `echo`: the receiving host sends it back at once, the route being the
reply its reassembler computed (the RTL's, not the reference's). Contents: byte i of the packet of (src,
seq) is `payload_byte(src, seq, i)` (bytes 0-1: src, 2-5: seq, little-endian; seq bit 31 asks for an
echo, bit 30 marks one, the bits below count the host's packets and echoes in offering order); the harness checks every delivered byte. Events: (cycle, channel, field, value),
field in EVENT_FIELDS. Valid and ready are random per cycle (valid_p, ready_p), from the harness's seeded
PRNG. The run ends once every offered packet has been delivered and the last event has passed (or at
max_cycles), then DRAIN_CYCLES more cycles for the counters.

`capture`: pcap files of chosen links (NetModel.run).
Result: `sent` (src, seq) -> cycle of the first beat, `delivered` list of Delivery(host, cycle, src, seq,
length, header, reply, ok), `echoes` (host, seq of the echo, src, seq echoed), `counters` {name: value}
(prefixes h<h>_, s<s>_, c<c>_; see NetModel.counter_ports), `cycles`.
"""
import os
import tempfile
from collections import namedtuple

from migen import If, Signal

from litex.gen import LiteXModule

from cores.lib.counters import COUNTER_BITS
from cores.rifl.common import (CHANNEL_RANDOM_MAX_BITS, EP_COUNTERS, FC_GATE_COUNTERS, L2_RX_COUNTERS, L2_TX_COUNTERS,
                               PCAP_DLT_L1, PCAP_DLT_L2)
from cores.rifl.endpoint import fc_gate_channel
from cores.rifl_net.network import RIFLNetwork
from cores.rifl_net.common import LINE_CARD_COUNTERS
from cores.switch.common import SWITCH_COUNTERS, VOQ_COUNTERS
from sim.verilated.build import Model
from sim.verilated.verilog import flat_ports

Packet = namedtuple("Packet", "src t length dst echo", defaults=(False,))
Delivery = namedtuple("Delivery", "host cycle src seq length header reply ok")
Result = namedtuple("Result", "sent delivered echoes counters cycles")
EVENT_FIELDS = ["mode", "threshold", "burst"] + [f"thr{k + 1}" for k in range(CHANNEL_RANDOM_MAX_BITS)] + \
    ["force", "down"]
DRAIN_CYCLES = 200
ECHO_ASK, ECHO_MARK = 1 << 31, 1 << 30
SEQ_ORDER = ECHO_MARK - 1      # the low bits of seq: the order in which the host offered its packets
MIN_LENGTH = 8                 # room for the (src, seq) tag


def _mix(x):
    x = (x + 0x9E3779B97F4A7C15) & (2**64 - 1)
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & (2**64 - 1)
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & (2**64 - 1)
    return x ^ (x >> 31)


def payload_byte(src, seq, i):
    """Byte i of the packet (src, seq): the tag, then a splitmix64 stream."""
    if i < 6:
        return ((src | (seq << 16)) >> (8 * i)) & 0xFF
    return (_mix((src << 40) ^ (seq << 8) ^ (i // 8)) >> (8 * (i % 8))) & 0xFF


class RIFLNetHarness(LiteXModule):
    """RIFLNetwork with monitors: per switch the largest VOQ occupancy seen (`peak`), the line cards'
    counters summed over the ports, the inputs' VOQ counters summed."""
    def __init__(self, topology, **kw):
        self.net = net = RIFLNetwork(topology, **kw)
        self.counter_sigs = sigs = {}
        for h, host in enumerate(net.hosts):
            for name, _ in EP_COUNTERS:
                sigs[f"h{h}_{name}"] = host.endpoint.counters[name]
            for name, _ in L2_TX_COUNTERS:
                sigs[f"h{h}_tx_{name}"] = host.segmenter.counters[name]
            for name, _ in L2_RX_COUNTERS:
                sigs[f"h{h}_rx_{name}"] = host.reassembler.counters[name]
            for name, _ in FC_GATE_COUNTERS:
                sigs[f"h{h}_{name}"] = host.gate.counters[name]
        for s, node in enumerate(net.switches):
            sw = node.switch
            parts = [(name, [inp.counters[name] for inp in sw.inputs]) for name, _ in VOQ_COUNTERS]
            parts += [(name, [c.counters[name] for c in node.cards]) for name, _ in EP_COUNTERS + LINE_CARD_COUNTERS]
            parts += [(name, [sw.counters[name]]) for name, _ in SWITCH_COUNTERS]
            parts += [("collisions", [sw.collisions])]
            for name, values in parts:
                total = Signal(COUNTER_BITS, name=f"s{s}_{name}")
                self.comb += total.eq(sum(values))
                sigs[f"s{s}_{name}"] = total
            peak = Signal(16, name=f"s{s}_peak")
            self.sync += [If(occ > peak, peak.eq(occ)) for inp in sw.inputs for occ in inp.occupancy]
            sigs[f"s{s}_peak"] = peak
        for c, ch in enumerate(net.channels):
            for name, sig in ch.counters.items():
                sigs[f"c{c}_{name}"] = sig
        for h, host in enumerate(net.hosts):
            sigs[f"h{h}_link_up"] = host.link_up
        # Capture: every channel's line (what its receiver sees) and its receiver's Layer 1 packets.
        self.captures = []
        for c, (ch, ep) in enumerate(zip(net.channels, net.receivers)):
            take = Signal(name=f"cap{c}_take")
            self.comb += take.eq(ep.source.valid & ep.source.ready)
            self.captures.append({"frame": ch.source_frame, "take": take, "data": ep.source.data,
                                  "nbytes": ep.source.nbytes, "last": ep.source.last})


HARNESS = r"""
#include "Vnet.h"
#include "verilated.h"
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <vector>

template <typename T> static void setw(T &p, const uint32_t *w) { p = (T)(w[0] | ((uint64_t)w[1] << 32)); }
template <std::size_t W> static void setw(VlWide<W> &p, const uint32_t *w) { for (std::size_t i = 0; i < W; i++) p[i] = w[i]; }
template <typename T> static void getw(const T &p, uint32_t *w) { uint64_t v = p; w[0] = (uint32_t)v; w[1] = (uint32_t)(v >> 32); }
template <std::size_t W> static void getw(const VlWide<W> &p, uint32_t *w) { for (std::size_t i = 0; i < W; i++) w[i] = p[i]; }

static uint64_t mix(uint64_t x) {
    x += 0x9E3779B97F4A7C15ULL; x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL; return x ^ (x >> 31);
}
static uint8_t pbyte(uint32_t src, uint32_t seq, int i) {
    if (i < 6) return (uint8_t)((((uint64_t)src) | ((uint64_t)seq << 16)) >> (8 * i));
    return (uint8_t)(mix(((uint64_t)src << 40) ^ ((uint64_t)seq << 8) ^ (uint64_t)(i / 8)) >> (8 * (i %% 8)));
}
static uint64_t rng_state = 1;
static double urand() { rng_state = mix(rng_state); return (rng_state >> 11) * (1.0 / 9007199254740992.0); }

struct Pkt { long t; uint32_t seq; int length; uint64_t route; };
// A host's queues: one (FIFO mode), or one per flow-control channel of its switch plus one for echoes
// (per-destination mode); `cur` is the queue whose packet is presented or under way.
static const int QUEUES = 65, ECHO_Q = 64;
struct Tx { std::deque<Pkt> q[QUEUES]; int cur = -1, off = 0; uint32_t next_seq = 0; };
struct Rx { std::vector<uint8_t> buf; int length = 0; uint64_t header = 0, reply = 0; };
struct Ev { long t; int chan, field; uint32_t value; };

static const int H = %(hosts)d, C = %(channels)d, W = %(width_bytes)d, F = %(frame_bits)d;
static Vnet *top;
static FILE *out;

static void set_tx(int h, int valid, const uint32_t *data, int last, int length, uint64_t route) {
    uint32_t r[2] = {(uint32_t)route, (uint32_t)(route >> 32)};
    switch (h) {
%(set_tx)s
    }
}
static int tx_ready(int h) { switch (h) {
%(tx_ready)s
    } return 0; }
static uint64_t paused(int h) { switch (h) {
%(paused)s
    } return 0; }
// The queue a host presents next: the oldest eligible front, skipping paused channels in per-destination mode.
static int pick(Tx &s, int h, long cycle, int voqs) {
    if (s.cur >= 0) return s.cur;
    uint64_t p = voqs ? paused(h) : 0;
    int best = -1;
    for (int k = 0; k < QUEUES; k++) {
        if (s.q[k].empty() || s.q[k].front().t > cycle || (k < ECHO_Q && ((p >> k) & 1))) continue;
        if (best < 0 || s.q[k].front().t < s.q[best].front().t ||
            (s.q[k].front().t == s.q[best].front().t && s.q[k].front().seq < s.q[best].front().seq)) best = k;
    }
    return best;
}
static void set_rx_ready(int h, int v) { switch (h) {
%(set_rx_ready)s
    } }
static int rx_beat(int h, uint32_t *data, int *last, int *length, uint64_t *header, uint64_t *reply) {
    uint32_t a[2], b[2];
    switch (h) {
%(rx_beat)s
    }
    return 0;
}
static void set_ctrl(int c, int field, uint32_t v) { switch (c) {
%(set_ctrl)s
    } }
static void tick() { top->clk = 1; top->eval(); top->clk = 0; top->eval(); }

// Capture (pcap, timestamps = cycle numbers in microseconds): L1 frames as sent on the line (MSB first),
// Layer 1 packets (Layer 2 segments) as the channel's receiver delivered them.
static FILE *cap_l1[C], *cap_l2[C];
static std::vector<uint8_t> cap_buf[C];
static FILE *pcap_open(const char *path, unsigned dlt) {
    FILE *f = fopen(path, "wb");
    uint32_t h[6] = {0xa1b2c3d4u, 0x00040002u, 0, 0, 65535, dlt};
    fwrite(h, 4, 6, f);
    return f;
}
static void pcap_rec(FILE *f, long cycle, const uint8_t *b, uint32_t n) {
    uint32_t h[4] = {(uint32_t)(cycle / 1000000), (uint32_t)(cycle %% 1000000), n, n};
    fwrite(h, 4, 4, f);
    fwrite(b, 1, n, f);
}
static void capture_frame(int c, long cycle, const uint32_t *w) {
    uint8_t b[F / 8];
    for (int i = 0; i < F / 8; i++) { int p = F - 8 - 8 * i; b[i] = (uint8_t)(w[p / 32] >> (p %% 32)); }
    pcap_rec(cap_l1[c], cycle, b, F / 8);
}
static void capture_beat(int c, long cycle, const uint32_t *w, int nbytes, int last) {
    for (int i = 0; i < nbytes; i++) cap_buf[c].push_back((uint8_t)(w[i / 4] >> (8 * (i %% 4))));
    if (last) { pcap_rec(cap_l2[c], cycle, cap_buf[c].data(), cap_buf[c].size()); cap_buf[c].clear(); }
}
static void capture(int c, long cycle) {
    uint32_t w[F / 32 + 2], d[F / 32 + 2];
    switch (c) {
%(capture)s
    }
}

int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    FILE *f = fopen(argv[1], "r");
    out = fopen(argv[2], "w");
    long max_cycles = atol(argv[3]);
    rng_state = strtoull(argv[4], 0, 10);
    double valid_p = atof(argv[5]), ready_p = atof(argv[6]);
    int voqs = atoi(argv[9]);
    std::vector<int> caps;
    if (strcmp(argv[8], "-")) {
        char path[4096];
        for (char *tok = strtok(argv[8], ","); tok; tok = strtok(0, ",")) {
            int c = atoi(tok);
            caps.push_back(c);
            snprintf(path, sizeof path, "%%s_c%%d_l1.pcap", argv[7], c); cap_l1[c] = pcap_open(path, %(dlt_l1)d);
            snprintf(path, sizeof path, "%%s_c%%d_l2.pcap", argv[7], c); cap_l2[c] = pcap_open(path, %(dlt_l2)d);
        }
    }
    std::vector<Tx> tx(H);
    std::vector<Rx> rx(H);
    std::vector<Ev> ev;
    char kind;
    long offered = 0, delivered = 0, last_event = 0;
    while (fscanf(f, " %%c", &kind) == 1) {
        if (kind == 'P') {
            int src, length, echo, ch; long t; unsigned long long route;
            if (fscanf(f, "%%d %%ld %%d %%llx %%d %%d", &src, &t, &length, &route, &echo, &ch) != 6) return 2;
            uint32_t seq = tx[src].next_seq++ | (echo ? 0x80000000u : 0);
            tx[src].q[voqs ? ch : 0].push_back({t, seq, length, (uint64_t)route});
            offered++;
        } else if (kind == 'C') {
            Ev e; if (fscanf(f, "%%ld %%d %%d %%u", &e.t, &e.chan, &e.field, &e.value) != 4) return 2;
            ev.push_back(e); if (e.t > last_event) last_event = e.t;
        }
    }
    fclose(f);
    top = new Vnet;
    top->rst = 1; top->clk = 0; top->eval(); tick(); top->rst = 0; top->eval();
    size_t next_ev = 0;
    long cycle = 0, done_at = -1;
    uint32_t data[W / 4 + 2], a[W / 4 + 2];
    for (; cycle < max_cycles; cycle++) {
        while (next_ev < ev.size() && ev[next_ev].t <= cycle) { set_ctrl(ev[next_ev].chan, ev[next_ev].field, ev[next_ev].value); next_ev++; }
        int txv[H], rxr[H];
        for (int h = 0; h < H; h++) {
            Tx &s = tx[h];
            int k = pick(s, h, cycle, voqs);
            txv[h] = k >= 0 && urand() < valid_p;
            memset(data, 0, sizeof(data));
            if (txv[h]) {
                s.cur = k;
                const Pkt &p = s.q[k].front();
                for (int i = 0; i < W && s.off + i < p.length; i++)
                    data[i / 4] |= (uint32_t)pbyte(h, p.seq, s.off + i) << (8 * (i %% 4));
                set_tx(h, 1, data, s.off + W >= p.length, p.length, p.route);
            } else set_tx(h, 0, data, 0, 0, 0);
            rxr[h] = urand() < ready_p;
            set_rx_ready(h, rxr[h]);
        }
        top->eval();
        for (int c : caps) capture(c, cycle);
        for (int h = 0; h < H; h++) {
            Tx &s = tx[h];
            if (txv[h] && tx_ready(h)) {
                Pkt &p = s.q[s.cur].front();
                if (s.off == 0) fprintf(out, "S %%d %%ld %%u\n", h, cycle, p.seq);
                s.off += W;
                if (s.off >= p.length) { s.q[s.cur].pop_front(); s.off = 0; s.cur = -1; }
            }
            int last, length; uint64_t header, reply;
            if (rxr[h] && rx_beat(h, a, &last, &length, &header, &reply)) {
                Rx &r = rx[h];
                if (r.buf.empty()) { r.length = length; r.header = header; r.reply = reply; }
                int ok = length == r.length && header == r.header && reply == r.reply;
                for (int i = 0; i < W; i++) r.buf.push_back((uint8_t)(a[i / 4] >> (8 * (i %% 4))));
                if (last) {
                    int n = r.length, m = (int)r.buf.size();
                    uint32_t src = n >= 6 ? (r.buf[0] | (r.buf[1] << 8)) : 0xFFFF;
                    uint32_t seq = n >= 6 ? (r.buf[2] | (r.buf[3] << 8) | (r.buf[4] << 16) | ((uint32_t)r.buf[5] << 24)) : 0;
                    ok = ok && m >= n && m - n < W && src < (uint32_t)H;
                    for (int i = 0; ok && i < m; i++) ok = r.buf[i] == (i < n ? pbyte(src, seq, i) : 0);
                    fprintf(out, "R %%d %%ld %%u %%u %%d %%llx %%llx %%d\n", h, cycle, src, seq, n,
                            (unsigned long long)r.header, (unsigned long long)r.reply, ok);
                    delivered++;
                    if (ok && (seq & 0x80000000u)) {
                        uint32_t eseq = (tx[h].next_seq++ & 0x3FFFFFFFu) | 0x40000000u;
                        tx[h].q[voqs ? ECHO_Q : 0].push_back({cycle + 1, eseq, n, r.reply});
                        offered++;
                        fprintf(out, "E %%d %%u %%u %%u\n", h, eseq, src, seq);
                    }
                    r.buf.clear();
                } else if (!ok) r.length = -1;
            }
        }
        tick();
        if (done_at < 0 && delivered >= offered && cycle >= last_event) done_at = cycle;
        if (done_at >= 0 && cycle >= done_at + %(drain)d) break;
    }
%(prints)s
    fprintf(out, "T %%ld\n", cycle);
    fclose(out);
    for (int c : caps) { fclose(cap_l1[c]); fclose(cap_l2[c]); }
    delete top;
    return 0;
}
"""


def _cases(lines):
    return "\n".join(lines)


class NetModel:
    """The Verilated RIFLNetHarness of `topology` (keyword arguments: RIFLNetwork's; build=False: the model's
    digest only, `model.build()` builds; quick_build: sim.verilated's cheaper C++ build, for short runs)."""
    def __init__(self, topology, build=True, quick_build=False, **kw):
        self.topology = topology
        self.kw = kw
        dut = RIFLNetHarness(topology, **kw)
        net = dut.net
        self.frame_bits = kw.get("frame_bits", 256)
        W = kw.get("data_width", 256) // 8
        self.node = net.switches[0] if net.switches else None
        self.channel_names = net.channel_names
        ports = {}
        set_tx, tx_ready, paused, set_rx_ready, rx_beat, set_ctrl = [], [], [], [], [], []
        self.down_ports = [len(host.gate.paused) for host in net.hosts]
        assert max(self.down_ports) <= 64
        for h, host in enumerate(net.hosts):
            sk, sr = host.sink, host.source
            for name, sig, inp in (("tx_valid", sk.valid, 1), ("tx_ready", sk.ready, 0), ("tx_data", sk.data, 1),
                                   ("tx_last", sk.last, 1), ("tx_length", sk.length, 1), ("tx_route", sk.route, 1),
                                   ("rx_valid", sr.valid, 0), ("rx_ready", sr.ready, 1), ("rx_data", sr.data, 0),
                                   ("rx_last", sr.last, 0), ("rx_length", sr.length, 0), ("rx_header", sr.header, 0),
                                   ("rx_reply", sr.reply, 0)):
                ports[f"h{h}_{name}"] = (sig, bool(inp))
            p = f"top->h{h}_"
            set_tx.append(f"    case {h}: {p}tx_valid = valid; setw({p}tx_data, data); {p}tx_last = last; "
                          f"{p}tx_length = length; setw({p}tx_route, r); break;")
            tx_ready.append(f"    case {h}: return {p}tx_ready;")
            ports[f"h{h}_paused"] = (host.gate.paused, False)
            paused.append(f"    case {h}: return {p}paused;")
            set_rx_ready.append(f"    case {h}: {p}rx_ready = v; break;")
            rx_beat.append(f"    case {h}: if (!{p}rx_valid) return 0; getw({p}rx_data, data); *last = {p}rx_last; "
                           f"*length = {p}rx_length; getw({p}rx_header, a); getw({p}rx_reply, b); "
                           f"*header = a[0] | ((uint64_t)a[1] << 32); *reply = b[0] | ((uint64_t)b[1] << 32); return 1;")
        for c, ch in enumerate(net.channels):
            sigs = [ch.mode, ch.threshold, ch.burst, *ch.thresholds, ch.force, ch.down]
            assert len(sigs) == len(EVENT_FIELDS)
            fields = []
            for k, (fname, sig) in enumerate(zip(EVENT_FIELDS, sigs)):
                ports[f"c{c}_{fname}"] = (sig, True)
                fields.append(f"if (field == {k}) top->c{c}_{fname} = v;")
            set_ctrl.append(f"    case {c}: {' else '.join(fields)} break;")
        capture = []
        for c, cap in enumerate(dut.captures):
            for name, sig in cap.items():
                ports[f"cap{c}_{name}"] = (sig, False)
            p = f"top->cap{c}_"
            capture.append(f"    case {c}: getw({p}frame, w); capture_frame(c, cycle, w); if ({p}take) "
                           f"{{ getw({p}data, d); capture_beat(c, cycle, d, {p}nbytes, {p}last); }} break;")
        self.counter_names = list(dut.counter_sigs)
        for name, sig in dut.counter_sigs.items():
            ports[f"k_{name}"] = (sig, False)
        prints = "\n".join(f'    fprintf(out, "K {n} %u\\n", (unsigned)top->k_{n});' for n in self.counter_names)
        harness = HARNESS % dict(hosts=len(net.hosts), channels=len(net.channels), width_bytes=W,
                                 set_tx=_cases(set_tx), tx_ready=_cases(tx_ready), paused=_cases(paused), set_rx_ready=_cases(set_rx_ready),
                                 rx_beat=_cases(rx_beat), set_ctrl=_cases(set_ctrl), prints=prints, drain=DRAIN_CYCLES,
                                 frame_bits=self.frame_bits, capture=_cases(capture), dlt_l1=PCAP_DLT_L1,
                                 dlt_l2=PCAP_DLT_L2)
        self.model = Model(f"rifl_net_{topology.name}",
                           {"net.v": flat_ports(dut, ports, "net")}, "net", harness, build=build,
                           quick_build=quick_build)
        self.voq_cells = self.node.voq_cells if self.node else None

    def run(self, packets, events=(), seed=1, valid_p=1.0, ready_p=1.0, max_cycles=200_000, timeout=None,
            capture=(), capture_prefix=None, host_voqs=False):
        """Play `packets` (Packet, in offering order per host) and `events` through the network: a Result.
        host_voqs: each host keeps a queue per flow-control channel of its switch (per destination, as the
        sources of a switch benchmark do) and presents the oldest packet whose channel its RIFLFCGate does
        not hold paused (echoes have a queue of their own); otherwise one FIFO per host, in offering order.
        `capture`: channel numbers whose line (L1 frames, PCAP_DLT_L1) and whose receiver's Layer 1 packets
        (Layer 2 segments, PCAP_DLT_L2) are written to <capture_prefix>_c<c>_l1.pcap / _l2.pcap."""
        if capture and not capture_prefix:
            raise ValueError("capture needs a capture_prefix (a path without the _c<c>_l1.pcap suffix)")
        with tempfile.TemporaryDirectory(dir=self.model.dir) as tmp:
            stim, outp = os.path.join(tmp, "stim.txt"), os.path.join(tmp, "out.txt")
            with open(stim, "w") as f:
                for p in packets:
                    if p.length < MIN_LENGTH:
                        raise ValueError(f"packets of the network harness carry at least {MIN_LENGTH} bytes")
                    route = self.topology.route(p.src, p.dst)
                    f.write(f"P {p.src} {p.t} {p.length} {route:x} {int(p.echo)} "
                            f"{fc_gate_channel(route, self.down_ports[p.src])}\n")
                for t, chan, field, value in events:
                    f.write(f"C {t} {chan} {EVENT_FIELDS.index(field)} {int(value)}\n")
            caps = ",".join(str(int(c)) for c in capture) or "-"
            self.model.run([stim, outp, max_cycles, seed, valid_p, ready_p, capture_prefix or "-", caps,
                            int(host_voqs)],
                           timeout=timeout)
            sent, delivered, echoes, counters, cycles = {}, [], [], {}, 0
            with open(outp) as f:
                for line in f:
                    k, *v = line.split()
                    if k == "S":
                        sent[(int(v[0]), int(v[2]))] = int(v[1])
                    elif k == "R":
                        delivered.append(Delivery(int(v[0]), int(v[1]), int(v[2]), int(v[3]), int(v[4]),
                                                  int(v[5], 16), int(v[6], 16), bool(int(v[7]))))
                    elif k == "E":
                        echoes.append(tuple(int(x) for x in v))
                    elif k == "K":
                        counters[v[0]] = int(v[1])
                    elif k == "T":
                        cycles = int(v[0])
        return Result(sent, delivered, echoes, counters, cycles)


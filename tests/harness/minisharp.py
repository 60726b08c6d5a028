"""Shared helpers of the MiniSharp tests: the Verilated core of the end-to-end tests (built once per
configuration), seeded FP32 values and the check of COL_RES frames against the reference model."""
import random

from cores.minisharp import common as ms
from sim.verilated.minisharp import SMALL_CORE, VerilatedMiniSharp
from software.minisharp import packets as P
from software.minisharp.reference import exact_sum_fp32

HOST, SW = ms.HOST_MAC, ms.DEFAULT_SRC_MAC      # frames from the host to the switch
CE = SMALL_CORE["chunk_elements"]     # small chunks keep frames short; the ABI default is in the benchmark
MAX_RANKS = SMALL_CORE["max_ranks"]
NAN_BITS = 0x7FC00000


def port_macs(n):
    return [(0x02AA00000100 + i, 0x02BB00000200 + i) for i in range(n)]


_models = {}


def verilated_core(**kw):
    """The Verilated MiniSharpCore of these tests (SMALL_CORE unless `kw` says otherwise), built once per
    configuration."""
    params = dict(SMALL_CORE)
    params.update(kw)
    key = tuple(sorted(params.items()))
    if key not in _models:
        _models[key] = VerilatedMiniSharp(**params)
    return _models[key]


def rand_value(rng, special=0.0):
    r = rng.random()
    if r < special:
        return rng.choice([0x7F800000, 0xFF800000, 0x7FC00001, 0x80000000])
    if r < 0.15:
        return rng.getrandbits(23) | (rng.getrandbits(1) << 31)
    if r < 0.6:
        return (rng.getrandbits(1) << 31) | (rng.randrange(110, 150) << 23) | rng.getrandbits(23)
    return (rng.getrandbits(1) << 31) | (rng.randrange(0, 255) << 23) | rng.getrandbits(23)


def check_results(run, port, coll, element_count, vectors, n_ports):
    """Every COL_RES frame on `port` for `coll`: header and exact values; returns chunk indices seen."""
    exp = [exact_sum_fp32(col) for col in zip(*vectors)]
    seen = []
    for f in run.outputs[port]:
        p = P.parse(f)
        if p.get("opcode") != ms.MS_OP_COL_RES or p["collective_id"] != coll:
            continue
        p = P.parse(f, element_count, CE)
        dst, src = port_macs(n_ports)[port]
        assert (p["dst_mac"], p["src_mac"], p["ethertype"]) == (dst, src, ms.ETHERTYPE)
        assert (p["major"], p["minor"]) == (ms.VERSION_MAJOR, ms.VERSION_MINOR)
        assert p["reserved0"] == 0 and p["reserved1"] == 0
        c = p["chunk_index"]
        n = ms.chunk_length(element_count, c, CE)
        assert len(f) == ms.MS_HEADER_BYTES + 4 * n          # the core does not pad (the MAC/PHY does)
        assert p["values"] == exp[c * CE:c * CE + n], (coll, c)
        seen.append(c)
    return seen




class VTree:
    """A tree of Verilated MiniSharp switches (SMALL_CORE builds), run level by level: every switch is one
    run of its model, fed the frames its neighbours sent it in earlier runs (store and forward between the
    levels: each run starts from reset, so a switch is rerun with all its inputs when frames come back down).

    switches: {name: mac}; links: {(name, port): (name, port)} both ways; hosts: {(name, port): host MAC}.
    Every switch filters on its MAC (mac_filter); a switch port towards another switch sends COL_RES to the
    group MAC, a host port to its host's MAC.
    """
    def __init__(self, switches, links, hosts, vm=None):
        self.vm = vm or verilated_core()
        self.switches, self.hosts = switches, hosts
        self.links = dict(links)
        self.links.update({b: a for a, b in links.items()})

    def macs(self, name):
        out = []
        for p in range(self.vm.num_ports):
            dst = ms.GROUP_MAC if (name, p) in self.links else self.hosts.get((name, p), ms.BROADCAST_MAC)
            out.append((dst, self.switches[name] + 0x10 + p))
        return out

    def run(self, inputs, order, seed=1):
        """inputs[name][port]: frames (start, bytes) from hosts and the AM. `order`: switch names, leaves
        first then up to the root, then down again (a name may appear twice). Returns (frames each host
        port received, {name: counters of its last run})."""
        queued = {name: [list(inputs.get(name, {}).get(p, [])) for p in range(self.vm.num_ports)]
                  for name in self.switches}
        got, counters = {}, {}
        rng = random.Random(seed)
        for k, name in enumerate(order):
            run = self.vm.run(queued[name], macs=self.macs(name), mac_filter=1, mac=self.switches[name],
                              ready_p=0.7, seed=rng.randrange(1, 2**31))
            counters[name] = run.counters
            late = max([max(x) for x in run.in_last if x] + [0]) + 1000
            for p, frames in enumerate(run.outputs):
                if (name, p) in self.links:
                    peer, pp = self.links[(name, p)]
                    have = {bytes(f) for _, f in queued[peer][pp]}
                    queued[peer][pp] += [(late + 50 * i, f) for i, f in enumerate(frames) if f not in have]
                elif (name, p) in self.hosts:
                    got[(name, p)] = frames
        return got, counters

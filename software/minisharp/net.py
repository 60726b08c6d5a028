"""Host tools of a MiniSharp network (run inside sim.cluster's namespace, or on a real network of boards):
switch configuration over Etherbone, the Aggregation Manager, and one rank process.

    python -m software.minisharp.net configure --topology spine-leaf
    python -m software.minisharp.net setup --topology spine-leaf --ranks 4 --elements N --collective C
    python -m software.minisharp.net rank --topology spine-leaf --ranks 4 --host h2 --collective C \
        --vector h2.npy --out h2.result.npy
    python -m software.minisharp.net teardown|counters --topology spine-leaf --collective C
    python -m software.minisharp.net rogue --topology spine-leaf --host h1 --collective C   # must be refused

Switch addresses come from $INNET_CLUSTER (JSON: {switch: {"ip", "csr_csv"}}, set by sim.cluster). A rank
sends its COL_DATA chunks to its switch, at most `window` chunks past the oldest chunk whose result it has
not seen, and resends a chunk after `retry` seconds without its result (its own timer: nothing is
coordinated between ranks); it ends when it holds every result chunk, and writes them to --out.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from cores.minisharp import common as ms
from soc.common import CORE_NAMES
from software.argtypes import int_in, positive_float, positive_int
from software.client import InnetClient, TargetUnreachable
from software.minisharp import packets as P
from software.minisharp.host import RawSocketTransport
from software.minisharp.topofile import resolve, topology_arg
from software.minisharp.topology import tap_name

PREFIX = CORE_NAMES["minisharp"]
SLOT_TIMEOUT_TICKS = 8          # ticks of 2^16 cycles: a few seconds of simulation, beyond any rank's retry


def switches():
    env = os.environ.get("INNET_CLUSTER")
    if not env:
        raise SystemExit("error: INNET_CLUSTER is not set: run inside sim.cluster (python -m sim.allreduce)")
    return json.loads(env)


def client(switch):
    sw = switches()[switch]
    return InnetClient(sw["ip"], csr_csv=sw["csr_csv"], timeout=5.0)


def configure(topo):
    """Every switch's CSRs from the topology (one Etherbone client at a time: they share the UDP port)."""
    for sw in topo.switches:
        cfg = topo.switch_config(sw)
        with client(sw) as bus:
            reg = lambda name: bus.regs.d[f"{PREFIX}_{name}"]
            for p in range(topo.switches[sw]):
                reg(f"port{p}_dst_mac").write(cfg["dst_macs"][p])
                reg(f"port{p}_src_mac").write(cfg["src_macs"][p])
            reg("fwd_map").write(sum(f << (8 * p) for p, f in enumerate(cfg["fwd_map"])))
            reg("mac").write(cfg["mac"])
            reg("admin_ports").write(cfg["admin_ports"])
            reg("policy").write(ms.MSP_MINISHARP_ONLY)
            reg("timeouts").write(SLOT_TIMEOUT_TICKS)
            reg("mac_filter").write(1)
            if reg("mac").read() != cfg["mac"]:
                raise RuntimeError(f"{sw}: the configuration did not take")


def counters(topo):
    out = {}
    for sw in topo.switches:
        with client(sw) as bus:
            out[sw] = {name: bus.regs.d[f"{PREFIX}_{name}"].read() for name, _ in ms.counters(topo.switches[sw])}
    return out


def am_transport(topo):
    return RawSocketTransport(tap_name(*topo.hosts[topo.am]))


def setup(topo, collective_id, elements, ranks, exact=True):
    tr = am_transport(topo)
    for _, frame in topo.setups(collective_id, elements, ranks, exact=exact):
        tr.send(frame)
    tr.close()


def teardown(topo, collective_id, ranks):
    tr = am_transport(topo)
    for sw in topo.active(ranks):
        tr.send(P.teardown_frame(topo.switch_mac(sw), topo.host_mac(topo.am), collective_id))
    tr.close()


def rogue(topo, host, collective_id, elements, ranks):
    """`host` (not the AM) tears the collective down and installs a different one at its switch: under the
    admin mask (configure) both are dropped as not_admin and change nothing."""
    sw, port = topo.hosts[host]
    tr = RawSocketTransport(tap_name(sw, port))
    mac, src = topo.switch_mac(sw), topo.host_mac(host)
    tr.send(P.teardown_frame(mac, src, collective_id))
    tr.send(P.setup_frame(mac, src, collective_id, P.setup_record_v02(elements, 1, port, port)))
    tr.close()


def rank(topo, host, collective_id, vector, ranks, window=8, retry=1.0, timeout=1800.0):
    """Contribute `vector` (uint32 FP32 bits) as `host`; returns (result vector, resends)."""
    sw, port = topo.hosts[host]
    ce = ms.v02_chunk_elements(topo.chunk_elements)
    n = len(vector)
    nch = ms.num_chunks(n, ce)
    me = topo.local_rank(host, ranks)
    dst, src = topo.switch_mac(sw), topo.host_mac(host)
    vector = [int(v) for v in vector]
    tr = RawSocketTransport(tap_name(sw, port))
    result, sent, resends, nxt, base = {}, {}, 0, 0, 0
    t0 = time.monotonic()

    def send(c):
        tr.send(P.data_frame(dst, src, collective_id, me, c, vector[c * ce:(c + 1) * ce], minor=ms.VERSION_MINOR_V02))
        sent[c] = time.monotonic()
    try:
        while len(result) < nch:
            if time.monotonic() - t0 > timeout:
                raise TimeoutError(f"{host}: {len(result)}/{nch} result chunks after {timeout} s")
            while base in result:
                base += 1
            while nxt < nch and nxt < base + window:
                send(nxt)
                nxt += 1
            frame = tr.recv(0.05)
            while frame is not None:
                p = P.parse(frame)
                if p.get("opcode") == ms.MS_OP_COL_RES and p.get("collective_id") == collective_id \
                        and p["chunk_index"] < nch and p["chunk_index"] not in result:
                    result[p["chunk_index"]] = P.parse(frame, n, ce)["values"]
                frame = tr.recv(0)
            now = time.monotonic()
            for c in range(base, nxt):
                if c not in result and now - sent[c] > retry:
                    send(c)
                    resends += 1
    finally:
        tr.close()
    return np.array([v for c in range(nch) for v in result[c]], dtype=np.uint32), resends


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["configure", "setup", "rank", "teardown", "counters", "rogue"])
    ap.add_argument("--topology", default="spine-leaf", type=topology_arg,
                    help="a built-in topology or a topology file (software.minisharp.topofile)")
    ap.add_argument("--ranks", type=positive_int, default=4, help="ranks (at most the topology's hosts)")
    ap.add_argument("--elements", type=int_in(1, ms.MS_V02_MAX_ELEMENTS), help="FP32 elements (setup, rogue)")
    ap.add_argument("--collective", type=int_in(0, 2**32 - 1), default=1)
    ap.add_argument("--fp32-partials", action="store_true", help="FP32 partials (rounded at each level)")
    ap.add_argument("--host", help="the host of a rank process (rank, rogue)")
    ap.add_argument("--vector", help="the rank's vector (.npy of uint32 FP32 bits)")
    ap.add_argument("--out", help="where the rank writes the result (.npy)")
    ap.add_argument("--window", type=positive_int, default=8)
    ap.add_argument("--retry", type=positive_float, default=1.0)
    ap.add_argument("--timeout", type=positive_float, default=1800.0)
    a = ap.parse_args(argv)
    topo = resolve(a.topology)
    if a.ranks > len(topo.hosts):
        ap.error(f"argument --ranks: {a.topology} has {len(topo.hosts)} hosts, {a.ranks} ranks asked for")
    needs = {"setup": ["elements"], "rogue": ["host", "elements"], "rank": ["host", "vector", "out"]}
    missing = [f"--{k}" for k in needs.get(a.command, []) if getattr(a, k) is None]
    if missing:
        ap.error(f"{a.command} needs {', '.join(missing)}")
    if a.host is not None and a.host not in topo.hosts:
        ap.error(f"argument --host: {a.host!r} is not a host of {a.topology} ({', '.join(topo.hosts)})")
    try:
        return run(topo, a)
    except (TargetUnreachable, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


def run(topo, a):
    """One command of main's parsed arguments `a` on `topo`."""
    if a.command == "configure":
        configure(topo)
    elif a.command == "setup":
        setup(topo, a.collective, a.elements, a.ranks, exact=not a.fp32_partials)
    elif a.command == "teardown":
        teardown(topo, a.collective, a.ranks)
    elif a.command == "rogue":
        rogue(topo, a.host, a.collective, a.elements, a.ranks)
    elif a.command == "counters":
        print(json.dumps(counters(topo)))
    else:
        t0 = time.monotonic()
        res, resends = rank(topo, a.host, a.collective, np.load(a.vector), a.ranks, a.window, a.retry, a.timeout)
        np.save(a.out, res)
        print(json.dumps({"host": a.host, "seconds": time.monotonic() - t0, "resends": resends}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

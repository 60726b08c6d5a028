"""MiniSharp network topologies: a declarative description, and what follows from it for every switch.

    topo = TOPOLOGIES["spine-leaf"]                # or Topology(switches=..., links=..., hosts=..., root=...)
    topo.tree()                                     # {switch: (parent, uplink port, port at the parent)}
    topo.setups(coll, n, ranks, exact=True)         # [(switch, COL_SETUP frame)] from the AM, root last
    topo.switch_config(name, ranks)                 # the CSR values of one switch

A topology is switches (name -> data ports), links between switch ports, hosts on switch ports and the
root switch; host `am` is the Aggregation Manager, the first `ranks` hosts (in the order given) are the
ranks. Addresses (switch and host MACs, management IPs) are derived from the order of the names. Trees
only: every switch but the root has exactly one link towards the root (its uplink).
"""
from dataclasses import dataclass, field

from cores.minisharp import common as ms
from software.minisharp import packets as P

MGMT_NET = "192.168.1"
MGMT_HOST_IP = f"{MGMT_NET}.100"        # the host tools' address on the management bridge


def tap_name(switch, port):
    """The network interface of data port `port` of switch `switch` in a simulated network (sim.cluster)."""
    return f"{switch}-p{port}"


def mgmt_tap(switch):
    """The management port's network interface of switch `switch` in a simulated network."""
    return f"{switch}-m"


@dataclass
class Topology:
    switches: dict                       # name -> number of data ports
    links: list                          # [((switch, port), (switch, port))]
    hosts: dict                          # host name -> (switch, port)
    root: str
    am: str = "h0"
    chunk_elements: int = ms.MS_V02_CHUNK_ELEMENTS   # the switches' build (MiniSharpSoCBlock chunk_elements)
    n_slots: int = 16
    description: str = field(default="")
    name: str = ""
    timing: dict = field(default_factory=dict)     # (switch, port) -> {latency_ns, rate_gbps} of what is on it

    def __post_init__(self):
        if self.root not in self.switches:
            raise ValueError(f"root {self.root!r} is not a switch")
        used = {}
        for (a, pa), (b, pb) in self.links:
            for sw, p in ((a, pa), (b, pb)):
                if sw not in self.switches or not 0 <= p < self.switches[sw]:
                    raise ValueError(f"link end {sw}:{p} is not a port of a switch")
                if (sw, p) in used:
                    raise ValueError(f"port {sw}:{p} used twice")
                used[(sw, p)] = True
        for h, (sw, p) in self.hosts.items():
            if sw not in self.switches or not 0 <= p < self.switches[sw] or (sw, p) in used:
                raise ValueError(f"host {h} on {sw}:{p}: not a free port of a switch")
            used[(sw, p)] = True
        if self.am not in self.hosts:
            raise ValueError(f"the AM {self.am!r} is not a host")
        self.tree()

    # Addresses ------------------------------------------------------------------------------------
    def index(self, switch):
        return list(self.switches).index(switch)

    def switch_mac(self, switch):
        return 0x024D53000000 | (self.index(switch) + 1) << 8

    def port_src_mac(self, switch, port):
        return self.switch_mac(switch) | port

    def host_mac(self, host):
        return 0x020000000000 | (list(self.hosts).index(host) + 1) << 8 | 0x01

    def mgmt_ip(self, switch):
        return f"{MGMT_NET}.{50 + self.index(switch)}"

    def mgmt_mac(self, switch):
        return 0x10E2D5000000 | self.index(switch) + 1

    # Structure ------------------------------------------------------------------------------------
    def peer(self, switch, port):
        for a, b in self.links:
            if a == (switch, port):
                return b
            if b == (switch, port):
                return a
        return None

    def tree(self):
        """{switch: (parent, uplink port, the parent's port)} for every switch but the root (breadth-first
        from the root); raises ValueError when the links are not a tree spanning every switch."""
        parents, todo = {}, [self.root]
        seen = {self.root}
        while todo:
            sw = todo.pop(0)
            for p in range(self.switches[sw]):
                peer = self.peer(sw, p)
                if peer is None:
                    continue
                child, cp = peer
                if child in seen:
                    if parents.get(sw, (None,))[0] != child:
                        raise ValueError(f"the links have a cycle through {sw} and {child}")
                    continue
                parents[child] = (sw, cp, p)
                seen.add(child)
                todo.append(child)
        if seen != set(self.switches):
            raise ValueError(f"switches not connected to the root: {sorted(set(self.switches) - seen)}")
        return parents

    def children(self, switch):
        return [c for c, (p, _, _) in self.tree().items() if p == switch]

    def ranks(self, n):
        hosts = list(self.hosts)
        if not 1 <= n <= len(hosts):
            raise ValueError(f"this topology has {len(hosts)} hosts, {n} ranks asked for")
        return hosts[:n]

    def under(self, switch):
        """Hosts below (or on) a switch."""
        out = [h for h, (sw, _) in self.hosts.items() if sw == switch]
        for c in self.children(switch):
            out += self.under(c)
        return out

    def active(self, ranks):
        """The switches of a collective: those with a rank below them (the root always)."""
        rk = set(self.ranks(ranks))
        return [sw for sw in self.switches if sw == self.root or rk & set(self.under(sw))]

    def contributors(self, switch, ranks):
        """The contributors of `switch` in rank order: ("host", name) or ("switch", name); their index is the
        rank each one has at this switch."""
        rk = self.ranks(ranks)
        out = [("host", h) for h in rk if self.hosts[h][0] == switch]
        out += [("switch", c) for c in self.children(switch) if c in self.active(ranks)]
        return out

    def local_rank(self, host, ranks):
        return self.contributors(self.hosts[host][0], ranks).index(("host", host))

    def host_ports(self, switch):
        return sorted(p for sw, p in self.hosts.values() if sw == switch)

    def port_towards(self, switch, target):
        """The port of `switch` on the path to switch `target`."""
        if switch == target:
            return None
        tree = self.tree()
        for c in self.children(switch):
            if target == c or target in self._below(c):
                return tree[c][2]
        return tree[switch][1]

    def _below(self, switch):
        out = set(self.children(switch))
        for c in list(out):
            out |= self._below(c)
        return out

    # What the AM installs -------------------------------------------------------------------------
    def setups(self, collective_id, element_count, ranks, exact=True, allreduce=True):
        """[(switch, COL_SETUP frame from the AM)] for every active switch, root last (a child is ready when
        its parent's first result can arrive). Egress: the host ports with ranks (ALLREDUCE: every rank gets
        the result; REDUCE: only the AM's switch delivers it, to the AM) and, at the root and every inner
        switch, the ports to its active children."""
        fmt = ms.MS_FMT_EXACT if exact else ms.MS_FMT_FP32
        tree, out = self.tree(), []
        for sw in self.active(ranks):
            contrib = self.contributors(sw, ranks)
            ports = [self.hosts[n][1] for k, n in contrib if k == "host"] + \
                    [tree[n][2] for k, n in contrib if k == "switch"]
            first, last = min(ports), max(ports)
            if sw == self.root:
                rec = dict(role=ms.MS_ROLE_ROOT, input_fmt=fmt if self.children(sw) else ms.MS_FMT_FP32)
            else:
                parent, up, _ = tree[sw]
                rec = dict(role=ms.MS_ROLE_CHILD, uplink_port=up, output_fmt=fmt,
                           parent_rank=self.contributors(parent, ranks).index(("switch", sw)),
                           parent_mac=self.switch_mac(parent),
                           input_fmt=fmt if any(k == "switch" for k, _ in contrib) else ms.MS_FMT_FP32)
            record = P.setup_record_v02(element_count, len(contrib), first, last,
                                        collective=ms.MS_COL_ALLREDUCE if allreduce else ms.MS_COL_REDUCE, **rec)
            out.append((sw, P.setup_frame(self.switch_mac(sw), self.host_mac(self.am), collective_id, record)))
        out.sort(key=lambda x: x[0] == self.root)
        return out

    def switch_config(self, switch):
        """CSR values of one switch: v0.2 addressing on its MAC; setups only from the AM's direction; COL_RES
        to the group MAC on switch links and to the host's MAC on host ports; the static map for frames
        addressed to other switches: up towards the root, from above to the AM (at the AM's switch) or to
        the first host port, at the root from one child port to the next; non-MiniSharp frames dropped."""
        am_sw, am_port = self.hosts[self.am]
        admin = am_port if switch == am_sw else self.port_towards(switch, am_sw)
        n = self.switches[switch]
        tree = self.tree()
        dst = []
        for p in range(n):
            host = next((h for h, sp in self.hosts.items() if sp == (switch, p)), None)
            dst.append(self.host_mac(host) if host else ms.GROUP_MAC)
        if switch in tree:
            up = tree[switch][1]
            down = am_port if switch == am_sw else (self.host_ports(switch) or [p for p in range(n) if p != up])[0]
            fwd = [down if p == up else up for p in range(n)]
        elif switch == am_sw:
            fwd = [(p + 1) % n if p == am_port else am_port for p in range(n)]
        else:     # the root: from one used port to the next (unused ports get nothing)
            used = [p for p in range(n) if self.peer(switch, p) or (switch, p) in self.hosts.values()]
            fwd = [used[(used.index(p) + 1) % len(used)] if p in used else used[0] for p in range(n)]
        return dict(mac=self.switch_mac(switch), admin_ports=1 << admin, dst_macs=dst,
                    src_macs=[self.port_src_mac(switch, p) for p in range(n)], fwd_map=fwd)


TOPOLOGIES = {
    "spine-leaf": Topology(
        switches={"spine": 3, "leaf0": 3, "leaf1": 3},     # one build for all: the spine's port 2 is unused
        links=[(("leaf0", 2), ("spine", 0)), (("leaf1", 2), ("spine", 1))],
        hosts={"h0": ("leaf0", 0), "h1": ("leaf0", 1), "h2": ("leaf1", 0), "h3": ("leaf1", 1)},
        root="spine", description="2 leaves (2 hosts each, port 2 up) and a spine (ports 0, 1)", name="spine-leaf"),
    "one-switch": Topology(
        switches={"sw": 4}, links=[],
        hosts={f"h{i}": ("sw", i) for i in range(4)},
        root="sw", description="1 switch with 4 hosts", name="one-switch"),
}

"""RIFL networks: hosts and switches joined by links, and the Layer 2 routes between hosts.

A topology lists `switches` (port counts), `hosts` (a count) and `links`, each a pair of ends: ("h", host)
or ("s", switch, port). Every host has one port. `route(src, dst)` gives the Layer 2 header a packet from
host src needs to reach host dst: one Dst Port value a switch crossed, the relative value (out - in) mod n
of cores.rifl.common.dst_port. The builders below give the issue's topologies: one switch of n ports
(`one_switch`), a chain of two switches (`chain`) and leaf switches under one spine (`leaf_spine`).
"""
from collections import deque
from dataclasses import dataclass, field

from cores.rifl.common import MAX_HOPS, check_switch_ports, l2_header_pack, l2_header_unpack


@dataclass
class Topology:
    name: str
    switches: list
    hosts: int
    links: list = field(default_factory=list)

    def __post_init__(self):
        for n in self.switches:
            check_switch_ports(n)
        ends = [end for link in self.links for end in link]
        if len(set(ends)) != len(ends):
            raise ValueError(f"{self.name}: a port is on two links")
        for end in ends:
            if end[0] == "h" and not 0 <= end[1] < self.hosts:
                raise ValueError(f"{self.name}: no host {end[1]}")
            if end[0] == "s" and not (0 <= end[1] < len(self.switches) and 0 <= end[2] < self.switches[end[1]]):
                raise ValueError(f"{self.name}: no port {end[2]} on switch {end[1]}")
        missing = [h for h in range(self.hosts) if ("h", h) not in ends]
        if missing:
            raise ValueError(f"{self.name}: hosts {missing} are not linked")

    def peer(self, end):
        for a, b in self.links:
            if a == end:
                return b
            if b == end:
                return a
        return None

    def path(self, src, dst):
        """The (switch, in_port, out_port) hops from host src to host dst (shortest, breadth first)."""
        if src == dst:
            raise ValueError("a host does not route to itself")
        start = self.peer(("h", src))
        prev, todo = {start: None}, deque([start])
        while todo:
            end = todo.popleft()
            if end == ("h", dst):
                break
            if end[0] != "s":
                continue
            s, p = end[1], end[2]
            for q in range(self.switches[s]):
                nxt = self.peer(("s", s, q))
                if q != p and nxt is not None and nxt not in prev:
                    prev[nxt] = (s, p, q)
                    todo.append(nxt)
        if ("h", dst) not in prev:
            raise ValueError(f"{self.name}: no path from host {src} to host {dst}")
        hops, end = [], ("h", dst)
        while prev[end] is not None:
            s, p, q = prev[end]
            hops.append((s, p, q))
            end = ("s", s, p)
        return hops[::-1]

    def route(self, src, dst):
        """The Layer 2 header (an int, cores.rifl.common.l2_header_pack) from host src to host dst."""
        hops = self.path(src, dst)
        if len(hops) > MAX_HOPS:
            raise ValueError(f"{self.name}: {len(hops)} hops from {src} to {dst}, at most {MAX_HOPS}")
        ports = [(q - p) % self.switches[s] for s, p, q in hops]
        return l2_header_pack(len(ports), len(ports), ports)

    def follow(self, src, header):
        """The host a header sent by host src reaches (the reference of the switches' forwarding), or None
        if a switch would drop it."""
        total, remain, ports = l2_header_unpack(header)
        end = self.peer(("h", src))
        for j in ports[:total]:
            if end is None or end[0] != "s":
                return None
            s, p = end[1], end[2]
            n = self.switches[s]
            if j % n == 0:
                return None
            end = self.peer(("s", s, (p + j) % n))
        return end[1] if end is not None and end[0] == "h" else None

    def down_ports(self):
        """The neighbour port count every switch and host sees (the networks here use one switch size)."""
        sizes = set(self.switches)
        if len(sizes) != 1:
            raise ValueError(f"{self.name}: switches of different sizes {sorted(sizes)} (one size supported)")
        return sizes.pop()


def one_switch(n):
    """n hosts on one n-port switch, host i on port i."""
    return Topology(f"one-switch-{n}", [n], n, [(("h", i), ("s", 0, i)) for i in range(n)])


def chain(n=4):
    """Two n-port switches joined by their last ports, n - 1 hosts on each (hosts 0..n-2 on switch 0)."""
    links = [(("h", i), ("s", 0, i)) for i in range(n - 1)]
    links += [(("h", n - 1 + i), ("s", 1, i)) for i in range(n - 1)]
    links.append((("s", 0, n - 1), ("s", 1, n - 1)))
    return Topology(f"chain-{n}", [n, n], 2 * (n - 1), links)


def leaf_spine(leaves=4, n=4):
    """`leaves` leaf switches of n ports (n - 1 hosts each, the last port up) under one n-port spine."""
    if leaves > n:
        raise ValueError(f"a {n}-port spine takes at most {n} leaves")
    links, h = [], 0
    for leaf in range(leaves):
        for p in range(n - 1):
            links.append((("h", h), ("s", 1 + leaf, p)))
            h += 1
        links.append((("s", 1 + leaf, n - 1), ("s", 0, leaf)))
    return Topology(f"leaf-spine-{leaves}x{n}", [n] * (1 + leaves), h, links)


TOPOLOGIES = {"one-switch": one_switch, "chain": chain, "leaf-spine": leaf_spine}

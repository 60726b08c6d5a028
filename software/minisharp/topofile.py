"""MiniSharp network topology files (YAML, or JSON, which is YAML too) and their generators.

    topo = load("spine_leaf_4x4.yaml")         # a software.minisharp.topology.Topology (with link timing)
    topo = resolve("spine-leaf")                # a built-in name (topology.TOPOLOGIES), a generator or a path
    text = dump(spine_leaf(4, 4))               # the file of a generated topology

    python -m software.minisharp.topofile spine-leaf --leaves 4 --hosts-per-leaf 4 [-o FILE]
    python -m software.minisharp.topofile tree3 --spines 2 --leaves-per-spine 2 --hosts-per-leaf 2
    python -m software.minisharp.topofile check FILE

The format (docs/minisharp.md, "Topology files"):

    name: spine-leaf-2x2                        # optional
    description: 2 leaves of 2 hosts            # optional
    root: spine                                 # the switch at the top of the tree
    am: h0                                      # the Aggregation Manager's host (default h0)
    defaults: {latency_ns: 500, rate_gbps: 10}  # optional: every link and host attachment without its own
    switches:                                   # name: number of data ports (2..64)
      spine: 2
      leaf0: 3
    links:                                      # switch port to switch port, optional timing
      - [leaf0:2, spine:0]
      - {ends: [leaf1:2, spine:1], latency_ns: 1000, rate_gbps: 25}
    hosts:                                      # host: switch port, or {port: ..., latency_ns, rate_gbps}
      h0: leaf0:0

Ranks are the first hosts in the order written. Every error names the file, the line and the field, in one
line (TopologyFileError). Link timing is carried for the timed network mode; the free-running mode (Linux
bridges, sim.cluster) ignores it.
"""
import argparse
import re
import sys

import yaml

from software.minisharp.topology import TOPOLOGIES, Topology

MAX_PORTS = 64                 # data ports of a switch in a file (a simulated SoC has a TAP per port)
NAME = re.compile(r"[a-z][a-z0-9_]{0,10}\Z")      # an interface name <switch>-p<port> fits Linux's 15 bytes
DEFAULT_TIMING = {"latency_ns": 500.0, "rate_gbps": 10.0}
TIMING_KEYS = tuple(DEFAULT_TIMING)


class TopologyFileError(ValueError):
    """A topology file that cannot be used: the message names the file, the line and the field."""


class _Reader:
    def __init__(self, source, text):
        self.source = source
        try:
            self.root = yaml.compose(text)
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            line = f":{mark.line + 1}" if mark else ""
            raise TopologyFileError(f"{source}{line}: not YAML/JSON: {getattr(e, 'problem', e)}") from None

    def fail(self, node, field, message):
        raise TopologyFileError(f"{self.source}:{node.start_mark.line + 1}: {field}: {message}")

    def mapping(self, node, field):
        if not isinstance(node, yaml.MappingNode):
            self.fail(node, field, "must be a mapping (key: value)")
        out = {}
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                self.fail(k, field, "keys must be names")
            if k.value in out:
                self.fail(k, f"{field}.{k.value}", "given twice")
            out[k.value] = (k, v)
        return out

    def fields(self, node, field, allowed):
        """The mapping at `node`, refusing keys outside `allowed`."""
        out = self.mapping(node, field)
        for key, (k, _) in out.items():
            if key not in allowed:
                self.fail(k, f"{field}.{key}" if field != "topology" else key,
                          f"unknown field (fields: {', '.join(sorted(allowed))})")
        return out

    def timed(self, node, field, key, defaults):
        """(the node of `key`, timing) of an entry that is either that value or {key: ..., latency_ns, rate_gbps}."""
        if not isinstance(node, yaml.MappingNode):
            return node, dict(defaults)
        fields = self.fields(node, field, (key,) + TIMING_KEYS)
        if key not in fields:
            self.fail(node, f"{field}.{key}", "missing")
        return fields[key][1], self.timing(fields, field, defaults)

    def scalar(self, node, field):
        if not isinstance(node, yaml.ScalarNode):
            self.fail(node, field, "must be a single value")
        return node.value

    def number(self, node, field, lo, hi, integer=False):
        text = self.scalar(node, field)
        try:
            value = int(text, 0) if integer else float(text)
        except ValueError:
            self.fail(node, field, f"must be {'an integer' if integer else 'a number'}, got {text!r}")
        if not lo <= value <= hi:
            self.fail(node, field, f"must be in {lo}..{hi}, got {text}")
        return value

    def name(self, node, field):
        text = self.scalar(node, field)
        if not NAME.match(text):
            self.fail(node, field, f"{text!r} is not a name (a-z, then a-z 0-9 _, at most 11 characters)")
        return text

    def timing(self, fields, field, defaults):
        out = dict(defaults)
        for key in TIMING_KEYS:
            if key in fields:
                out[key] = self.number(fields[key][1], f"{field}.{key}", 1e-3, 1e9)
        return out


def _port(reader, node, field, switches):
    text = reader.scalar(node, field)
    m = re.fullmatch(r"([a-z][a-z0-9_]*):(\d+)", text)
    if not m:
        reader.fail(node, field, f"must be SWITCH:PORT, got {text!r}")
    sw, port = m.group(1), int(m.group(2))
    if sw not in switches:
        reader.fail(node, field, f"{sw!r} is not a switch ({', '.join(switches)})")
    if port >= switches[sw]:
        reader.fail(node, field, f"{sw} has ports 0..{switches[sw] - 1}, not {port}")
    return sw, port


def parse(text, source="<topology>"):
    """The Topology of a topology file's text (source: its name in error messages)."""
    r = _Reader(source, text)
    if r.root is None:
        raise TopologyFileError(f"{source}:1: the file is empty")
    top = r.fields(r.root, "topology", ("name", "description", "root", "am", "defaults", "switches", "links", "hosts"))
    for key in ("root", "switches", "hosts"):
        if key not in top:
            r.fail(r.root, key, "missing")
    defaults = DEFAULT_TIMING
    if "defaults" in top:
        defaults = r.timing(r.fields(top["defaults"][1], "defaults", TIMING_KEYS), "defaults", DEFAULT_TIMING)

    switches = {}
    for sw, (k, v) in r.mapping(top["switches"][1], "switches").items():
        switches[r.name(k, "switches")] = r.number(v, f"switches.{sw}", 2, MAX_PORTS, integer=True)
    if not switches:
        r.fail(top["switches"][1], "switches", "at least one switch")
    used, timing = {}, {}

    def take(end, node, field):
        if end in used:
            r.fail(node, field, f"port {end[0]}:{end[1]} is already used by {used[end]}")
        used[end] = field

    links = []
    link_node = top.get("links", (None, yaml.SequenceNode("tag:yaml.org,2002:seq", [])))[1]
    if not isinstance(link_node, yaml.SequenceNode):
        r.fail(link_node, "links", "must be a list")
    for i, node in enumerate(link_node.value):
        field = f"links[{i}]"
        ends_node, t = r.timed(node, field, "ends", defaults)
        if not isinstance(ends_node, yaml.SequenceNode) or len(ends_node.value) != 2:
            r.fail(ends_node, field, "a link is two ends: [SWITCH:PORT, SWITCH:PORT]")
        ends = [_port(r, e, field, switches) for e in ends_node.value]
        if ends[0][0] == ends[1][0]:
            r.fail(ends_node, field, f"both ends on switch {ends[0][0]}")
        for e in ends:
            take(e, ends_node, field)
            timing[e] = t
        links.append(tuple(ends))

    hosts = {}
    for h, (k, v) in r.mapping(top["hosts"][1], "hosts").items():
        field = f"hosts.{r.name(k, 'hosts')}"
        port_node, t = r.timed(v, field, "port", defaults)
        end = _port(r, port_node, field, switches)
        take(end, port_node, field)
        hosts[h] = end
        timing[end] = t
    if not hosts:
        r.fail(top["hosts"][1], "hosts", "at least one host")

    root_node = top["root"][1]
    root = r.scalar(root_node, "root")
    if root not in switches:
        r.fail(root_node, "root", f"{root!r} is not a switch ({', '.join(switches)})")
    am = "h0"
    if "am" in top:
        am = r.scalar(top["am"][1], "am")
        if am not in hosts:
            r.fail(top["am"][1], "am", f"{am!r} is not a host")
    elif am not in hosts:
        r.fail(top["hosts"][1], "am", "no host h0: name the Aggregation Manager's host (am: HOST)")
    desc = r.scalar(top["description"][1], "description") if "description" in top else ""
    name = r.scalar(top["name"][1], "name") if "name" in top else source
    try:
        return Topology(switches=switches, links=links, hosts=hosts, root=root, am=am, description=desc, name=name,
                        timing=timing)
    except ValueError as e:          # the tree rules: a cycle, a switch not connected to the root
        r.fail(link_node if links else root_node, "links", str(e))


def load(path):
    """The Topology of the file at `path`."""
    try:
        with open(path) as f:
            text = f.read()
    except OSError as e:
        raise TopologyFileError(f"{path}: {e.strerror}") from None
    return parse(text, path)


def _port_text(end):
    return f"{end[0]}:{end[1]}"


def dump(topo):
    """The topology file (YAML) of `topo`, with the link timing that differs from the default."""
    timing = topo.timing

    def entry(ends):
        t = timing.get(ends[0])
        if t is None or t == DEFAULT_TIMING:
            return [_port_text(e) for e in ends]
        return {"ends": [_port_text(e) for e in ends], **t}

    doc = {"name": topo.name or "topology", "description": topo.description, "root": topo.root,
           "am": topo.am, "switches": dict(topo.switches), "links": [entry(ends) for ends in topo.links],
           "hosts": {h: (_port_text(e) if timing.get(e, DEFAULT_TIMING) == DEFAULT_TIMING
                         else {"port": _port_text(e), **timing[e]}) for h, e in topo.hosts.items()}}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=None, width=120)


def _generated(name, description, switches, links, hosts, root):
    """Every switch gets the largest port count any of them needs: one simulator build for the network."""
    ports = max(max(switches.values()), 2)
    if ports > MAX_PORTS:
        raise TopologyFileError(f"{name}: a switch would need {ports} ports, at most {MAX_PORTS}")
    switches = dict.fromkeys(switches, ports)
    used = [e for ends in links for e in ends] + list(hosts.values())
    return Topology(switches=switches, links=links, hosts=hosts, root=root, description=description, name=name,
                    timing={e: dict(DEFAULT_TIMING) for e in used})


def one_switch(hosts=4):
    """One switch with `hosts` hosts."""
    return _generated(f"one-switch-{hosts}", f"1 switch with {hosts} hosts", {"sw": hosts}, [],
                      {f"h{i}": ("sw", i) for i in range(hosts)}, "sw")


def spine_leaf(leaves=2, hosts_per_leaf=2):
    """`leaves` leaves of `hosts_per_leaf` hosts (ports 0..H-1; port H up to the spine's port l)."""
    h = hosts_per_leaf
    switches = {"spine": leaves, **{f"leaf{l}": h + 1 for l in range(leaves)}}
    links = [((f"leaf{l}", h), ("spine", l)) for l in range(leaves)]
    hosts = {f"h{l * h + i}": (f"leaf{l}", i) for l in range(leaves) for i in range(h)}
    return _generated(f"spine-leaf-{leaves}x{h}", f"{leaves} leaves of {h} hosts and a spine", switches, links,
                      hosts, "spine")


def tree3(spines=2, leaves_per_spine=2, hosts_per_leaf=2):
    """A 3-level tree: a root over `spines` spines, each over `leaves_per_spine` leaves of `hosts_per_leaf`
    hosts (a leaf's port H and a spine's port L are their uplinks)."""
    s, l, h = spines, leaves_per_spine, hosts_per_leaf
    switches = {"root": s, **{f"spine{i}": l + 1 for i in range(s)},
                **{f"leaf{i}_{j}": h + 1 for i in range(s) for j in range(l)}}
    links = [((f"spine{i}", l), ("root", i)) for i in range(s)]
    links += [((f"leaf{i}_{j}", h), (f"spine{i}", j)) for i in range(s) for j in range(l)]
    hosts = {f"h{(i * l + j) * h + k}": (f"leaf{i}_{j}", k) for i in range(s) for j in range(l) for k in range(h)}
    return _generated(f"tree3-{s}x{l}x{h}", f"a root, {s} spines of {l} leaves of {h} hosts", switches, links,
                      hosts, "root")


GENERATORS = {"one-switch": one_switch, "spine-leaf": spine_leaf, "tree3": tree3}


def resolve(arg):
    """A topology from a built-in name (topology.TOPOLOGIES) or a file's path."""
    if arg in TOPOLOGIES:
        return TOPOLOGIES[arg]
    if arg.endswith((".yaml", ".yml", ".json")) or "/" in arg:
        return load(arg)
    raise TopologyFileError(f"{arg!r} is neither a topology ({', '.join(sorted(TOPOLOGIES))}) nor a "
                            ".yaml/.yml/.json file")


def topology_arg(text):
    """argparse type of a --topology option: the name or path, checked (a bad file is one line)."""
    try:
        resolve(text)
    except TopologyFileError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def main(argv=None):
    from software.argtypes import positive_int
    ap = argparse.ArgumentParser(description="Write or check MiniSharp topology files.")
    sub = ap.add_subparsers(dest="command", required=True)
    p = sub.add_parser("one-switch", help="one switch")
    p.add_argument("--hosts", type=positive_int, default=4)
    p = sub.add_parser("spine-leaf", help="leaves under one spine")
    p.add_argument("--leaves", type=positive_int, default=2)
    p.add_argument("--hosts-per-leaf", type=positive_int, default=2)
    p = sub.add_parser("tree3", help="a root over spines over leaves")
    p.add_argument("--spines", type=positive_int, default=2)
    p.add_argument("--leaves-per-spine", type=positive_int, default=2)
    p.add_argument("--hosts-per-leaf", type=positive_int, default=2)
    for p in sub.choices.values():
        p.add_argument("-o", "--output", help="write the file here (default: standard output)")
    p = sub.add_parser("check", help="check a file: print its summary or a one-line error")
    p.add_argument("file")
    a = ap.parse_args(argv)
    try:
        if a.command == "check":
            t = load(a.file)
            print(f"{a.file}: {len(t.switches)} switches, {len(t.links)} links, {len(t.hosts)} hosts, "
                  f"root {t.root}, depth {max([_depth(t, sw) for sw in t.switches])}")
            return 0
        kw = {k: v for k, v in vars(a).items() if k not in ("command", "output")}
        topo = GENERATORS[a.command](**kw)
    except (TopologyFileError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    text = dump(topo)
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    else:
        sys.stdout.write(text)
    return 0


def _depth(topo, switch):
    tree = topo.tree()
    d = 0
    while switch in tree:
        switch, d = tree[switch][0], d + 1
    return d


if __name__ == "__main__":
    sys.exit(main())

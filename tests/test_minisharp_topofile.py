"""MiniSharp topology files (software/minisharp/topofile.py, issue 53): the generators' networks, the file
round trip, link timing, and every refusal of a bad file as one line naming the file, the line and the field."""
import subprocess
import sys

import pytest

from software.minisharp.topofile import (
    DEFAULT_TIMING, MAX_PORTS, TopologyFileError, dump, one_switch, parse, resolve, spine_leaf, tree3)
from software.minisharp.topology import TOPOLOGIES
from sim import ROOT


def _depths(topo):
    tree, out = topo.tree(), {}
    for sw in topo.switches:
        d, s = 0, sw
        while s in tree:
            s, d = tree[s][0], d + 1
        out[sw] = d
    return out


@pytest.mark.parametrize("topo, switches, hosts, depth", [
    (one_switch(4), 1, 4, 0), (spine_leaf(4, 4), 5, 16, 1), (spine_leaf(3, 5), 4, 15, 1),
    (tree3(2, 2, 4), 7, 16, 2), (tree3(3, 1, 2), 7, 6, 2)])
def test_generators_build_trees(topo, switches, hosts, depth):
    """Every generated network is a tree of the asked size: hosts only on the deepest switches, one port count
    for every switch (one simulator build), each host's setup reaching its leaf, every rank counted once at
    its leaf and every active switch once at its parent."""
    assert (len(topo.switches), len(topo.hosts), max(_depths(topo).values())) == (switches, hosts, depth)
    assert len(set(topo.switches.values())) == 1
    assert {_depths(topo)[sw] for sw, _ in topo.hosts.values()} == {depth}
    ranks = len(topo.hosts)
    contrib = {sw: topo.contributors(sw, ranks) for sw in topo.active(ranks)}
    assert sorted(n for c in contrib.values() for k, n in c if k == "host") == sorted(topo.hosts)
    assert sorted(n for c in contrib.values() for k, n in c if k == "switch") == \
        sorted(sw for sw in topo.switches if sw != topo.root)
    assert [sw for sw, _ in topo.setups(1, 100, ranks)][-1] == topo.root


def test_generated_spine_leaf_is_the_built_in_one():
    """spine_leaf(2, 2) and one_switch(4) are `make allreduce`'s built-in networks, port for port."""
    for gen, name in ((spine_leaf(2, 2), "spine-leaf"), (one_switch(4), "one-switch")):
        ref = TOPOLOGIES[name]
        assert (gen.switches, gen.links, gen.hosts, gen.root, gen.am) == \
            (ref.switches, ref.links, ref.hosts, ref.root, ref.am)
        assert gen.switch_config("sw" if name == "one-switch" else "leaf1") == \
            ref.switch_config("sw" if name == "one-switch" else "leaf1")


@pytest.mark.parametrize("topo", [one_switch(3), spine_leaf(4, 4), tree3(2, 3, 2)])
def test_file_round_trip(topo):
    again = parse(dump(topo), "t.yaml")
    assert again == topo


def test_link_timing():
    """Per-link and per-host latency and rate, the file's defaults elsewhere, both ends of a link the same."""
    text = """
root: spine
defaults: {latency_ns: 200}
switches: {spine: 3, leaf0: 3, leaf1: 3}
links:
  - {ends: [leaf0:2, spine:0], latency_ns: 5000, rate_gbps: 100}
  - [leaf1:2, spine:1]
hosts:
  h0: {port: leaf0:0, rate_gbps: 25}
  h1: leaf0:1
  h2: leaf1:0
"""
    t = parse(text, "t.yaml")
    assert t.timing[("leaf0", 2)] == t.timing[("spine", 0)] == {"latency_ns": 5000.0, "rate_gbps": 100.0}
    assert t.timing[("leaf1", 2)] == {"latency_ns": 200.0, "rate_gbps": DEFAULT_TIMING["rate_gbps"]}
    assert t.timing[("leaf0", 0)] == {"latency_ns": 200.0, "rate_gbps": 25.0}
    assert parse(dump(t), "again.yaml").timing == t.timing


GOOD = """root: spine
switches: {spine: 3, leaf0: 3}
links:
  - [leaf0:2, spine:0]
hosts:
  h0: leaf0:0
  h1: leaf0:1
"""

BAD = [
    ("switches: {a: [1,\n", 2, "not YAML/JSON"),
    ("", 1, "the file is empty"),
    ("- 1\n- 2\n", 1, "topology: must be a mapping"),
    (GOOD + "color: blue\n", 8, "color: unknown field"),
    (GOOD.replace("root: spine\n", ""), 1, "root: missing"),
    (GOOD.replace("root: spine", "root: core"), 1, "root: 'core' is not a switch"),
    (GOOD.replace("spine: 3", "spine: 1"), 2, "switches.spine: must be in 2..64"),
    (GOOD.replace("spine: 3", "spine: three"), 2, "switches.spine: must be an integer"),
    (GOOD.replace("spine: 3", "Spine: 3"), 2, "'Spine' is not a name"),
    (GOOD.replace("spine: 3", "spine: 3, spine: 2"), 2, "switches.spine: given twice"),
    (GOOD.replace("[leaf0:2, spine:0]", "[leaf0:2, spine:5]"), 4, "links[0]: spine has ports 0..2, not 5"),
    (GOOD.replace("[leaf0:2, spine:0]", "[leaf0:2, core:0]"), 4, "links[0]: 'core' is not a switch"),
    (GOOD.replace("[leaf0:2, spine:0]", "[leaf0:2]"), 4, "a link is two ends"),
    (GOOD.replace("[leaf0:2, spine:0]", "[leaf0:2, leaf0:1]"), 4, "both ends on switch leaf0"),
    (GOOD.replace("[leaf0:2, spine:0]", "[leaf0:two, spine:0]"), 4, "must be SWITCH:PORT"),
    (GOOD.replace("h1: leaf0:1", "h1: leaf0:2"), 7, "hosts.h1: port leaf0:2 is already used by links[0]"),
    (GOOD.replace("h1: leaf0:1", "h1: {rate_gbps: 10}"), 7, "hosts.h1.port: missing"),
    (GOOD.replace("[leaf0:2, spine:0]", "{ends: [leaf0:2, spine:0], latency_ns: soon}"), 4,
     "links[0].latency_ns: must be a number"),
    (GOOD.replace("[leaf0:2, spine:0]", "{ends: [leaf0:2, spine:0], latency_ns: 0}"), 4,
     "links[0].latency_ns: must be in"),
    (GOOD.replace("[leaf0:2, spine:0]", "{ends: [leaf0:2, spine:0], delay: 1}"), 4, "links[0].delay: unknown field"),
    (GOOD + "am: h7\n", 8, "am: 'h7' is not a host"),
    (GOOD.replace("h0:", "a0:"), 6, "am: no host h0"),
    (GOOD.replace("links:\n  - [leaf0:2, spine:0]\n", ""), 1, "links: switches not connected to the root: ['leaf0']"),
    ("root: a\nswitches: {a: 3, b: 3, c: 3}\nlinks:\n  - [a:0, b:0]\n  - [b:1, c:0]\n  - [c:1, a:1]\n"
     "hosts: {h0: a:2}\n", 4, "links: the links have a cycle"),
]


@pytest.mark.parametrize("text, line, message", BAD, ids=[m for _, _, m in BAD])
def test_bad_files_are_refused_in_one_line(text, line, message):
    with pytest.raises(TopologyFileError) as e:
        parse(text, "bad.yaml")
    text = str(e.value)
    assert "\n" not in text and text.startswith(f"bad.yaml:{line}: ") and message in text, text


def test_resolve_and_the_command_line(tmp_path):
    """A name, a generated file written by the CLI and `check` on it; a missing file and a name that is
    neither refused in one line."""
    assert resolve("spine-leaf") is TOPOLOGIES["spine-leaf"]
    path = tmp_path / "net.yaml"
    run = [sys.executable, "-m", "software.minisharp.topofile"]
    subprocess.run(run + ["tree3", "--spines", "2", "--leaves-per-spine", "2", "--hosts-per-leaf", "4", "-o", str(path)],
                   cwd=ROOT, check=True)
    assert resolve(str(path)) == tree3(2, 2, 4)
    out = subprocess.run(run + ["check", str(path)], cwd=ROOT, check=True, capture_output=True, text=True).stdout
    assert out == f"{path}: 7 switches, 6 links, 16 hosts, root root, depth 2\n"
    with pytest.raises(TopologyFileError, match="No such file"):
        resolve(str(tmp_path / "none.yaml"))
    with pytest.raises(TopologyFileError, match="neither a topology"):
        resolve("ring")
    with pytest.raises(TopologyFileError, match=f"at most {MAX_PORTS}"):
        spine_leaf(MAX_PORTS + 1, 2)

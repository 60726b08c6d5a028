"""Every command line prints its usage on --help and refuses bad input with one line, no traceback (issue 51).

The entry points are discovered: the modules with a `__main__` block or a `__main__.py` under sim/, software/,
boards/, soc/, scripts/, the console scripts of pyproject.toml and scripts/*.sh; so is each Makefile target's
list of variables (what its recipe reads that the Makefile does not set itself). A new entry point without
--help or without a bad-value case here, or a new Makefile variable without one, fails this file.

Make runs with `-o deps` (the venv is taken as installed: a stale stamp would reinstall it inside a test).
A refused case must end within TIMEOUT s: longer means it started a build, a simulation or a sweep.
"""
import os
import re
import signal
import subprocess
import sys
import tomllib

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREES = ("sim", "software", "boards", "soc", "scripts")
TIMEOUT = 30
NOT_ENTRY_POINTS = {
    "scripts/yowasp-wrappers.sh": "make deps's installer step (writes wrappers into the venv's bin), no command; it "
                                  "is a prerequisite of the venv's stamp, so editing it would reinstall the venv",
}
# Entry points without a bad value to give, and why.
NO_BAD_VALUE = {
    "scripts/check-commits.sh": "SINCE is any commit; one not in this clone falls back to HEAD (documented)",
}
# Makefile (target, variable) pairs not run here, and why.
MAKE_NOT_RUN = {
    ("bench", "FRESH"): "a flag: any value turns --fresh on",
    ("fuzz", "PYTEST_ARGS"): "make fuzz removes build/bench/fuzz.json first; the variable reaches pytest as in "
                             "make test, run here",
}


def main_modules():
    """Modules with a __main__ block, and packages with a __main__.py, under TREES."""
    out = []
    for tree in TREES:
        for dirpath, dirnames, files in os.walk(os.path.join(ROOT, tree)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            for f in files:
                if not f.endswith(".py"):
                    continue
                path = os.path.join(dirpath, f)
                module = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                if f == "__main__.py":
                    out.append(module[:-len(".__main__")])
                else:
                    with open(path) as fh:
                        if re.search(r"^if __name__ == ['\"]__main__['\"]:", fh.read(), re.M):
                            out.append(module)
    return sorted(out)


def entry_points():
    """{name: argv prefix} of every entry point."""
    out = {m: [sys.executable, "-m", m] for m in main_modules()}
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as f:
        for script in tomllib.load(f)["project"].get("scripts", {}):
            out[script] = [os.path.join(os.path.dirname(sys.executable), script)]
    for f in sorted(os.listdir(os.path.join(ROOT, "scripts"))):
        if f.endswith(".sh") and f"scripts/{f}" not in NOT_ENTRY_POINTS:
            out[f"scripts/{f}"] = ["bash", os.path.join("scripts", f)]
    return out


def makefile_variables():
    """{target: the variables its recipe reads that the Makefile does not assign with :=}, for the targets that
    read any."""
    with open(os.path.join(ROOT, "Makefile")) as f:
        text = f.read()
    own = set(re.findall(r"^(?:export\s+)?(\w+)\s*:=", text, re.M))
    targets, current = {}, None
    for line in text.splitlines():
        if line.startswith("\t") and current:
            targets[current] |= set(re.findall(r"\$\((\w+)\)", line)) - own
        elif re.match(r"^[\w.$()/-]+:(?!=)", line):
            current = line.split(":")[0]
            targets.setdefault(current, set())
        elif not line.strip() or not line.startswith((" ", "#")):
            current = None
    return {t: v for t, v in targets.items() if v}


ENTRY_POINTS = entry_points()
BENCHES = sorted(m for m in ENTRY_POINTS if re.fullmatch(r"sim\.bench\.bench_\w+", m))

# (entry point, arguments, what is wrong)
CLI_CASES = [
    ("sim.formal", ["no_such_property"], "unknown property"),
    ("sim.formal", ["--timeout", "0"], "timeout 0"),
    ("sim.demo", ["--cores", "minisharp,bogus"], "unknown core"),
    ("sim.demo", ["--threads", "0"], "0 threads"),
    ("sim.demo", ["--cpu-type", "arm"], "unknown CPU"),
    ("sim.target", ["--cores", "bogus"], "unknown core"),
    ("sim.target", ["--threads", "-1"], "negative threads"),
    ("sim.runner", ["--cores", "bogus", "--", "true"], "unknown core"),
    ("sim.runner", ["--timeout", "0", "--", "true"], "timeout 0"),
    ("sim.runner", [], "no command"),
    ("sim.allreduce", ["--topology", "one-switch", "--ranks", "5"], "more ranks than hosts"),
    ("sim.allreduce", ["--timeout", "soon"], "timeout not a number"),
    ("sim.allreduce", ["--seed", "-1"], "negative seed"),
    ("sim.allreduce", ["--topology", "no/such.yaml"], "missing topology file"),
    ("software.minisharp.topofile", ["spine-leaf", "--leaves", "0"], "0 leaves"),
    ("software.minisharp.topofile", ["spine-leaf", "--leaves", "65"], "a spine of more ports than a switch has"),
    ("software.minisharp.topofile", ["check", "no/such.yaml"], "missing file"),
    ("software.minisharp.topofile", ["ring"], "unknown generator"),
    ("sim.bench", ["no_such_bench"], "unknown bench"),
    ("sim.bench", ["--workers", "-2"], "negative workers"),
    ("sim.bench", ["--cluster", "ray://"], "cluster address without a host"),
    ("sim.bench", ["--connect-timeout", "0"], "timeout 0"),
    ("sim.bench.soc_host", ["-1"], "negative seconds"),
    ("sim.bench.soc_host", ["1"], "outside the simulation (no INNET_SOC_IP)"),
    ("sim.bench.bench_rifl", ["--frame-bits", "100"], "frame size not a power of two"),
    ("sim.bench.bench_rifl", ["--ber", "0"], "BER 0"),
    ("sim.bench.bench_rifl", ["--ber", "2"], "BER over 1"),
    ("sim.bench.bench_rifl", ["--max-cycles", "0"], "0 cycles"),
    ("sim.bench.bench_rifl", ["--ecp5-only", "bogus"], "unknown ECP5 part"),
    ("sim.bench.bench_rifl", ["--two-boards"], "--two-boards without --versa"),
    ("sim.bench.bench_rifl_net", ["--rerun", "bogus/1"], "unknown traffic"),
    ("sim.bench.bench_rifl_net", ["--rerun", "bursty/256", "--ecp5"], "two modes"),
    ("software.sparsr.capi", ["bogus"], "unknown command"),
    ("software.cli", ["--host", "999.1.1.1", "ident"], "bad IPv4 address"),
    ("software.cli", ["--host", "not a host", "ident"], "bad host name"),
    ("software.cli", ["--port", "0", "ident"], "port 0"),
    ("software.cli", ["--port", "65536", "ident"], "port past 65535"),
    ("software.cli", ["--timeout", "-1", "ident"], "negative timeout"),
    ("software.cli", ["read", "0xzz"], "address not a number"),
    ("software.cli", ["read", "0", "0"], "0 words"),
    ("software.cli", ["write", "0", "0x100000000"], "value past 32 bits"),
    ("software.cli", ["regs"], "regs without --csr-csv"),
    ("software.cli", ["read", "ctrl_scratch"], "CSR name without --csr-csv"),
    ("software.cli", ["--csr-csv", "/nonexistent/csr.csv", "ident"], "missing csr.csv"),
    ("software.cli", [], "no command"),
    ("innet", ["--port", "x", "ident"], "port not a number"),
    ("software.demo", [], "outside the simulation (no INNET_CSR_CSV)"),
    ("software.sync", ["info"], "no csr.csv (no --csr-csv, no INNET_CSR_CSV)"),
    ("software.sync", ["--csr-csv", "/nonexistent/csr.csv", "info"], "missing csr.csv"),
    ("software.sync", ["--csr-csv", "x.csv", "all", "0", "sum", "1,2"], "unknown op"),
    ("software.sync", ["--csr-csv", "x.csv", "all", "8", "or", "1,2"], "ident past 7"),
    ("software.sync", ["--csr-csv", "x.csv", "all", "0", "or", "1,zz"], "value not a number"),
    ("software.sync", ["--csr-csv", "x.csv", "--timeout", "0", "uses"], "timeout 0"),
    ("software.sync", [], "no command"),
    ("software.demo", ["--bogus"], "unknown option"),
    ("software.minisharp", ["reduce", "--iface", "lo", "--ranks", "0"], "0 ranks"),
    ("software.minisharp", ["reduce", "--iface", "lo", "--elements", "0"], "0 elements"),
    ("software.minisharp", ["reduce", "--iface", "lo", "--switch-mac", "zz"], "bad MAC"),
    ("software.minisharp", ["reduce", "--iface", "lo", "--egress-first", "2"], "egress range reversed"),
    ("software.minisharp", ["reduce", "--iface", "no_such_if0"], "unknown interface"),
    ("software.minisharp", ["dissector", "-o", "/nonexistent/dir/minisharp.lua"], "unwritable output"),
    ("software.minisharp", ["bogus"], "unknown command"),
    ("software.minisharp.mgmt_check", ["--csr-csv", "x", "--admin", "a", "--probe", "b", "--elements", "0"],
     "0 elements"),
    ("software.minisharp.mgmt_check", ["--csr-csv", "x", "--admin", "a", "--probe", "b", "--wait", "-1"],
     "negative wait"),
    ("software.minisharp.mgmt_check", ["--csr-csv", "/nonexistent/csr.csv", "--admin", "lo", "--probe", "lo"],
     "missing csr.csv"),
    ("software.minisharp.mgmt_check", [], "missing options"),
    ("software.minisharp.sideband", ["--csr-csv", "x", "setup", "1", "0", "2"], "0 elements"),
    ("software.minisharp.net", ["configure", "--topology", "bogus"], "unknown topology"),
    ("software.minisharp.net", ["setup", "--ranks", "9", "--elements", "10"], "more ranks than hosts"),
    ("software.minisharp.net", ["setup"], "setup without --elements"),
    ("software.minisharp.net", ["setup", "--elements", "0"], "0 elements"),
    ("software.minisharp.net", ["rank", "--host", "h9", "--vector", "v.npy", "--out", "o.npy"], "unknown host"),
    ("software.minisharp.net", ["configure"], "outside sim.cluster (no INNET_CLUSTER)"),
    ("software.rifl", ["dissector", "-o", "/nonexistent/dir/rifl.lua"], "unwritable output"),
    ("software.rifl", ["bogus"], "unknown command"),
    ("boards.fit", ["bogus"], "unknown board"),
    ("boards.fit", ["colorlight_5a_75b", "bogus"], "unknown core"),
    ("boards.fit", ["--measure", "--boards", "bogus"], "unknown board to measure"),
    ("boards.fit", ["--measure", "--only", ","], "no core to measure"),
    ("boards.build", ["colorlight_5a_75b", "--revision", "6.1"], "unknown revision"),
    ("boards.build", ["lattice_versa_ecp5", "--revision", "8.0"], "revision of another board"),
    ("boards.build", ["xilinx_ac701_pcie", "--cores", "sync"], "cores on a fixed board"),
    ("boards.build", ["colorlight_5a_75b", "--cores", "sync", "--sideband"], "sideband without minisharp"),
] + [(bench, ["--no-such-option"], "unknown option") for bench in BENCHES]

# (target, variables, what is wrong); own_format: the tool's own message (pytest's), only no traceback checked
MAKE_CASES = [
    ("allreduce", {"TOPOLOGY": "bogus"}, "unknown topology"),
    ("allreduce", {"TOPOLOGY": "no/such.yaml"}, "missing topology file"),
    ("allreduce", {"RANKS": "0"}, "0 ranks"),
    ("allreduce", {"RANKS": "-1"}, "negative ranks"),
    ("allreduce", {"RANKS": "5"}, "more ranks than hosts"),
    ("allreduce", {"RANKS": "four"}, "ranks not a number"),
    ("allreduce", {"ELEMENTS": "0"}, "0 elements"),
    ("allreduce", {"ELEMENTS": "lots"}, "elements not a number"),
    ("allreduce", {"ELEMENTS": "99999999"}, "more elements than 2^16 chunks"),
    ("allreduce", {"ALLREDUCE_ARGS": "--bogus"}, "unknown option"),
    ("allreduce", {"ALLREDUCE_ARGS": "--timeout 0"}, "timeout 0"),
    ("bench", {"BENCH": "bogus"}, "unknown bench"),
    ("bench", {"BENCH": "switch", "WORKERS": "0"}, "0 workers"),
    ("bench", {"BENCH": "switch", "WORKERS": "many"}, "workers not a number"),
    ("bench", {"BENCH": "switch", "CLUSTER": "ray://host:port"}, "cluster port not a number"),
    ("bench", {"BENCH": "switch", "BENCH_ARGS": "--bogus"}, "unknown option"),
    ("bench", {"BENCH": "switch", "BENCH_ARGS": "--connect-timeout -1"}, "negative timeout"),
    ("formal", {"FORMAL": "no_such_property"}, "unknown property"),
    ("build", {"BOARD": "bogus"}, "unknown board"),
    ("build", {"BUILD_ARGS": "--cores bogus"}, "unknown core"),
    ("build", {"BUILD_ARGS": "--cores minisharp --mgmt-ports 5"}, "unknown management port"),
    ("build", {"BUILD_ARGS": "--sys-clk-freq fast"}, "clock not a number"),
    ("build", {"BUILD_ARGS": "--cores minisharp,sync"}, "cores that do not fit"),
    ("test", {"PYTEST_ARGS": "--no-such-pytest-option"}, "unknown pytest option"),
    ("test-long", {"PYTEST_ARGS": "--no-such-pytest-option"}, "unknown pytest option"),
]
OWN_FORMAT = {"test", "test-long"}


def run(argv):
    """Run argv in ROOT without the simulation's environment; (returncode, stdout, stderr)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("INNET_") and k != "RAY_ADDRESS"}
    p = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        pytest.fail(f"{' '.join(argv)}: still running after {TIMEOUT} s (it started something)")
    return p.returncode, out, err


def message_lines(stderr):
    """stderr without argparse's usage block and make's own `*** ... Error N` line."""
    out, in_usage = [], False
    for line in stderr.splitlines():
        if line.startswith("usage:"):
            in_usage = True
            continue
        if in_usage and line.startswith(" "):
            continue
        in_usage = False
        if line.strip() and not re.match(r"make(\[\d+\])?: \*\*\* ", line):
            out.append(line)
    return out


def assert_refused(argv, own_format=False):
    rc, out, err = run(argv)
    assert rc != 0, f"{argv}: exit 0\n{out}{err}"
    assert "Traceback" not in out + err, f"{argv}:\n{out}{err}"
    if own_format:
        return
    assert out == "", f"{argv}: printed on stdout (something ran):\n{out}"
    lines = message_lines(err)
    assert len(lines) == 1 and "error" in lines[0].lower(), f"{argv}: not one error line:\n{err}"


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_help_prints_usage(name):
    rc, out, err = run(ENTRY_POINTS[name] + ["--help"])
    assert rc == 0, f"{name} --help: exit {rc}\n{err}"
    assert "usage" in out.lower() and "Traceback" not in out + err, f"{name} --help:\n{out}{err}"


@pytest.mark.parametrize("name, args, why", CLI_CASES, ids=[f"{n} {' '.join(a)}" for n, a, _ in CLI_CASES])
def test_cli_refuses_bad_input(name, args, why):
    assert_refused(ENTRY_POINTS[name] + args)


@pytest.mark.parametrize("target, variables, why", MAKE_CASES,
                         ids=[f"{t} {' '.join(f'{k}={v}' for k, v in vs.items())}" for t, vs, _ in MAKE_CASES])
def test_make_refuses_bad_variables(target, variables, why):
    assert_refused(["make", "-s", "-o", "deps", target, *(f"{k}={v}" for k, v in variables.items())],
                   own_format=target in OWN_FORMAT)


def test_every_entry_point_has_a_bad_value_case():
    covered = {name for name, _, _ in CLI_CASES} | set(NO_BAD_VALUE)
    assert sorted(set(ENTRY_POINTS) - covered) == []
    assert sorted({name for name, _, _ in CLI_CASES} - set(ENTRY_POINTS)) == []


def test_every_makefile_variable_has_a_bad_value_case():
    covered = {(t, v) for t, vs, _ in MAKE_CASES for v in vs} | set(MAKE_NOT_RUN)
    wanted = {(t, v) for t, vs in makefile_variables().items() for v in vs}
    assert sorted(wanted - covered) == []
    assert {"allreduce", "bench", "formal", "build", "test"} <= set(makefile_variables())


def test_every_bench_runs_on_its_own():
    """`make bench BENCH=<name>` and `python -m sim.bench.bench_<name>` name the same benches."""
    from sim.bench.__main__ import discover
    assert [f"sim.bench.bench_{n}" for n in discover()] == BENCHES


def test_bench_parser_maps_options_onto_run(capsys):
    """--quick and --no-<flag> (a keyword of run() that defaults to True) reach run(); the result is reported."""
    from sim.bench.framework import bench_main

    class Result:
        def markdown(self):
            return "## fake"

        def write(self):
            return "build/bench/fake.md"

    calls = []

    def run(quick=False, ecp5=True, cluster=None):
        calls.append(dict(quick=quick, ecp5=ecp5, cluster=cluster))
        return Result()
    assert bench_main(run, "fake bench", ["--quick", "--no-ecp5"]) == 0
    assert bench_main(run, "fake bench", []) == 0
    assert calls == [dict(quick=True, ecp5=False, cluster=None), dict(quick=False, ecp5=True, cluster=None)]
    assert capsys.readouterr().out.count("## fake") == 2
    with pytest.raises(SystemExit):
        bench_main(run, "fake bench", ["--no-cluster"])

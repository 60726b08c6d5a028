"""The sweeps' cache key covers what a task runs (sim/bench/sources.py, sim.bench.sweep.code_key): a change in a
module the task's module imports (at the top or inside a function, absolutely or relatively) changes the key, a
change in a module it does not import leaves it; the bench modules' keys reach the RTL and reference models they
call; Verilator's version is in every key."""
import sys
import textwrap

import pytest

from sim.bench import sources
from sim.bench import sweep as sw


@pytest.fixture
def keypkg(tmp_path, monkeypatch):
    """A project package of the test's own, `keypkg`: task.py imports model (at the top) and helper (inside
    its task function); other.py is imported by nobody."""
    pkg = tmp_path / "keypkg"
    pkg.mkdir()
    files = {"__init__.py": "",
             "task.py": """
                 from keypkg.model import square

                 def measure(x):
                     from . import helper
                     return {"y": helper.twice(square(x))}
             """,
             "model.py": "def square(x):\n    return x * x\n",
             "helper.py": "def twice(x):\n    return 2 * x\n",
             "other.py": "UNUSED = 1\n"}
    for name, text in files.items():
        (pkg / name).write_text(textwrap.dedent(text))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(sources, "PACKAGES", sources.PACKAGES + ("keypkg",))
    fresh_process()
    import keypkg.task
    yield pkg, keypkg.task.measure
    for name in [m for m in sys.modules if m == "keypkg" or m.startswith("keypkg.")]:
        del sys.modules[name]
    fresh_process()


def fresh_process():
    """What a new `make bench` process starts from: no digest computed yet."""
    sources.forget()
    sw.code_key.cache_clear()


def key(task):
    return sw.cache_key("t_key", task, {"x": 3})


def test_a_change_in_an_imported_module_changes_the_key(keypkg):
    pkg, measure = keypkg
    assert sorted(sources.modules(["keypkg.task"], sources.PACKAGES)) == ["keypkg", "keypkg.helper", "keypkg.model", "keypkg.task"]
    before = key(measure)
    (pkg / "model.py").write_text("def square(x):\n    return x ** 2\n")
    assert key(measure) == before                   # computed once per process
    fresh_process()
    after_model = key(measure)
    assert after_model != before
    (pkg / "helper.py").write_text("def twice(x):\n    return x + x\n")
    fresh_process()
    assert key(measure) != after_model              # imported inside the task function, relatively


def test_a_change_in_a_module_not_imported_leaves_the_key(keypkg):
    pkg, measure = keypkg
    before = key(measure)
    (pkg / "other.py").write_text("UNUSED = 2\n")
    fresh_process()
    assert key(measure) == before


def test_bench_keys_reach_the_rtl_and_the_models_they_call():
    """The switch bench's key covers the iSLIP RTL, the reference schedulers, the traffic generators and the
    Verilator layer; the sources module reaches none of them; Verilator's version is in every key."""
    from sim.verilated import available, version
    found = sources.modules(["sim.bench.bench_switch"])
    assert {"cores.switch.islip", "software.switch.reference", "software.switch.traffic", "sim.verilated",
            "sim.verilated.switch", "cores"} <= set(found)
    assert sorted(sources.modules(["sim.bench.sources"])) == ["sim", "sim.bench", "sim.bench.sources"]
    assert sw.code_key("sim.bench.bench_switch")["verilator"] == (version() if available() else "")


def test_modules_checks_its_arguments():
    with pytest.raises(TypeError, match="a list of module names"):
        sources.modules("sim.bench.sweep")
    with pytest.raises(ValueError, match="'sim.no_such_module': no source file"):
        sources.modules(["sim.no_such_module"])

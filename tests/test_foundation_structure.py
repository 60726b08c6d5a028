"""The tree's structure as checked rules (docs/ARCHITECTURE.md): the import contract of pyproject.toml
(import-linter: floors and rooms), no import cycle between modules, no private name imported across files, and
the sizes a reader takes in at once (constructors of at most 120 lines, files of at most 600)."""
import ast
import os
import subprocess
import sys

import grimp
import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ("cores", "soc", "software", "sim", "boards")
MAX_CONSTRUCTOR_LINES = 120
MAX_FILE_LINES = 600


def python_files(folders=PACKAGES + ("tests",)):
    for folder in folders:
        for dirpath, dirnames, filenames in os.walk(os.path.join(ROOT, folder)):
            dirnames[:] = [d for d in dirnames if d != "__pycache__"]
            yield from (os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".py"))


def parsed(files=None):
    """(path relative to ROOT, text, ast) of `files` (default: every Python file of the tree)."""
    for path in files if files is not None else python_files():
        with open(path) as f:
            text = f.read()
        yield os.path.relpath(path, ROOT), text, ast.parse(text, path)


def size_violations(files=None):
    """[(place, what, lines)] of every constructor and file over the limits."""
    out = []
    for rel, text, tree in parsed(files):
        if text.count("\n") > MAX_FILE_LINES:
            out.append((rel, "file", text.count("\n")))
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef):
                for f in node.body:
                    if isinstance(f, ast.FunctionDef) and f.name == "__init__":
                        n = f.end_lineno - f.lineno + 1
                        if n > MAX_CONSTRUCTOR_LINES:
                            out.append((f"{rel}:{f.lineno}", f"{node.name}.__init__", n))
    return out


def private_imports(files=None):
    """["path:line module.name"] of every private name imported from a project module."""
    bad = []
    for rel, _, tree in parsed(files):
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in PACKAGES:
                bad += [f"{rel}:{node.lineno} {node.module}.{a.name}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    return bad


def import_cycles(*packages):
    """Sorted pairs of modules that reach each other through imports."""
    graph = grimp.build_graph(*packages)
    cycles = set()
    for module in sorted(graph.modules):
        for imported in graph.find_modules_directly_imported_by(module):
            if graph.find_shortest_chain(importer=imported, imported=module):
                cycles.add(tuple(sorted((module, imported))))
    return sorted(cycles)


def test_import_contract():
    """pyproject.toml's [tool.importlinter] contracts hold (`lint-imports` prints the broken chains)."""
    linter = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    r = subprocess.run([linter, "--config", os.path.join(ROOT, "pyproject.toml")], cwd=ROOT, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "0 broken" in r.stdout, r.stdout[-2000:]


def test_import_contract_detects_a_wrong_arrow(tmp_path):
    """The contract can fail: a copy of the floors' contract over a tree with one upward import is broken."""
    for pkg, body in (("low", "from high import x\n"), ("high", "x = 1\n")):
        os.makedirs(tmp_path / "tree" / pkg)
        (tmp_path / "tree" / pkg / "__init__.py").write_text(body)
    (tmp_path / "contract.toml").write_text(
        '[tool.importlinter]\nroot_packages = ["low", "high"]\n\n[[tool.importlinter.contracts]]\n'
        'name = "floors"\ntype = "layers"\nlayers = ["high", "low"]\n')
    linter = os.path.join(os.path.dirname(sys.executable), "lint-imports")
    r = subprocess.run([linter, "--config", str(tmp_path / "contract.toml")], cwd=tmp_path / "tree",
                       capture_output=True, text=True, timeout=120, env=dict(os.environ, PYTHONPATH=str(tmp_path / "tree")))
    assert r.returncode != 0 and "low is not allowed to import high" in r.stdout, r.stdout


def test_no_import_cycles():
    """No two modules reach each other through imports (a cycle would tie them into one room)."""
    cycles = import_cycles(*PACKAGES)
    assert not cycles, "import cycles between: " + ", ".join(" <-> ".join(c) for c in cycles)


def test_cycles_are_detected(tmp_path, monkeypatch):
    pkg = tmp_path / "cyc"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from cyc import b\n")
    (pkg / "b.py").write_text("def f():\n    from cyc.a import x\n")
    (pkg / "c.py").write_text("from cyc import a\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert import_cycles("cyc") == [("cyc.a", "cyc.b")]


def test_no_private_names_imported_across_files():
    bad = private_imports()
    assert not bad, "private names imported across files: " + ", ".join(bad)


def test_private_imports_are_detected(tmp_path):
    (tmp_path / "m.py").write_text("from cores.lib.x import _hidden, public, __version__\nfrom os import _exit\n")
    assert [b.split(" ")[1] for b in private_imports([str(tmp_path / "m.py")])] == ["cores.lib.x._hidden"]


def test_sizes():
    """Every constructor and file within the limits; the message lists each one over them."""
    over = size_violations()
    assert not over, "over the limits (constructor <= %d lines, file <= %d):\n" % (
        MAX_CONSTRUCTOR_LINES, MAX_FILE_LINES) + "\n".join(f"  {p}: {w} {n} lines" for p, w, n in over)


@pytest.mark.parametrize("lines, expect", [(MAX_CONSTRUCTOR_LINES, []), (MAX_CONSTRUCTOR_LINES + 1, ["A.__init__"])])
def test_sizes_detect_a_long_constructor(tmp_path, lines, expect):
    body = "\n".join(f"        x{k} = {k}" for k in range(lines - 1))
    (tmp_path / "m.py").write_text(f"class A:\n    def __init__(self):\n{body}\n")
    assert [what for _, what, _ in size_violations([str(tmp_path / "m.py")])] == expect


@pytest.mark.parametrize("lines, expect", [(MAX_FILE_LINES, []), (MAX_FILE_LINES + 1, ["file"])])
def test_sizes_detect_a_long_file(tmp_path, lines, expect):
    (tmp_path / "m.py").write_text("x = 1\n" * lines)
    assert [what for _, what, _ in size_violations([str(tmp_path / "m.py")])] == expect

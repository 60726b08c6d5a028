"""The Python a module runs, as a digest: its file and every project module it imports, transitively.

    modules(["sim.bench.bench_soak"])          # {module: file} of it and the project modules it imports
    code_digest("sim.bench.bench_soak")        # sha256 of their names and contents, cached per process

Imports are read from the files (every import statement, also those inside functions), not executed; a module
brings the `__init__.py` of its packages (importing it runs them). Only modules of `packages` (top-level package
names found on sys.path) are followed; `exclude` cuts the walk at some of them. Modules imported by a computed
name (importlib.import_module) are not seen. Used for the sweeps' cache keys (sim.bench.sweep) and the digests
of boards/fit_figures.json (boards.fit).
"""
import ast
import functools
import hashlib
import importlib.util
import os
import sys

PACKAGES = ("cores", "soc", "software", "sim")


@functools.lru_cache(maxsize=None)
def _package_dir(top):
    spec = importlib.util.find_spec(top)
    if spec is None or not spec.submodule_search_locations:
        raise ValueError(f"{top!r} is not a package on sys.path")
    return list(spec.submodule_search_locations)[0]


def module_file(name):
    """The file of module `name` (a package: its __init__.py), or None when there is none."""
    top, *rest = name.split(".")
    base = os.path.join(_package_dir(top), *rest)
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


def package_modules(package):
    """Every module of `package` (a dotted name) and its subpackages, sorted."""
    top = module_file(package)
    if top is None or not top.endswith("__init__.py"):
        raise ValueError(f"{package!r} is not a package")
    root, names = os.path.dirname(top), []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        rel = os.path.relpath(dirpath, root)
        prefix = package if rel == "." else f"{package}.{rel.replace(os.sep, '.')}"
        for f in sorted(filenames):
            if f.endswith(".py"):
                names.append(prefix if f == "__init__.py" else f"{prefix}.{f[:-3]}")
    return sorted(names)


@functools.lru_cache(maxsize=None)
def _scan(name, path):
    """(sha256 of the file, the module names its import statements may import), relative imports resolved."""
    with open(path, "rb") as f:
        text = f.read()
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    named = []
    for node in ast.walk(ast.parse(text, path)):
        if isinstance(node, ast.Import):
            named += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parent + ([base] if base else []))
            named += [base] + [f"{base}.{a.name}" for a in node.names if a.name != "*"]
    return hashlib.sha256(text).hexdigest(), tuple(n for n in named if n)


def _inside(name, packages, exclude):
    return (name.split(".")[0] in packages
            and not any(name == e or name.startswith(e + ".") for e in exclude))


def _start_file(name, packages):
    """A module to start from: a project module's file, or the file of a module imported already (a test's)."""
    if name.split(".")[0] in packages:
        return module_file(name)
    return getattr(sys.modules.get(name), "__file__", None)


def modules(names, packages=PACKAGES, exclude=()):
    """{module: file} of the modules `names` and the modules of `packages` they import, transitively, with
    their packages; none under a name of `exclude`."""
    if isinstance(names, str):
        raise TypeError("modules() takes a list of module names")
    found, todo = {}, []
    for name in names:
        path = _start_file(name, packages)
        if path is None:
            raise ValueError(f"module {name!r}: no source file")
        found[name] = path
        todo.append(name)
    while todo:
        name = todo.pop()
        parts = name.split(".")
        wanted = list(_scan(name, found[name])[1]) + [".".join(parts[:i]) for i in range(1, len(parts))]
        for other in wanted:
            if other in found or not _inside(other, packages, exclude):
                continue
            path = module_file(other)
            if path is not None:
                found[other] = path
                todo.append(other)
    return found


def digest(found):
    """sha256 of {module: file}: each module's name and its file's sha256, in module order."""
    h = hashlib.sha256()
    for name in sorted(found):
        h.update(f"{name} {_scan(name, found[name])[0]}\n".encode())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def code_digest(module, packages=PACKAGES):
    """digest(modules([module], packages)), computed once per process."""
    return digest(modules([module], packages))


def forget():
    """Drop the digests computed so far (a process that changes the sources it digests: the tests)."""
    for cached in (_scan, code_digest, _package_dir):
        cached.cache_clear()

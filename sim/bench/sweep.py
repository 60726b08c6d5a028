"""Benchmark sweeps: every point a pure task, run on the local cores or a Ray cluster, cached, with progress.

A bench declares its points (parameter dicts; a point with random traffic carries its `seed`) and a
module-level task function that turns one point's parameters into a JSON-able result dict, the same dict
for the same parameters wherever it runs:

    def measure(n, k, load, seed):                       # module level: workers import it by name
        ...
        return {"utilisation": ...}

    params = [dict(n=8, k=2, load=load, seed=1) for load in (0.5, 0.99)]
    points = tasks(measure, params, gateware=lambda p: scheduler(p["n"], p["k"], build=False).digest)
    results = sweep("switch", points)          # one sweep may mix the points of several tasks

`sweep` returns the results in the order of `points` (each a fresh JSON round trip of the task's dict, so a
cached result and a computed one are the same values). The bench builds its tables and plots from them.

* Executors (`configure(workers=, cluster=)`, set by `python -m sim.bench --workers N --cluster ADDR`):
  `cluster` (or $RAY_ADDRESS) runs the tasks on a Ray cluster (`ray://HOST:PORT`, `HOST:PORT`, or `local` for
  a private Ray on this machine's loopback); otherwise a process pool of `workers` forked processes (default:
  every core); `workers=1` runs the tasks in this process. A Ray address that does not answer within
  `connect_timeout` seconds raises ClusterUnreachable naming it.
* Failures: a task that raises is reported with its parameters and traceback while the other points go on;
  at the end `sweep` raises SweepError listing every failed point (`strict=False`: the failed entries are
  Failure objects instead). A worker process that dies (killed, out of memory) has its points rerun on
  another worker, up to `retries` times (Ray: `max_retries`; the pool: a new pool for the points in flight).
* Cache: each computed point is stored in build/bench/cache/<bench>/<key>.json, key = sha256 of the bench, the
  task's module and name, `code_key(task's module)` (the digest of the sources of that module and of every
  project module it imports, transitively: the RTL, the reference models, the traffic generators; and
  Verilator's version), the parameters and the gateware digest
  (`gateware(params)`: the digest of the generated Verilog the point measures, e.g. sim.verilated.Model.digest,
  which also covers the harness). A rerun computes only the points whose key changed; `fresh=True` (`--fresh`)
  recomputes every point. Inputs that are not imported Python (a module imported by a computed name, a C file
  a task compiles without a gateware digest) are not in the key: run those sweeps with --fresh.
* Progress: a bar with points done, points left and the estimated time (tqdm, only when stderr is a
  terminal). A task reports how far a long point is with `progress(done, total)` (shown beside the bar for
  the local executors; a no-op elsewhere).
* Workers build or reuse Verilator models and ECP5 netlists through the project's build cache (sim.BUILD:
  Ray workers get the driver's build folder through $INNET_BUILD, so a cluster of machines that mount the
  same path, or one machine, shares it).
"""
import concurrent.futures
import functools
import hashlib
import json
import multiprocessing
import os
import socket
import sys
import time
import traceback
from dataclasses import dataclass
from urllib.parse import urlsplit

from sim import BUILD, ROOT
from sim.bench import sources
from sim.progress import bar

CACHE_DIR = os.path.join(BUILD, "bench", "cache")


@dataclass
class Settings:
    """How sweeps run: `workers` processes (1: in this process), or the Ray cluster at `cluster`."""
    workers: int = os.cpu_count() or 1
    cluster: str = None
    fresh: bool = False
    retries: int = 2
    connect_timeout: float = 15.0


SETTINGS = Settings()


def configure(**kwargs):
    """Set fields of SETTINGS (workers, cluster, fresh, retries, connect_timeout); returns the old values."""
    unknown = set(kwargs) - set(Settings.__dataclass_fields__)
    if unknown:
        raise TypeError(f"unknown sweep settings {sorted(unknown)}")
    old = {k: getattr(SETTINGS, k) for k in kwargs}
    for k, v in kwargs.items():
        setattr(SETTINGS, k, v)
    return old


class ClusterUnreachable(RuntimeError):
    """The Ray cluster address given does not answer."""


@dataclass
class Point:
    """One task call: `task(**params)`; `gateware`: the digest of the gateware it measures ("" for none)."""
    task: object
    params: dict
    gateware: str = ""

    def __str__(self):
        return f"{self.task.__name__}({_describe(self.params)})"


def tasks(task, params_list, gateware=None):
    """Points of one task: a Point per params, gateware digest `gateware(params)` (called here, in the driver:
    converting the RTL takes seconds, hence a bar of its own)."""
    params_list = list(params_list)
    with bar(len(params_list), f"{task.__name__}: gateware digests", unit="point",
             disable_if=gateware is None) as b:
        points = []
        for p in params_list:
            points.append(Point(task, dict(p), gateware(p) if gateware else ""))
            b.update(1)
    return points


@dataclass
class Failure:
    """A point whose task raised (or whose worker died more than `retries` times)."""
    point: Point
    error: str

    @property
    def params(self):
        return self.point.params

    def __str__(self):
        return f"{self.point}: {self.error.strip().splitlines()[-1] if self.error.strip() else '?'}"


class SweepError(RuntimeError):
    """Some points failed: `failures` (Failure), `results` (None for the failed points)."""
    def __init__(self, bench, failures, results):
        self.failures, self.results = failures, results
        lines = [f"{bench}: {len(failures)} of {len(results)} points failed"]
        for f in failures:
            lines += [f"--- {f.point}", f.error.rstrip()]
        super().__init__("\n".join(lines))


def _describe(params):
    return ", ".join(f"{k}={v}" for k, v in params.items())


# Results and their cache ---------------------------------------------------------------------------------

def _jsonable(x):
    if hasattr(x, "tolist"):            # numpy arrays and scalars
        return x.tolist()
    if isinstance(x, (set, frozenset)):
        return sorted(x)
    raise TypeError(f"a sweep result holds {type(x).__name__}, which is not JSON")


def normalise(result):
    """The JSON round trip of a task's result (the form cached results have)."""
    return json.loads(json.dumps(result, default=_jsonable))


def task_name(task):
    return f"{task.__module__}.{task.__qualname__}"


def _verilator_version():
    from sim.verilated import VerilatorError, version
    try:
        return version()
    except VerilatorError:          # no Verilator: no model is built
        return ""


@functools.lru_cache(maxsize=None)
def code_key(module):
    """What a task of `module` runs: the digest of its module and every project module it imports, transitively
    (sim.bench.sources: the RTL, the reference models, the harnesses' Python, the Verilator flags), and
    Verilator's version (for every task: simple, and the version is pinned). Computed once per process."""
    return {"python": sources.code_digest(module, sources.PACKAGES), "verilator": _verilator_version()}


def cache_key(bench, task, params, gateware=""):
    """The key of one point: sha256 of the bench, the task's name, code_key of its module, the parameters and
    the gateware digest."""
    text = json.dumps({"bench": bench, "task": task_name(task), "code": code_key(task.__module__),
                       "params": params, "gateware": gateware}, sort_keys=True, default=_jsonable)
    return hashlib.sha256(text.encode()).hexdigest()


def _cache_path(bench, key):
    return os.path.join(CACHE_DIR, bench, f"{key}.json")


def cached(bench, key):
    """The stored entry of a point ({params, gateware, result, wall_s, host, when}) or None."""
    try:
        with open(_cache_path(bench, key)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _store(bench, key, entry):
    path = _cache_path(bench, key)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}.tmp"
    with open(tmp, "w") as f:
        json.dump(entry, f, indent=1, default=_jsonable)
    os.replace(tmp, path)


# What runs in a worker -------------------------------------------------------------------------------------

_reporter = None        # (callable(index, text), index of the point running) inside a task, else None
_last_report = 0.0


def status(text, force=True):
    """Called by a task (or code it runs) to say where its point is (a short text shown beside the sweep's
    bar); a no-op outside a sweep."""
    global _last_report
    now = time.monotonic()
    if _reporter is None or (now - _last_report < 0.5 and not force):
        return
    _last_report = now
    send, index = _reporter
    send(index, text)


def progress(done, total):
    """status() as a fraction of the point done (e.g. cycles simulated); sent at most twice a second."""
    status(f"{100 * done / total:.0f} %" if total else str(done), force=done >= total)


def _call(task, params, index=None, send=None):
    """Run one task: {"ok", "value" (result, or the traceback when it raised), "wall_s", "host"}."""
    global _reporter, _last_report
    _reporter, _last_report = ((send, index) if send else None), 0.0
    t0 = time.monotonic()
    try:
        value, ok = task(**params), True
    except Exception:
        value, ok = traceback.format_exc(), False
    finally:
        _reporter = None
    return {"ok": ok, "value": value, "wall_s": time.monotonic() - t0, "host": socket.gethostname()}


_queue = None           # the pool's progress queue, in its workers


def _pool_init(queue):
    global _queue
    _queue = queue


def _pool_call(task, params, index):
    send = lambda i, text: _queue.put((i, text))
    send(index, _STARTED)
    return _call(task, params, index, send=send)


# Executors: `run(items, on_status)` runs [(index, task, params)] and yields (index, outcome) as points finish;
# on_status(status) is called with {index: progress text} of the points running when it changes, and at least
# every `poll` seconds (so that the bar's clock moves).

class Serial:
    """Every task in this process, one after another."""
    name = "in-process"

    def run(self, items, on_status):
        for index, task, params in items:
            send = lambda i, text: on_status({i: text})
            yield index, _call(task, params, index, send=send)
            on_status({})

    def close(self):
        pass


_STARTED = "started"


class Pool:
    """A pool of `workers` forked processes (concurrent.futures). When a worker dies the pool breaks: a new
    pool takes every point not finished, and the points that had started count one attempt each (at most
    `retries` + 1; the other point running beside the one that killed its worker counts one too)."""
    def __init__(self, workers, retries):
        self.workers, self.retries = workers, retries
        self.name = f"{workers} local processes"
        self.ctx = multiprocessing.get_context("fork")

    def run(self, items, on_status, poll=0.5):
        queue = self.ctx.SimpleQueue()
        attempts = {index: 0 for index, _, _ in items}
        pending, status = list(items), {}

        finished = set()

        def drain():
            while not queue.empty():
                i, text = queue.get()
                if i not in finished:
                    status[i] = text

        while pending:
            pool = concurrent.futures.ProcessPoolExecutor(self.workers, mp_context=self.ctx, initializer=_pool_init,
                                                          initargs=(queue,))
            futures = {pool.submit(_pool_call, task, params, index): (index, task, params)
                       for index, task, params in pending}
            pending, broken = [], False
            try:
                while futures and not broken:
                    done, _ = concurrent.futures.wait(futures, timeout=poll,
                                                      return_when=concurrent.futures.FIRST_COMPLETED)
                    for fut in done:
                        try:
                            outcome = fut.result()
                        except concurrent.futures.process.BrokenProcessPool:
                            broken = True
                            continue
                        index = futures.pop(fut)[0]
                        status.pop(index, None)
                        finished.add(index)
                        yield index, outcome
                    drain()
                    on_status({i: t for i, t in status.items() if t != _STARTED})
                if broken:
                    drain()
                    for index, task, params in futures.values():
                        if index in status:
                            attempts[index] += 1
                            status.pop(index)
                        if attempts[index] > self.retries:
                            yield index, {"ok": False, "value": f"the worker process died {attempts[index]} times "
                                          "running this point", "wall_s": 0.0, "host": ""}
                        else:
                            pending.append((index, task, params))
            finally:
                pool.shutdown(wait=True, cancel_futures=True)
        queue.close()

    def close(self):
        pass


def ray_address(address):
    """(host, port) the address names: ray://HOST[:10001] (Ray Client) or HOST[:6379] (the GCS); raises
    ClusterUnreachable for anything else."""
    url = urlsplit(address if "://" in address else f"gcs://{address}")
    default = 10001 if url.scheme == "ray" else 6379
    try:
        host, port = url.hostname, url.port
    except ValueError:                                  # a port that is not a number in 0..65535
        host = None
    if not host:
        raise ClusterUnreachable(f"Ray cluster address {address!r}: expected ray://HOST:PORT or HOST:PORT")
    return host, port or default


def check_reachable(address, timeout):
    """Raise ClusterUnreachable unless something accepts a TCP connection at `address` within `timeout` s."""
    host, port = ray_address(address)
    deadline, error = time.monotonic() + timeout, None
    while True:
        left = deadline - time.monotonic()
        try:
            with socket.create_connection((host, port), timeout=max(0.1, min(2.0, left))):
                return
        except OSError as e:
            error = e
        if left <= 0:
            break
        time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
    raise ClusterUnreachable(f"the Ray cluster at {address} does not answer: no connection to {host}:{port} within "
                             f"{timeout:g} s ({error}). Start it (`ray start --head`, docs/benchmarks.md) or fix "
                             f"CLUSTER / RAY_ADDRESS.")


CONNECT_ATTEMPTS = 3


class Ray:
    """Tasks as Ray tasks on the cluster at `address` (`local`: a private Ray on this machine's loopback with
    `workers` CPUs). The driver ships the checkout (working_dir, without build/) so the workers run this code,
    and points them at this build cache ($INNET_BUILD). A task whose worker dies is retried `retries` times."""
    def __init__(self, address, workers, retries, connect_timeout):
        self.address, self.retries = address, retries
        self.name = f"Ray at {address}"
        if address == "local":
            # Ray resolves 127.0.0.1 to the machine's address unless it believes it is not in a cluster.
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
        else:
            check_reachable(address, connect_timeout)
            if address.startswith("ray://") and "RAY_AUTH_MODE" not in os.environ and _ray_token_available():
                os.environ["RAY_AUTH_MODE"] = "token"       # the Ray Client sends the token only in token mode
        try:
            import ray
        except ImportError as e:
            raise RuntimeError("Ray is not installed in this venv: `make deps` installs it (the `ray` extra)") from e
        self.ray = ray
        runtime_env = {"working_dir": ROOT, "excludes": ["build/", ".git/", ".venv/", "*.vcd", "*.fst"],
                       "env_vars": {"INNET_BUILD": BUILD}}
        kwargs = dict(runtime_env=runtime_env, logging_level="ERROR", log_to_driver=False)
        for attempt in range(CONNECT_ATTEMPTS):
            try:
                if address == "local":
                    ray.init(num_cpus=workers, include_dashboard=False, _node_ip_address="127.0.0.1", **kwargs)
                else:
                    ray.init(address=address, **kwargs)
                break
            except (ConnectionError, TimeoutError) as e:
                # The Ray Client's proxy now and then fails to start the server of a new connection: try again.
                ray.shutdown()
                if attempt == CONNECT_ATTEMPTS - 1:
                    raise ClusterUnreachable(f"the Ray cluster at {address} answers but did not accept the "
                                             f"connection ({CONNECT_ATTEMPTS} attempts): {e}") from e
                time.sleep(1)
        self.remote = ray.remote(_call).options(num_cpus=1, max_retries=retries, retry_exceptions=False)

    def run(self, items, on_status, poll=0.5):
        ray = self.ray
        refs = {self.remote.remote(task, params): (index, params) for index, task, params in items}
        while refs:
            done, _ = ray.wait(list(refs), num_returns=1, timeout=poll)
            on_status({})
            for ref in done:
                index, params = refs.pop(ref)
                try:
                    yield index, ray.get(ref)
                except ray.exceptions.RayError as e:       # the worker died more than `retries` times
                    yield index, {"ok": False, "value": f"{type(e).__name__}: {e}", "wall_s": 0.0, "host": ""}

    def close(self):
        self.ray.shutdown()


def _ray_token_available():
    return bool(os.environ.get("RAY_AUTH_TOKEN") or os.environ.get("RAY_AUTH_TOKEN_PATH")
                or os.path.exists(os.path.expanduser("~/.ray/auth_token")))


_executor = None        # (settings it was made for, executor): one connection per process


def executor():
    """The executor SETTINGS ask for (a Ray connection is made once and kept until `shutdown()`)."""
    global _executor
    cluster = SETTINGS.cluster or os.environ.get("RAY_ADDRESS")
    want = (cluster, SETTINGS.workers, SETTINGS.retries)
    if _executor and _executor[0] == want:
        return _executor[1]
    shutdown()
    if cluster:
        ex = Ray(cluster, SETTINGS.workers, SETTINGS.retries, SETTINGS.connect_timeout)
    elif SETTINGS.workers > 1:
        ex = Pool(SETTINGS.workers, SETTINGS.retries)
    else:
        ex = Serial()
    _executor = (want, ex)
    return ex


def shutdown():
    """Close the executor (disconnects from Ray)."""
    global _executor
    if _executor:
        _executor[1].close()
        _executor = None


# The sweep ------------------------------------------------------------------------------------------------

@dataclass
class Stats:
    """What the last sweep did: points computed, taken from the cache, failed; wall time; executor; `walls`:
    the seconds each point's task took (when it was computed, for a cached point), in the order of the
    points (a task's result holds no times: the same parameters give the same result)."""
    computed: int = 0
    cached: int = 0
    failed: int = 0
    wall_s: float = 0.0
    executor: str = ""
    walls: list = None


last_stats = Stats()


def sweep_stats():
    """The Stats of the last sweep in this process."""
    return last_stats


def sweep(bench, points, desc=None, strict=True, fresh=None):
    """Run every Point of `points` (see the module docstring); returns the results in their order.
    `desc`: the progress bar's label (default: the bench's name); `fresh`: recompute every point (default:
    SETTINGS.fresh)."""
    global last_stats
    t0 = time.monotonic()
    results, walls, keys, todo, first = [None] * len(points), [None] * len(points), [], [], {}
    for i, pt in enumerate(points):
        key = cache_key(bench, pt.task, pt.params, pt.gateware)
        keys.append(key)
        entry = None if (SETTINGS.fresh if fresh is None else fresh) else cached(bench, key)
        if entry is not None:
            results[i] = normalise(entry["result"])
            walls[i] = entry["wall_s"]
        elif key not in first:          # the same point twice in one sweep is computed once
            first[key] = i
            todo.append((i, pt.task, pt.params))
    stats = Stats(cached=sum(r is not None for r in results))
    failures = {}
    ex = executor() if todo else Serial()
    stats.executor = ex.name
    with bar(len(points), desc or bench, unit="point", initial=stats.cached) as progress_bar:
        def on_status(status):
            running = "; ".join(f"{str(points[i])[:60]}: {s}" for i, s in sorted(status.items()))
            progress_bar.set_postfix_str(running[:160])

        for index, outcome in ex.run(todo, on_status):
            pt = points[index]
            walls[index] = outcome["wall_s"]
            if outcome["ok"]:
                results[index] = normalise(outcome["value"])
                _store(bench, keys[index], {"bench": bench, "task": task_name(pt.task), "params": pt.params,
                                            "gateware": pt.gateware, "result": results[index],
                                            "wall_s": outcome["wall_s"], "host": outcome["host"],
                                            "when": time.strftime("%Y-%m-%d %H:%M:%S")})
                stats.computed += 1
            else:
                failures[index] = Failure(pt, outcome["value"])
                print(f"{bench}: point {pt} failed:\n{outcome['value']}", file=sys.stderr, flush=True)
            progress_bar.update(1)
    for i in range(len(points)):                    # duplicates of a point computed in this sweep
        if results[i] is None and i not in failures:
            j = first[keys[i]]
            walls[i] = walls[j]
            if j in failures:
                failures[i] = failures[j]
            else:
                results[i] = results[j]
    stats.failed, stats.walls = len(failures), walls
    stats.wall_s = time.monotonic() - t0
    last_stats = stats
    if failures:
        if strict:
            raise SweepError(bench, [failures[i] for i in sorted(failures)], results)
        for i, f in failures.items():
            results[i] = f
    return results

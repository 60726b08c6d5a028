"""Progress display of long jobs (bench sweeps, board builds, long simulations) with tqdm.

Bars are drawn only when their stream is a terminal: in CI logs and redirected output they stay silent
(`enabled()`), so logs keep only the jobs' own lines.

* `bar(total, desc, unit)`: a tqdm bar on stderr (a silent one when stderr is not a terminal).
* `Stages(log_paths, stages, desc)`: follows the logs a tool writes (yosys, nextpnr) in a thread and shows
  the stage reached (the last of `stages`, (name, regex), whose regex matched a log line) and the elapsed
  time; `with Stages(...) as s:` around the run; `s.stage` is the stage reached.
* `output_to(log_path)`: sends this process's file descriptors 1 and 2 (and so the output of the tools it
  runs) to a log file while a bar is drawn on the terminal instead.
"""
import contextlib
import os
import os
import re
import sys
import threading
import time

from tqdm import tqdm


def enabled(stream=None):
    """Whether to draw progress on `stream` (default stderr): only on a terminal."""
    stream = stream or sys.stderr
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def bar(total, desc, unit="it", stream=None, disable_if=False, **kwargs):
    """A tqdm bar on `stream` (stderr), disabled (silent, a no-op) unless it is a terminal (or if `disable_if`)."""
    stream = stream or sys.stderr
    on = not disable_if and enabled(stream)
    # A pseudo-terminal without a size (`script` run from a non-terminal) reports 0 x 0: tqdm would hide every
    # bar below its 0 rows, so such a terminal gets 100 x 24.
    sized = on and _columns(stream) > 0
    return tqdm(total=total, desc=desc, unit=unit, file=stream, disable=not on, dynamic_ncols=sized,
                **({} if sized else dict(ncols=100, nrows=24)), **kwargs)


def _columns(stream):
    try:
        return os.get_terminal_size(stream.fileno()).columns
    except (AttributeError, ValueError, OSError):
        return 0


class Stages:
    """Shows which of `stages` ((name, regex) in order) a tool run has reached by following `log_paths`
    (files that may not exist yet), with the elapsed time, on `stream` (stderr) when it is a terminal and
    `show`. `on_stage(text)` is called at each new stage with "<stage> (<elapsed>)" (also when nothing is
    drawn: a sweep task passes it on to its sweep's bar)."""
    def __init__(self, log_paths, stages, desc, stream=None, on_stage=None, interval=0.5, show=True):
        self.paths, self.stages, self.interval = list(log_paths), [(n, re.compile(r)) for n, r in stages], interval
        self.on_stage, self.stage, self.reached = on_stage, None, -1
        self.bar = bar(len(stages), desc, unit="stage", stream=stream, disable_if=not show,
                       bar_format="{desc}: {n_fmt}/{total_fmt} stages |{bar}| {elapsed} {postfix}")
        self._stop = threading.Event()
        self._offsets = {}

    def __enter__(self):
        self.t0 = time.monotonic()
        self._thread = threading.Thread(target=self._follow, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()
        self._scan()
        self.bar.close()

    def _scan(self):
        for path in self.paths:
            try:
                with open(path, errors="replace") as f:
                    f.seek(self._offsets.get(path, 0))
                    text = f.read()
                    self._offsets[path] = f.tell()
            except OSError:
                continue
            for line in text.splitlines():
                for k in range(self.reached + 1, len(self.stages)):
                    if self.stages[k][1].search(line):
                        self._advance(k)

    def _advance(self, k):
        self.reached, self.stage = k, self.stages[k][0]
        self.bar.n = k + 1
        self.bar.set_postfix_str(self.stage)
        if self.on_stage:
            self.on_stage(f"{self.stage} ({time.monotonic() - self.t0:.0f} s)")

    def _follow(self):
        while not self._stop.wait(self.interval):
            self._scan()
            self.bar.refresh()


@contextlib.contextmanager
def output_to(log_path):
    """Redirect fds 1 and 2 into `log_path` (LiteX and the tools it runs write there); yields a stream on
    the terminal's stderr for the bar. Restored on exit, also on an exception."""
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    term = os.fdopen(os.dup(saved[1]), "w")
    with open(log_path, "w") as log:
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            yield term
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            for fd in saved:
                os.close(fd)
            term.close()

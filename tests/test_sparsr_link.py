"""MigenLink (sim.models.sparsr_link) under forced thread interleavings: a peek issued after a frame sees that
frame, wherever the host's calls land between the simulation thread's looks at the link's queues.

The host (this test's thread) and the simulation thread share the link's queues. `_RacingQueue` stands in
for `queue.Queue` inside the link module: the n-th time the simulation thread finds a queue empty, it stops
right there and the host sends a frame and asks for a peek; only once both requests are queued does the
simulation thread go on with what it saw. Sweeping n puts the host's calls at every point of the link's
polling loop, deterministically (no timing involved).
"""
import queue
import threading
from types import SimpleNamespace

import pytest
from migen import If, Signal

from litex.gen import LiteXModule
from litex.soc.interconnect import stream

import sim.models.sparsr_link as sparsr_link
from sim.models.sparsr_link import MigenLink

WAIT_S = 30


class FrameCounter(LiteXModule):
    """Takes a word every cycle and counts frames (words with `last`); `idle` between frames."""
    def __init__(self):
        self.sink = stream.Endpoint([("data", 32)])
        self.source = stream.Endpoint([("data", 32)])
        self.frames = Signal(32)
        self.idle = Signal()
        inside = Signal()
        self.comb += [self.sink.ready.eq(1), self.idle.eq(~inside)]
        self.sync += If(self.sink.valid,
            inside.eq(~self.sink.last),
            If(self.sink.last, self.frames.eq(self.frames + 1)),
        )


class _Interleaver:
    """Counts the simulation thread's observations of an empty queue; at observation `n` it lets the host
    go and waits until the host has queued `puts` requests."""
    def __init__(self, n, puts=2):
        self.n, self.puts = n, puts
        self.seen = self.host_puts = 0
        self.go = threading.Event()
        self.cond = threading.Condition()

    def observed_empty(self):
        self.seen += 1
        if self.seen != self.n:
            return
        self.go.set()
        with self.cond:
            if not self.cond.wait_for(lambda: self.host_puts >= self.puts, timeout=WAIT_S):
                raise RuntimeError("the host did not queue its requests")

    def host_put(self):
        with self.cond:
            self.host_puts += 1
            self.cond.notify_all()


def _racing_queue(sched):
    host = threading.main_thread()

    class _RacingQueue(queue.Queue):
        def put(self, item, block=True, timeout=None):
            super().put(item, block, timeout)
            if threading.current_thread() is host:
                sched.host_put()

        def get(self, block=True, timeout=None):
            try:
                return super().get(block, timeout)
            except queue.Empty:
                if not block and threading.current_thread() is not host:
                    sched.observed_empty()
                raise

        def empty(self):
            result = super().empty()
            if result and threading.current_thread() is not host:
                sched.observed_empty()
            return result

    return _RacingQueue


@pytest.mark.parametrize("n", range(1, 13))
def test_peek_after_frame_sees_the_frame(monkeypatch, n):
    """Host calls send_frame then peek at the simulation thread's n-th look at an empty queue: the peek must
    count the frame (the first of two; the second is sent after the first peek returned)."""
    sched = _Interleaver(n)
    monkeypatch.setattr(sparsr_link, "queue", SimpleNamespace(Queue=_racing_queue(sched), Empty=queue.Empty))
    dut = FrameCounter()
    link = MigenLink(dut, seed=n)
    try:
        assert sched.go.wait(WAIT_S), "the simulation thread never found its queues empty"
        link.send_frame([1, 2, 3])
        assert link.peek([dut.frames]) == [1]
        link.send_frame([4, 5])
        assert link.peek([dut.frames]) == [2]
        assert link.words_in == 5
    finally:
        link.close()

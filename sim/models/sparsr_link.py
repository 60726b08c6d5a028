"""A Sparsr link in Migen's simulator: `MigenLink` drives a `SparsrReceiver` (or anything with a word
sink/source and `idle`) in a simulation run in a thread, with seeded random valid/ready back-pressure, behind
the host's link interface (`send_frame(words)` / `recv_frame() -> words`, see software/sparsr/links.py);
for tests and the benchmark.
"""
import queue
import random
import threading
import time

from migen.sim import run_simulation

from software.sparsr.links import LinkTimeout


class MigenLink:
    """Simulated link. valid_prob/ready_prob: per-cycle probability that the host offers a word / takes
    an answer word. `cycles` counts simulated cycles, `words_in` the words accepted by the sink."""
    def __init__(self, dut, seed=0, valid_prob=1.0, ready_prob=1.0, timeout=120.0, vcd_name=None):
        self.dut, self.timeout = dut, timeout
        self.rng = random.Random(seed)
        self.valid_prob, self.ready_prob = valid_prob, ready_prob
        self.txq, self.rxq = queue.Queue(), queue.Queue()
        self.peekq, self.peek_answers = queue.Queue(), queue.Queue()
        self.stop = threading.Event()
        self.cycles = self.words_in = 0
        self.first_word_cycle = self.last_word_cycle = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(vcd_name,), daemon=True)
        self.thread.start()

    def _run(self, vcd_name):
        try:
            run_simulation(self.dut, [self._tx(), self._rx()], vcd_name=vcd_name)
        except BaseException as e:       # surfaced by recv_frame
            self.error = e

    def _tx(self):
        sink = self.dut.sink
        words = []
        idle = 0
        while not self.stop.is_set():
            if not words:
                try:
                    words = list(self.txq.get_nowait())
                except queue.Empty:
                    yield sink.valid.eq(0)
                    yield
                    self.cycles += 1
                    idle += 1
                    if idle > 2 and self.txq.empty() and not self.peekq.empty() and (yield self.dut.idle):
                        signals = self.peekq.get()
                        values = []
                        for sig in signals:
                            values.append((yield sig))
                        self.peek_answers.put(values)
                    continue
            idle = 0
            offer = self.rng.random() < self.valid_prob
            yield sink.valid.eq(int(offer))
            yield sink.data.eq(words[0])
            yield sink.last.eq(int(len(words) == 1))
            yield
            self.cycles += 1
            if offer and (yield sink.ready):
                words.pop(0)
                self.words_in += 1
                if self.first_word_cycle is None:
                    self.first_word_cycle = self.cycles
                self.last_word_cycle = self.cycles
        yield sink.valid.eq(0)

    def _rx(self):
        source = self.dut.source
        words = []
        while not self.stop.is_set():
            take = self.rng.random() < self.ready_prob
            yield source.ready.eq(int(take))
            yield
            if take and (yield source.valid):
                words.append((yield source.data))
                if (yield source.last):
                    self.rxq.put(words)
                    words = []

    def send_frame(self, words):
        self.txq.put(list(words))

    def recv_frame(self):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            try:
                return self.rxq.get(timeout=0.05)
            except queue.Empty:
                continue
        raise LinkTimeout("no answer frame from the simulated card")

    def peek(self, signals):
        """Values of `signals` once every queued frame went in and the card is `idle`."""
        self.peekq.put(list(signals))
        while True:
            if self.error is not None:
                raise self.error
            try:
                return self.peek_answers.get(timeout=0.05)
            except queue.Empty:
                continue

    def input_rate(self):
        """Words accepted per cycle between the first and the last accepted word."""
        return self.words_in / (self.last_word_cycle - self.first_word_cycle + 1)

    def close(self):
        self.stop.set()
        self.thread.join()

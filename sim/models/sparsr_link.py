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
    an answer word. `cycles` counts simulated cycles, `words_in` the words accepted by the sink.

    The host's requests (frames to send, peeks) go through one queue and are served in the order they
    were made, so a peek always sees the frames sent before it."""
    def __init__(self, dut, seed=0, valid_prob=1.0, ready_prob=1.0, timeout=120.0, vcd_name=None):
        self.dut, self.timeout = dut, timeout
        self.rng = random.Random(seed)
        self.valid_prob, self.ready_prob = valid_prob, ready_prob
        self.requests, self.rxq = queue.Queue(), queue.Queue()
        self.stop = threading.Event()
        self.cycles = self.words_in = 0
        self.first_word_cycle = self.last_word_cycle = None
        self.error = None
        self.thread = threading.Thread(target=self._run, args=(vcd_name,), daemon=True)
        self.thread.start()

    def _run(self, vcd_name):
        try:
            run_simulation(self.dut, [self._tx(), self._rx()], vcd_name=vcd_name)
        except BaseException as e:       # surfaced by recv_frame / peek
            self.error = e

    def _tx(self):
        """Serves the requests in order: a frame is offered word by word; a peek waits until the card is
        idle (and at least 3 cycles after the last word offered), then reads its signals."""
        sink = self.dut.sink
        idle = 0                         # cycles since the last word offered
        while not self.stop.is_set():
            try:
                request = self.requests.get_nowait()
            except queue.Empty:
                yield sink.valid.eq(0)
                yield
                self.cycles += 1
                idle += 1
                continue
            if request[0] == "frame":
                yield from self._send(request[1])
                idle = 0
                continue
            _, signals, reply = request
            while not self.stop.is_set() and not (idle > 2 and (yield self.dut.idle)):
                yield sink.valid.eq(0)
                yield
                self.cycles += 1
                idle += 1
            values = []
            for sig in signals:
                values.append((yield sig))
            reply.put(values)
        yield sink.valid.eq(0)

    def _send(self, words):
        sink = self.dut.sink
        words = list(words)
        while words and not self.stop.is_set():
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

    def _wait(self, q, what):
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            if self.error is not None:
                raise self.error
            try:
                return q.get(timeout=0.05)
            except queue.Empty:
                continue
        raise LinkTimeout(f"no {what} from the simulated card")

    def send_frame(self, words):
        self.requests.put(("frame", list(words)))

    def recv_frame(self):
        return self._wait(self.rxq, "answer frame")

    def peek(self, signals):
        """Values of `signals` once every frame sent before went in and the card is `idle`."""
        reply = queue.Queue()
        self.requests.put(("peek", list(signals), reply))
        return self._wait(reply, "peek answer")

    def input_rate(self):
        """Words accepted per cycle between the first and the last accepted word."""
        return self.words_in / (self.last_word_cycle - self.first_word_cycle + 1)

    def close(self):
        self.stop.set()
        self.thread.join()

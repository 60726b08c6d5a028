"""SkidBuffer and RegisteredBuffer (between each port and the engine, before the accumulator bank, before the
payload stage): every word once and in order under seeded random valid/ready, and one word per cycle when the
consumer is always ready."""
import random

import pytest

from migen import *

from cores.lib.buffers import RegisteredBuffer, SkidBuffer


def _run(cls, seed, n, valid_p, ready_p):
    rng = random.Random(seed)
    dut = cls([("data", 16)])
    sent, got, cycles = [], [], [0]

    def producer():
        word = 0
        while word < n:
            v = rng.random() < valid_p
            yield dut.sink.valid.eq(v)
            yield dut.sink.data.eq(word)
            yield dut.sink.last.eq(word % 5 == 4)
            yield
            if v and (yield dut.sink.ready):
                sent.append(word)
                word += 1
        yield dut.sink.valid.eq(0)

    def consumer():
        while len(got) < n:
            r = rng.random() < ready_p
            yield dut.source.ready.eq(r)
            yield
            cycles[0] += 1
            if r and (yield dut.source.valid):
                got.append(((yield dut.source.data), (yield dut.source.last)))
            assert cycles[0] < 20 * n

    run_simulation(dut, [producer(), consumer()])
    return sent, got, cycles[0]


@pytest.mark.parametrize("cls", [SkidBuffer, RegisteredBuffer])
def test_order_and_contents_under_backpressure(cls):
    for seed in range(4):
        sent, got, _ = _run(cls, seed, 400, 0.7, 0.6)
        assert [d for d, _ in got] == sent == list(range(400))
        assert all(last == (d % 5 == 4) for d, last in got)


@pytest.mark.parametrize("cls", [SkidBuffer, RegisteredBuffer])
def test_one_word_per_cycle(cls):
    sent, got, cycles = _run(cls, 7, 300, 1.0, 1.0)
    assert [d for d, _ in got] == list(range(300))
    assert cycles <= 300 + 3

"""SkidBuffer and RegisteredBuffer (between each port and the engine, before the accumulator bank, before the
payload stage): every word once and in order under seeded random valid/ready, and one word per cycle when the
consumer is always ready."""
import random

import pytest

from migen import *

from cores.lib.buffers import RegisteredBuffer, SkidBuffer
from tests.harness.streams import collect, send


def _run(cls, seed, n, valid_p, ready_p):
    rng = random.Random(seed)
    dut = cls([("data", 16)])
    got, times = [], []

    def feed():
        yield from send(dut.sink, [{"data": w, "last": w % 5 == 4} for w in range(n)], rng, valid_p)
        for _ in range(20 * n):
            if len(got) == n:
                break
            yield

    run_simulation(dut, [feed(), collect(dut.source, got, rng, ["data", "last"], ready_p, times)])
    return got, times


@pytest.mark.parametrize("cls", [SkidBuffer, RegisteredBuffer])
def test_order_and_contents_under_backpressure(cls):
    for seed in range(4):
        got, _ = _run(cls, seed, 400, 0.7, 0.6)
        assert [g["data"] for g in got] == list(range(400))
        assert all(g["last"] == (g["data"] % 5 == 4) for g in got)


@pytest.mark.parametrize("cls", [SkidBuffer, RegisteredBuffer])
def test_one_word_per_cycle(cls):
    got, times = _run(cls, 7, 300, 1.0, 1.0)
    assert [g["data"] for g in got] == list(range(300))
    assert times[-1] - times[0] == 299                  # no gap

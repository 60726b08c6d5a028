"""SkidBuffer and RegisteredBuffer (between each port and the engine, before the accumulator bank, before the
payload stage) and BlockRAMFIFO (the RIFL receive buffer): every word once and in order under seeded random
valid/ready, and one word per cycle when the consumer is always ready; the FIFO's level, latency and clock
enable."""
import random

import pytest

from migen import *

from litex.soc.interconnect import stream

from cores.lib.buffers import BlockRAMFIFO, RegisteredBuffer, SkidBuffer
from tests.harness.streams import collect, send


def _fifo(layout):
    return BlockRAMFIFO(layout, 12)


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


@pytest.mark.parametrize("cls", [SkidBuffer, RegisteredBuffer, _fifo])
def test_order_and_contents_under_backpressure(cls):
    for seed in range(4):
        got, _ = _run(cls, seed, 400, 0.7, 0.6)
        assert [g["data"] for g in got] == list(range(400))
        assert all(g["last"] == (g["data"] % 5 == 4) for g in got)


@pytest.mark.parametrize("cls", [SkidBuffer, RegisteredBuffer, _fifo])
def test_one_word_per_cycle(cls):
    got, times = _run(cls, 7, 300, 1.0, 1.0)
    assert [g["data"] for g in got] == list(range(300))
    assert times[-1] - times[0] == 299                  # no gap


def test_fifo_level_and_latency():
    """BlockRAMFIFO: a word taken at cycle t is on source at t + 4; it holds `depth` words in its RAM and
    `out_depth` in its small FIFO, and `level` counts every word taken and not delivered."""
    dut = BlockRAMFIFO([("data", 8)], 8)
    rng = random.Random(1)
    t_in, t_out, got = [], [], []

    def feed():
        yield from send(dut.sink, [{"data": 5, "last": 0}], rng, times=t_in)
        for _ in range(10):
            yield
    run_simulation(dut, [feed(), collect(dut.source, got, rng, ["data"], 1.0, t_out)])
    assert t_out[0] - t_in[0] == 4

    dut = BlockRAMFIFO([("data", 8)], 8)
    res = {}

    def fill():                               # the consumer is never ready
        yield dut.sink.valid.eq(1)
        for _ in range(20):
            yield
        res["level"], res["ready"] = (yield dut.level), (yield dut.sink.ready)
    run_simulation(dut, fill())
    assert res == {"level": 8 + 4, "ready": 0}


class _GatedFIFO(Module):
    """A BlockRAMFIFO under a CEInserter whose clock enable `ce` is also its RAM's read enable; the streams
    take a word only in enabled cycles (as RIFLSerDesLink does for its endpoint)."""
    def __init__(self, layout):
        self.ce = ce = Signal()
        self.sink = sink = stream.Endpoint(layout)
        self.source = source = stream.Endpoint(layout)
        self.submodules.fifo = fifo = CEInserter()(BlockRAMFIFO(layout, 8, re=ce))
        self.comb += [
            fifo.ce.eq(ce),
            sink.connect(fifo.sink, omit={"valid", "ready"}),
            fifo.sink.valid.eq(sink.valid & ce), sink.ready.eq(fifo.sink.ready & ce),
            fifo.source.connect(source, omit={"valid", "ready"}),
            source.valid.eq(fifo.source.valid & ce), fifo.source.ready.eq(source.ready & ce),
        ]


def test_fifo_under_clock_enable():
    """Under a CEInserter with its RAM's read enable tied to the clock enable, every word once and in order."""
    rng = random.Random(3)
    dut = _GatedFIFO([("data", 16)])
    got = []

    def enable():
        yield "passive"
        while True:
            yield dut.ce.eq(rng.random() < 0.4)
            yield

    def feed():
        yield from send(dut.sink, [{"data": w, "last": 0} for w in range(200)], rng, 0.8)
        for _ in range(4000):
            if len(got) == 200:
                break
            yield

    run_simulation(dut, [enable(), feed(), collect(dut.source, got, rng, ["data"], 0.7)])
    assert [g["data"] for g in got] == list(range(200))

"""Switch SoC block driven through its CSR signals: load points, line rate, counters, restart."""
from migen import Module
from migen.sim import run_simulation

from cores.switch.soc_block import SwitchBlock
from software.switch.demo import demo, summarise
from tests.harness.csr import run_demo


class CSRHarness(Module):
    """The block with its CSRs finalised on a 32-bit bus, so tests drive the same simple CSR words
    (`r`/`re` to write, `w` to read) that the CSR bank drives in the SoC."""
    def __init__(self, block):
        self.submodules.block = block
        self.csrs = {}
        for csr in block.get_csrs():
            csr.finalize(32, "big")
            self.submodules += csr
            self.csrs[csr.name] = csr


def write(h, name, value):
    words = h.csrs[name].simple_csrs                       # most significant word first
    for k, sc in enumerate(reversed(words)):
        yield sc.r.eq((value >> (32 * k)) & 0xFFFFFFFF)
        yield sc.re.eq(1)
    yield
    for sc in words:
        yield sc.re.eq(0)


def read(h, name):
    value = 0
    for sc in h.csrs[name].simple_csrs:
        value = (value << 32) | (yield sc.w)
    return value


def read_all(h):
    out = {}
    for name in ("cycles", "tx_cells", "rx_cells", "lat_sum", "lat_max", "errors", "drops", "collisions"):
        out[name] = yield from read(h, name)
    return out


def run_point(h, threshold, offset, duration, results, cap=20000):
    yield from write(h, "load", threshold)
    yield from write(h, "pattern", offset)
    yield from write(h, "duration", duration)
    yield from write(h, "control", 1)                 # start (pulse field)
    while not (yield from read(h, "status")) & 2:     # running
        yield
    for _ in range(cap):
        if (yield from read(h, "status")) & 1:
            break
        yield
    assert (yield from read(h, "status")) & 1
    results.append((yield from read_all(h)))


def test_soc_block_load_points():
    b = SwitchBlock(n=4, data_width=512, voq_cells=8, iterations=1)
    h = CSRHarness(b)
    beats = b.switch.beats
    duration = 200
    slots = duration // beats
    results = []

    def gen():
        yield from run_point(h, 1 << 16, 1, duration, results)       # full load, a permutation: line rate
        yield from run_point(h, 1 << 15, 0, duration, results)       # half load, uniform destinations
        yield from run_point(h, 0, 0, duration, results)             # nothing offered
    run_simulation(h, gen())
    full, half, none = results
    for r in results:
        assert r["errors"] == 0 and r["drops"] == 0 and r["collisions"] == 0
        assert r["rx_cells"] == r["tx_cells"]
    # Full load through a permutation: every input sends in every cell time of the run.
    assert abs(full["tx_cells"] - 4 * slots) <= 4
    s = summarise(full, ports=4, beats=beats, duration=duration)
    assert s["throughput"] > 0.9 and s["mean_latency_cells"] >= 1
    # Half load: binomial(4 * slots, 0.5) cells, well inside 5 sigma.
    assert abs(half["tx_cells"] - 2 * slots) <= 5 * (slots ** 0.5)
    assert half["lat_max"] >= half["lat_sum"] / max(1, half["rx_cells"])
    assert none["tx_cells"] == 0 and none["lat_sum"] == 0          # counters cleared by the start


def test_demo_through_csr_bank():
    """The host demo over the CSR bus of LiteX's CSRBankArray, as in the SoC."""
    lines, bus = run_demo(SwitchBlock(n=4, data_width=512, voq_cells=8, iterations=1), "switch",
                          lambda bus: demo(bus, cell_times=20))
    assert len(lines) == 4 and "4 ports" in lines[0]
    assert bus.accesses > 0

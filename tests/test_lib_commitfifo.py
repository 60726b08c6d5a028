"""CommitFIFO (the ingress payload/raw-frame buffer): commit/abort against a Python model under random read
back-pressure (the writer keeps at most depth - 1 entries unread, so no write is refused: overflow is
covered by the core tests), one entry per cycle on its output when the reader is always ready, and the
block RAMs' synthesis marks."""
import random

from migen import run_simulation

from cores.lib.commit_fifo import CommitFIFO
from tests.harness.streams import collect


def _run(seed, n_cycles, ready_p, frame_p):
    rng = random.Random(seed)
    dut = CommitFIFO(16, 16)
    published, got, written = [], [], [0]

    def writer():
        pending, frame_left, word = [], 0, 0
        for _ in range(n_cycles):
            # written and not yet read (abandoned writes counted too: a bound, the RAM holds fewer)
            we = rng.random() < frame_p and written[0] - len(got) < 15
            commit = abort = 0
            if frame_left == 0 and pending:
                commit, abort = (1, 0) if rng.random() < 0.7 else (0, 1)
            yield dut.we.eq(we)
            yield dut.din.eq(word)
            yield dut.commit.eq(commit)
            yield dut.abort.eq(abort)
            yield
            if commit:
                published.extend(pending)
                pending = []
            elif abort:
                written[0] -= len(pending)
                pending = []
            if we:
                pending.append(word)
                written[0] += 1
            word = (word + 1) & 0xFFFF
            frame_left = rng.randrange(8) if frame_left == 0 else frame_left - 1
        yield dut.we.eq(0)
        yield dut.commit.eq(0)
        yield dut.abort.eq(0)

    def drain():
        yield from writer()
        for _ in range(200):
            yield

    run_simulation(dut, [drain(), collect(dut.source, got, rng, ["data"], ready_p)])
    return published, [g["data"] for g in got]


def test_commit_abort_random_backpressure():
    published, got = _run(seed=3, n_cycles=3000, ready_p=0.3, frame_p=0.8)
    assert len(published) > 500
    assert got == published


def test_one_entry_per_cycle():
    """A committed burst leaves the FIFO one entry per cycle when the reader is always ready."""
    dut = CommitFIFO(16, 64)
    got = []

    def gen():
        yield dut.source.ready.eq(1)
        for i in range(40):
            yield dut.we.eq(1)
            yield dut.din.eq(i)
            yield
        yield dut.we.eq(0)
        yield dut.commit.eq(1)
        yield
        yield dut.commit.eq(0)
        for cyc in range(60):
            yield
            if (yield dut.source.valid):
                got.append((cyc, (yield dut.source.data)))

    run_simulation(dut, gen())
    assert [d for _, d in got] == list(range(40))
    assert got[-1][0] - got[0][0] == 39        # no gap: 40 entries in 40 consecutive cycles


def test_block_rams_need_no_read_during_write_logic():
    """The CommitFIFO's and the accumulator bank's memories reach synthesis marked `no_rw_check`, with an
    asynchronous read (the read register is the block RAM's own): without the mark, yosys adds a bypass
    register as wide as the RAM and a multiplexer after it (the 8-bit build's worst paths)."""
    import re
    from migen.fhdl.verilog import convert
    from cores.minisharp.accumulator import MSAccumulatorBank
    for dut, width in ((CommitFIFO(16, 64), 16), (MSAccumulatorBank(lanes=1, depth=256, max_ranks=64), None)):
        v = str(convert(dut, name="dut"))
        mems = re.findall(r"(\(\* no_rw_check = 1 \*\)\s*)?reg \[(\d+):0\] (\w+)\[0:(\d+)\];", v)
        big = [m for m in mems if int(m[3]) >= 63]
        assert len(big) == 1, mems
        mark, msb, name, _ = big[0]
        assert mark, f"{name} is not marked no_rw_check"
        assert width is None or int(msb) == width - 1
        # the read port's address is a plain signal (the write port's unused read data has Migen's memadr)
        reads = re.findall(rf"assign \w+ = {name}\[(\w+)\];", v)
        assert [r for r in reads if not r.startswith("memadr")], reads

"""SparsrBlock (SoC block) behind a real CSR bank, with its Wishbone window mapped as a memory region
(tests.harness.csr), driven in the Migen simulator by the same host code that runs over Etherbone
(EtherboneLink, Sparsr API, demo); and the benchmark's quick mode."""
import random

from cores.sparsr.common import STATUS_COUNTERS, WINDOW_BYTES
from cores.sparsr.soc_block import SparsrBlock
from software.sparsr.api import Sparsr
from software.sparsr.demo import demo
from software.sparsr.rows import random_row
from software.sparsr.links import EtherboneLink
from tests.harness.csr import run_demo

WINDOW_BASE = 0x10000          # any WINDOW_BYTES-aligned base: EtherboneLink finds it in bus.mems


def test_block_through_csrs_and_window():
    """The demo, then a row through XMEM and the DMA read back, then the counters both as the status answer
    and as the receiver's CSRs (sparsr_receiver_<counter>)."""
    block = SparsrBlock(wmem_rows=4, xmem_rows=2)
    row = random_row(random.Random(4), 30)

    def host(bus):
        lines = demo(bus, n_rows=2, seed=3)
        api = Sparsr(EtherboneLink(bus), 4, 2)
        api.write_xmem(1, [row])
        api.dma_xmem_to_wmem(1, 3, 1)
        back = api.read_wmem(3, 1)
        status = api.status()
        csrs = {n: getattr(bus.regs, f"sparsr_receiver_{n}").read() for n in STATUS_COUNTERS}
        return lines, back, status, csrs

    (lines, back, status, csrs), bus = run_demo(block, "sparsr", host,
                                                mems={"sparsr": (block.bus, WINDOW_BASE, WINDOW_BYTES)})
    assert lines[0].startswith("sparsr: 2 rows") and "OK" in lines[0]
    assert back == [row]
    assert csrs == status
    assert status["frames_ok"] > 0 and status["slots_stored"] >= 3
    assert status["slots_refused_row"] == 1                   # the demo's row past the end of XMEM
    assert not any(v for k, v in status.items() if k.startswith("refused"))
    assert bus.mem_accesses > 0 and bus.accesses > 0


def test_bench_quick():
    from sim.bench.bench_sparsr import run
    result = run(quick=True)
    rate = result.data["input_rate"]
    assert rate == 1.0
    assert result.data["efficiency"][0]["lil"] > result.data["efficiency"][0]["raw"]

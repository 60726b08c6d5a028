"""SparsrBlock (SoC block) driven through its CSRs and Wishbone window in the Migen simulator, by the same
host code that runs over Etherbone (EtherboneLink, Sparsr API, demo); and the benchmark's quick mode."""
import queue
import random
import threading
from types import SimpleNamespace

from migen.sim import run_simulation

from cores.sparsr.soc_block import SparsrBlock
from software.sparsr.demo import demo, random_row
from software.sparsr.api import Sparsr
from software.sparsr.links import EtherboneLink


class SimBus:
    """A software.client.InnetClient look-alike on a simulated block: regs.<name>_<csr>.read()/write(),
    read(addr, n), write(addr, words); byte addresses, the block's window at 0."""
    def __init__(self, block, name="sparsr"):
        self.block, self.ops, self.results = block, queue.Queue(), queue.Queue()
        self.stop = threading.Event()
        regs = {}
        for csr in ("tx_go", "rx_pop", "status", "config"):
            regs[f"{name}_{csr}"] = SimpleNamespace(read=lambda c=csr: self._do(("csr_r", c)),
                                                    write=lambda v, c=csr: self._do(("csr_w", c, v)))
        self.regs = SimpleNamespace(**regs)
        self.mems = SimpleNamespace(**{name: SimpleNamespace(base=0)})
        self.thread = threading.Thread(target=lambda: run_simulation(block, self._gen()), daemon=True)
        self.thread.start()

    def _do(self, op):
        self.ops.put(op)
        result = self.results.get(timeout=600)
        if isinstance(result, BaseException):
            raise result
        return result

    def read(self, addr, n):
        return self._do(("mem_r", addr, n))

    def write(self, addr, words):
        return self._do(("mem_w", addr, list(words)))

    def _gen(self):
        b = self.block
        while not self.stop.is_set():
            try:
                op = self.ops.get_nowait()
            except queue.Empty:
                yield
                continue
            if op[0] == "csr_r":
                # A CSRStatus is wired to its fields by the SoC's CSR bank; standalone, read the fields.
                csr = getattr(b, op[1])
                result = 0
                for f in csr.fields.fields:
                    result |= (yield getattr(csr.fields, f.name)) << f.offset
            elif op[0] == "csr_w":
                csr = getattr(b, op[1])
                yield csr.storage.eq(op[2])
                yield csr.re.eq(1)
                yield
                yield csr.re.eq(0)
                result = None
            elif op[0] == "mem_w":
                for i, w in enumerate(op[2]):
                    yield from b.bus.write(op[1] // 4 + i, w)
                result = None
            else:
                result = []
                for i in range(op[2]):
                    result.append((yield from b.bus.read(op[1] // 4 + i)))
            yield
            self.results.put(result)

    def close(self):
        self.stop.set()
        self.thread.join()


def test_block_through_csrs_and_window():
    bus = SimBus(SparsrBlock(wmem_rows=4, xmem_rows=2))
    try:
        lines = demo(bus, n_rows=2, seed=3)
        assert lines[0].startswith("sparsr: 2 rows") and "OK" in lines[0]
        api = Sparsr(EtherboneLink(bus), 4, 2)
        row = random_row(random.Random(4), 30)
        api.write_xmem(1, [row])
        api.dma_xmem_to_wmem(1, 3, 1)
        assert api.read_wmem(3, 1) == [row]
        assert api.status()["frames_ok"] > 0
    finally:
        bus.close()


def test_bench_quick():
    from sim.bench.bench_sparsr import run
    result = run(quick=True)
    rate = result.data["input_rate"]
    assert rate == 1.0
    assert result.data["efficiency"][0]["lil"] > result.data["efficiency"][0]["raw"]

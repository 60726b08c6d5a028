"""Run a core's host demo (`software.<core>.demo.demo(bus)`) against a SoC block in the Migen simulator.

`BankedBlock` registers the block under its SoC name behind LiteX's CSRBankArray with the SoC's settings
(32-bit CSR bus, paging 0x800, big-endian ordering), so compound CSRs (wider than 32 bits) and the banks'
own logic are in the design, as in the SoC. `SimBus` gives the demo `bus.regs.<name>.read()/write(value)`
as LiteX's RemoteClient does and, for a block with Wishbone slaves mapped as SoC memory regions (`mems`),
`bus.read(addr, n)` / `bus.write(addr, words)` and `bus.mems.<name>.base/size` as software.client's
InnetClient does. Every access is served by the simulation, in the order the host made them, as CSR-bus
transactions or Wishbone cycles, so simulated time advances only while the host accesses the bus.
`run_demo()` runs the host function in a thread beside the simulation and re-raises its exception.
"""
import queue
import threading
from types import SimpleNamespace

from migen.sim import run_simulation

from litex.gen import LiteXModule
from litex.soc.interconnect import csr_bus

CSR_DATA_WIDTH = 32
CSR_PAGING = 0x800
CSR_ADDRESS_WIDTH = 14


class BankedBlock(LiteXModule):
    """`block` mapped as `name` at CSR bank `mapaddr`. `addrs[f"{name}_{csr}"]` lists the bus addresses of
    each CSR, most significant word first."""
    def __init__(self, block, name, mapaddr=5):
        setattr(self, name, block)
        self.csr_bankarray = csr_bus.CSRBankArray(self, lambda n, memory: mapaddr if n == name else None,
                                                  data_width=CSR_DATA_WIDTH, address_width=CSR_ADDRESS_WIDTH,
                                                  paging=CSR_PAGING, ordering="big")
        self.bus = self.csr_bankarray.get_buses()[0]
        (bank_name, csrs, base, bank), = self.csr_bankarray.banks
        words_per_page = CSR_PAGING // (CSR_DATA_WIDTH // 8)
        self.addrs = {f"{bank_name}_{c.name}": [base * words_per_page + bank.simple_csrs.index(s)
                                                for s in c.get_simple_csrs()]
                      for c in csrs}


def read_cycles(bus, adr):
    """Simulation generator: one CSR-bus read (two cycles); returns the word."""
    yield bus.adr.eq(adr)
    yield bus.re.eq(1)
    yield
    yield bus.re.eq(0)
    yield
    return (yield bus.dat_r)


def write_cycles(bus, writes):
    """Simulation generator: CSR-bus writes [(adr, value)], one a cycle, then one idle cycle."""
    for adr, value in writes:
        yield bus.adr.eq(adr)
        yield bus.dat_w.eq(value)
        yield bus.we.eq(1)
        yield
    yield bus.we.eq(0)
    yield


class SimBus:
    """`bus.regs.<name>.read()/write(value)` served by `serve()` inside the simulation; `accesses` counts
    CSR-bus transactions (a read takes two cycles, a write three: its effects, pulses included, are
    visible to the next access). mems: {region name: (wishbone.Interface, base, size)}: byte addresses
    base..base+size-1 reach that slave at word address (address - base) / 4; `mem_accesses` counts its
    Wishbone cycles."""
    def __init__(self, addrs, timeout=600, mems=None):
        self.requests, self.replies = queue.Queue(), queue.Queue()
        self.timeout = timeout
        self.accesses = self.mem_accesses = 0
        self.regs = SimpleNamespace(**{n: SimpleNamespace(read=lambda a=a: self._read(a),
                                                          write=lambda v, a=a: self._write(a, v))
                                       for n, a in addrs.items()})
        self.windows = list((mems or {}).values())
        self.mems = SimpleNamespace(**{n: SimpleNamespace(base=base, size=size)
                                       for n, (_, base, size) in (mems or {}).items()})

    def _access(self, adr, value=None):
        return self._request(("csr", adr, value))

    def _request(self, request):
        self.requests.put(request)
        return self.replies.get(timeout=self.timeout)

    def _window(self, addr, n):
        for interface, base, size in self.windows:
            if base <= addr and addr + 4 * n <= base + size:
                return interface, (addr - base) // 4
        raise ValueError(f"no memory region holds bytes 0x{addr:x}..0x{addr + 4 * n - 1:x}")

    def read(self, addr, length=None):
        """Words at byte address `addr`: one word, or a list of `length` words (as InnetClient.read)."""
        n = 1 if length is None else length
        words = self._request(("mem", *self._window(addr, n), n))
        return words[0] if length is None else words

    def write(self, addr, datas):
        """Write a word or a list of words at byte address `addr` (as InnetClient.write)."""
        datas = datas if isinstance(datas, list) else [datas]
        self._request(("mem", *self._window(addr, len(datas)), datas))

    def _read(self, adrs):
        value = 0
        for adr in adrs:
            value = (value << CSR_DATA_WIDTH) | self._access(adr)
        return value

    def _write(self, adrs, value):
        for i, adr in enumerate(adrs):
            shift = CSR_DATA_WIDTH * (len(adrs) - 1 - i)
            self._access(adr, (value >> shift) & (2**CSR_DATA_WIDTH - 1))

    def close(self):
        self.requests.put(None)

    def serve(self, bus):
        """Simulation generator: CSR-bus and window reads/writes until `close()`."""
        while True:
            req = self.requests.get(timeout=self.timeout)
            if req is None:
                return
            if req[0] == "mem":
                yield from self._serve_window(*req[1:])
                continue
            _, adr, value = req
            self.accesses += 1
            if value is None:
                self.replies.put((yield from read_cycles(bus, adr)))
            else:
                # a pulse field acts a cycle after the bank registers the write: the next access must see
                # its effect, as every access over Etherbone does
                yield from write_cycles(bus, [(adr, value)])
                yield
                self.replies.put(None)

    def _serve_window(self, interface, adr, data):
        """Wishbone cycles on `interface`: write the words `data` (a list) or read `data` words."""
        if isinstance(data, list):
            for i, word in enumerate(data):
                yield from interface.write(adr + i, word)
            reply = None
        else:
            reply = []
            for i in range(data):
                reply.append((yield from interface.read(adr + i)))
        self.mem_accesses += len(data) if isinstance(data, list) else data
        self.replies.put(reply)


def run_demo(block, name, host, mems=None, **kwargs):
    """Simulate `block` registered as `name`; `host(bus)` runs in a thread beside the simulation. mems: the
    block's Wishbone slaves as memory regions (see SimBus). Returns (host's return value, bus); re-raises
    what `host` raised."""
    top = BankedBlock(block, name)
    bus = SimBus(top.addrs, mems=mems)
    out = {}

    def run_host():
        try:
            out["value"] = host(bus)
        except BaseException as e:
            out["error"] = e
        bus.close()

    thread = threading.Thread(target=run_host, daemon=True)
    thread.start()
    run_simulation(top, [bus.serve(top.bus)], **kwargs)
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["value"], bus

"""Run a core's host demo (`software.<core>.demo.demo(bus)`) against a SoC block in the Migen simulator.

`BankedBlock` registers the block under its SoC name behind LiteX's CSRBankArray with the SoC's settings
(32-bit CSR bus, paging 0x800, big-endian ordering), so compound CSRs (wider than 32 bits) and the banks'
own logic are in the design, as in the SoC. `SimBus` gives the demo `bus.regs.<name>.read()/write(value)`
as LiteX's RemoteClient does; every access is served by the simulation as CSR-bus transactions, so
simulated time advances only while the host accesses the bus. `run_demo()` runs the host function in a
thread beside the simulation and re-raises its exception.
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


class SimBus:
    """`bus.regs.<name>.read()/write(value)` served by `serve()` inside the simulation; `accesses` counts
    CSR-bus transactions (a read takes two cycles, a write three: its effects, pulses included, are
    visible to the next access)."""
    def __init__(self, addrs, timeout=600):
        self.requests, self.replies = queue.Queue(), queue.Queue()
        self.timeout = timeout
        self.accesses = 0
        self.regs = SimpleNamespace(**{n: SimpleNamespace(read=lambda a=a: self._read(a),
                                                          write=lambda v, a=a: self._write(a, v))
                                       for n, a in addrs.items()})

    def _access(self, adr, value=None):
        self.requests.put((adr, value))
        return self.replies.get(timeout=self.timeout)

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
        """Simulation generator: CSR-bus reads/writes until `close()`."""
        while True:
            req = self.requests.get(timeout=self.timeout)
            if req is None:
                return
            adr, value = req
            self.accesses += 1
            yield bus.adr.eq(adr)
            if value is None:
                yield bus.re.eq(1)
                yield
                yield bus.re.eq(0)
                yield
                self.replies.put((yield bus.dat_r))
            else:
                yield bus.dat_w.eq(value)
                yield bus.we.eq(1)
                yield
                yield bus.we.eq(0)
                # the bank registers the write, then a pulse field acts a cycle later: the next access must
                # see its effect, as every access over Etherbone does
                yield
                yield
                self.replies.put(None)


def run_demo(block, name, host, **kwargs):
    """Simulate `block` registered as `name`; `host(bus)` runs in a thread beside the simulation.
    Returns (host's return value, bus); re-raises what `host` raised."""
    top = BankedBlock(block, name)
    bus = SimBus(top.addrs)
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

"""Run a core's host demo (`software.<core>.demo.demo(bus)`) against a SoC block: its Verilog through
Verilator (VerilatedBus, by default) or Migen's simulator (SimBus).

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


def run_demo(block, name, host, mems=None, verilated=None, **kwargs):
    """Simulate `block` registered as `name` and run `host(bus)` against it. mems: the block's Wishbone
    slaves as memory regions (see SimBus). verilated (default: when Verilator is available and no Migen
    simulator keyword is given): the block's Verilog through Verilator (VerilatedBus), else Migen's
    simulator with `host` in a thread beside it (SimBus; kwargs go to run_simulation). Returns (host's
    return value, bus); re-raises what `host` raised."""
    if verilated is None:
        from sim.verilated import available
        verilated = available() and not kwargs
    if verilated:
        return run_demo_verilated(block, name, host, mems)
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


# The same host function on the block's Verilog (Verilator) -----------------------------------------------------

_VBUS_HARNESS = r"""
#include "Vcsr_block.h"
#include "verilated.h"
#include <cstdio>
#include <cstdlib>
#include <cstring>
// One request a line on stdin, one reply line on stdout; the clock runs only inside a request, with the
// cycle pattern of tests.harness.csr.SimBus.serve (CSR read: 2 cycles, write: 3; Wishbone classic cycles).
//   r ADR | w ADR VALUE | mr K ADR N | mw K ADR V1 V2 ...        (hex)
static Vcsr_block *t;
static unsigned long long cycles = 0;
static void tick() { t->clk = 1; t->eval(); t->clk = 0; t->eval(); cycles++; }
%(mem_funcs)s
int main(int argc, char **argv) {
    Verilated::commandArgs(argc, argv);
    t = new Vcsr_block;
    t->rst = 1; tick(); tick(); t->rst = 0; t->eval();
    static char line[1 << 20];
    while (fgets(line, sizeof line, stdin)) {
        char *p = line + 2;
        if (line[0] == 'r') {
            t->csr_adr = strtoul(p, &p, 16); t->csr_re = 1; t->eval(); tick();
            t->csr_re = 0; t->eval(); tick();
            printf("%%x\n", (unsigned)t->csr_dat_r);
        } else if (line[0] == 'w') {
            t->csr_adr = strtoul(p, &p, 16); t->csr_dat_w = strtoul(p, &p, 16); t->csr_we = 1; t->eval(); tick();
            t->csr_we = 0; t->eval(); tick(); tick();
            printf("ok\n");
        } else if (line[0] == 'm') {
            int write = line[1] == 'w';
            p = line + 3;
            int k = strtol(p, &p, 16);
            unsigned adr = strtoul(p, &p, 16);
            if (write) {
                printf("ok");
                for (;;) {
                    while (*p == ' ') p++;
                    if (*p == '\n' || *p == 0) break;
                    unsigned v = strtoul(p, &p, 16);
                    wb(k, adr++, 1, v);
                }
            } else {
                int n = strtol(p, &p, 16);
                for (int i = 0; i < n; i++) printf("%%s%%x", i ? " " : "", wb(k, adr + i, 0, 0));
            }
            printf("\n");
        } else if (line[0] == 'c') {
            printf("%%llx\n", cycles);
        }
        fflush(stdout);
    }
    delete t;
    return 0;
}
"""

_WB_FUNC = r"""
static unsigned wb(int k, unsigned adr, int we, unsigned v) {
    unsigned r = 0;
    switch (k) {
%(cases)s
    }
    return r;
}
"""
_WB_CASE = r"""    case %(k)d:
        t->m%(k)d_adr = adr; t->m%(k)d_dat_w = v; t->m%(k)d_we = we; t->m%(k)d_sel = 0xf;
        t->m%(k)d_cyc = 1; t->m%(k)d_stb = 1; t->eval();
        for (int w = 0; !t->m%(k)d_ack; w++) { tick(); if (w > 100000) { fprintf(stderr, "no ack\n"); exit(3); } }
        r = t->m%(k)d_dat_r; tick(); t->m%(k)d_cyc = 0; t->m%(k)d_stb = 0; t->eval();
        break;"""


class VerilatedBus(SimBus):
    """SimBus's interface (regs, read/write of memory regions, accesses, mem_accesses) on the Verilog of a
    BankedBlock, compiled with Verilator (sim.verilated.Model, cached) and served by a C++ harness over a
    pipe, with SimBus's cycle pattern: simulated time advances only while the host accesses the bus.
    `cycles()` gives the simulated cycles so far."""
    def __init__(self, top, name, mems=None, timeout=600):
        from sim.verilated import Model, flat_ports
        SimBus.__init__(self, top.addrs, timeout, mems)
        ports = {f"csr_{n}": (getattr(top.bus, n), n != "dat_r") for n in ("adr", "re", "we", "dat_w", "dat_r")}
        cases = []
        self._mem_index = {}
        for k, (interface, _, _) in enumerate((mems or {}).values()):
            self._mem_index[id(interface)] = k
            for n in ("adr", "dat_w", "sel", "cyc", "stb", "we", "cti", "bte"):
                ports[f"m{k}_{n}"] = (getattr(interface, n), True)
            for n in ("dat_r", "ack", "err"):
                ports[f"m{k}_{n}"] = (getattr(interface, n), False)
            cases.append(_WB_CASE % dict(k=k))
        mem_funcs = _WB_FUNC % dict(cases="\n".join(cases))
        harness = _VBUS_HARNESS % dict(mem_funcs=mem_funcs)
        self.model = Model(f"csr_{name}", {"csr_block.v": flat_ports(top, ports, "csr_block")}, "csr_block", harness)
        import subprocess
        self.proc = self.model.popen(stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self._lock = threading.Lock()

    def _talk(self, line):
        with self._lock:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            reply = self.proc.stdout.readline()
        if not reply:
            raise RuntimeError(f"the Verilated bus of {self.model.name} stopped")
        return reply.split()

    def _access(self, adr, value=None):
        self.accesses += 1
        if value is None:
            return int(self._talk(f"r {adr:x}")[0], 16)
        self._talk(f"w {adr:x} {value:x}")
        return None

    def _request(self, request):
        _, interface, adr, data = request
        k = self._mem_index[id(interface)]
        if isinstance(data, list):
            self.mem_accesses += len(data)
            self._talk(f"mw {k:x} {adr:x} " + " ".join(f"{v:x}" for v in data))
            return None
        self.mem_accesses += data
        return [int(v, 16) for v in self._talk(f"mr {k:x} {adr:x} {data:x}")]

    def cycles(self):
        return int(self._talk("c")[0], 16)

    def close(self):
        if self.proc.poll() is None:
            self.proc.stdin.close()
            self.proc.wait(timeout=60)


def run_demo_verilated(block, name, host, mems=None):
    """run_demo on the block's Verilog: `host(bus)` with a VerilatedBus. Returns (host's value, bus)."""
    top = BankedBlock(block, name)
    bus = VerilatedBus(top, name, mems=mems)
    try:
        return host(bus), bus
    finally:
        bus.close()

"""MiniSharpSoCBlock behind LiteX's CSR bank (as in the SoC), driven over the CSR bus by the host code
(software/minisharp/demo.py): a shuffled two-rank reduction through the injector and the capture, checked
against the reference model, then a forwarded frame; the counters read over the bus. The injector alone
behind its CSR bank, written at one CSR write a cycle: every frame byte for byte, bad input refused."""
import random

import pytest

from migen import run_simulation

from cores.minisharp import common as ms
from cores.minisharp.soc_block import MSFrameInjector, MiniSharpSoCBlock
from software.minisharp import demo as D
from tests.harness.csr import BankedBlock, read_cycles, run_demo, write_cycles
from tests.harness.streams import collect, packets

CE = 4
OTHER = bytes.fromhex("02000000000102000000000208004500") + bytes(range(44))   # an IPv4 frame


def read_capture(bus, start, end):
    """Capture entries start..end-1 (capture_data values)."""
    entries = []
    for a in range(start, end):
        bus.regs.minisharp_capture_addr.write(a)
        entries.append(bus.regs.minisharp_capture_data.read())
    return entries


def test_soc_block_reduce_and_forward_over_the_csr_bus():
    """demo() checks every sum bit for bit and that nothing was dropped; then a non-MiniSharp frame is
    forwarded from port 0 to the captured port 1 (the default map)."""
    def host(bus):
        bus.regs.minisharp_port1_dst_mac.write(ms.HOST_MAC)
        lines = D.demo(bus, ranks=2, elements=6, collective_id=0x77, seed=3, timeout=900)
        level = bus.regs.minisharp_capture_level.read()
        macs = bytes(ms.CAPTURE_DATA_CSR.get(e, "byte") for e in read_capture(bus, 0, 12))  # 1st frame's MACs
        D.inject(bus, "minisharp", 0, OTHER)
        while bus.regs.minisharp_capture_level.read() < level + len(OTHER):
            pass
        forwarded = D.split_capture(read_capture(bus, level, level + len(OTHER)))
        counters = {name: getattr(bus.regs, f"minisharp_{name}").read() for name, _ in ms.counters(2)}
        return lines, level, macs, forwarded, counters

    # v0.1 traffic: a build without the v0.2 partials (a third less logic for Migen's simulator to step)
    block = MiniSharpSoCBlock(num_ports=2, chunk_elements=CE, max_ranks=4, n_slots=2, capture_bytes=512,
                              partials=False)
    block.comb += [s.ready.eq(1) for s in block.sources]            # the PHYs: always ready, sending nothing
    (lines, level, macs, forwarded, counters), _ = run_demo(block, "minisharp", host)
    _, frames, _ = D.plan(0x77, ranks=2, elements=6, num_ports=2, chunk_elements=CE, egress=(1, 1), seed=3)
    assert len(lines) == 1 and "bit-exact" in lines[0]
    assert level == 2 * ms.MS_HEADER_BYTES + 4 * 6                # two COL_RES frames, 6 values
    assert macs == ms.HOST_MAC.to_bytes(6, "big") + (ms.DEFAULT_SRC_MAC + 1).to_bytes(6, "big")
    assert forwarded == [OTHER]
    assert counters["setups"] == 1 and counters["chunks"] == 2 and counters["port0_fwd_frames"] == 1
    assert not any(v for k, v in counters.items() if k.startswith("drop_"))
    data0 = sum(1 for p, _ in frames if p == 0)
    assert counters["port0_rx_frames"] == 1 + data0 + 1            # the setup, its data frames, OTHER
    assert counters["port1_rx_frames"] == len(frames) - data0
    assert counters["port1_tx_frames"] == 3 and counters["port0_tx_frames"] == 0


def _beats_to_bytes(beats, nbytes):
    """A frame's bytes from its beats of `nbytes` bytes (first byte in the low bits), cut after the last
    beat's last_be; every beat but the last has last_be 0, the last a one-hot last_be."""
    assert all(b["last_be"] == 0 for b in beats[:-1])
    end = beats[-1]["last_be"].bit_length()
    assert beats[-1]["last_be"] == 1 << (end - 1)
    data = b"".join(b["data"].to_bytes(nbytes, "little") for b in beats)
    return data[:len(data) - nbytes + end]


@pytest.mark.parametrize("dw", [8, 16, 32])
def test_injector_takes_one_csr_write_a_cycle(dw):
    """Frames written word after word with no idle cycle between the CSR writes (the `go` in the cycle after
    the last word), sent into random ports under a random ready, in beats of dw bits: each arrives byte for
    byte on its port, last_be on its last byte. Refused and counted, nothing sent: a frame longer than the
    buffer, a length beyond the bytes written, length 0, a `go` and a data write while a frame is being
    sent; good frames after each still arrive."""
    nbytes, num_ports = 64, 3
    rng = random.Random(5)
    inj = MSFrameInjector(nbytes, num_ports, dw)
    top = BankedBlock(inj, "inject")
    bus, adr = top.bus, {name: a for name, (a,) in top.addrs.items()}

    def frame(n):
        return bytes(rng.getrandbits(8) for _ in range(n))

    good = [(rng.randrange(num_ports), frame(n)) for n in [1, 2, 3, 4, 5, 63, 64] + rng.sample(range(1, 65), 8)]
    # (words written, ctrl length, ctrl port, refusals): each frame refused as a whole
    bad = [(nbytes // 4 + 1, nbytes + 4, 0, 2), (nbytes // 4 + 1, 8, 1, 2), (3, 13, 2, 1), (2, 0, 0, 1),
           (2, 8, num_ports, 1)]
    got, out = [], [[] for _ in range(num_ports)]
    refused = []          # (counter read after a frame, refusals expected so far)

    def writes(items):
        yield from write_cycles(bus, [(adr[name], value) for name, value in items])

    def read(name):
        return (yield from read_cycles(bus, adr[name]))

    def words(data):
        data = data + bytes(-len(data) % 4)
        return [("inject_data", int.from_bytes(data[i:i + 4], "big")) for i in range(0, len(data), 4)]

    def idle():
        for _ in range(1000):
            if not ms.INJECT_STATUS_CSR.get((yield from read("inject_status")), "busy"):
                return
        raise AssertionError("injector busy for 1000 cycles")

    def ctrl(length, port=0):
        return ("inject_ctrl", ms.INJECT_CTRL_CSR.pack(length=length, port=port, go=1))

    def host():
        plan = [("good", g) for g in good] + [("bad", b) for b in bad]
        rng.shuffle(plan)
        want = 0
        for kind, item in plan:
            yield from idle()
            if kind == "good":
                port, data = item
                yield from writes(words(data) + [ctrl(len(data), port)])
                got.append(item)
            else:
                n, length, port, r = item
                yield from writes(words(frame(4 * n)) + [ctrl(length, port)])
                want += r
            refused.append(((yield from read("inject_refused")), want))
        # while a frame is sent: a data write and a `go` are refused; the frame is unaffected
        port, data = 1, frame(40)
        yield from idle()
        yield from writes(words(data) + [ctrl(len(data), port), ("inject_data", 0x11223344), ctrl(4, 0)])
        got.append((port, data))
        yield from idle()
        refused.append(((yield from read("inject_refused")), want + 2))
        for _ in range(50):
            yield

    run_simulation(top, [host()] + [collect(s, out[i], rng, ["data", "last", "last_be"], ready_p=0.6)
                                    for i, s in enumerate(inj.sources)])
    for i in range(num_ports):
        frames = [_beats_to_bytes(p, dw // 8) for p in packets(out[i])]
        assert frames == [d for p, d in got if p == i], i
        assert all(bool(b["last_be"]) == b["last"] for b in out[i])
    assert sum(len(packets(o)) for o in out) == len(good) + 1
    assert [r for r, _ in refused] == [w for _, w in refused] and refused[-1][1] == 9

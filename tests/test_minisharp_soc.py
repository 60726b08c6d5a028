"""MiniSharpSoCBlock behind LiteX's CSR bank (as in the SoC), driven over the CSR bus by the host code
(software/minisharp/demo.py): a shuffled two-rank reduction through the injector and the capture, checked
against the reference model, then a forwarded frame; the counters read over the bus."""
from cores.minisharp import common as ms
from cores.minisharp.soc_block import MiniSharpSoCBlock
from software.minisharp import demo as D
from tests.harness.csr import run_demo

CE = 4
OTHER = bytes.fromhex("02000000000102000000000208004500") + bytes(range(44))   # an IPv4 frame


def read_capture(bus, start, end):
    """Capture entries start..end-1 (capture_data values)."""
    entries = []
    for a in range(start, end):
        bus.regs.minisharp_capture_addr.write(a)
        entries.append(bus.regs.minisharp_capture_data.read())
    return entries


def pace_injector(bus):
    """The injector stores a data word in 5 cycles; a host over Etherbone writes far apart, the simulated bus
    every 3 cycles: two status reads after each data write."""
    data, status = bus.regs.minisharp_inject_data, bus.regs.minisharp_inject_status
    data.write = lambda value, write=data.write: (write(value), status.read(), status.read())


def test_soc_block_reduce_and_forward_over_the_csr_bus():
    """demo() checks every sum bit for bit and that nothing was dropped; then a non-MiniSharp frame is
    forwarded from port 0 to the captured port 1 (the default map)."""
    def host(bus):
        pace_injector(bus)
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

    block = MiniSharpSoCBlock(num_ports=2, chunk_elements=CE, max_ranks=4, n_slots=2, capture_bytes=512)
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

"""MiniSharpSoCBlock in the Migen simulator, driven only through its CSR signals: injector -> core ->
capture, a two-rank reduction and a forwarded frame, checked against the reference model."""
from migen import run_simulation

from cores.minisharp import common as ms
from cores.minisharp.soc_block import MiniSharpSoCBlock
from software.minisharp import demo as D
from software.minisharp import packets as P


def test_soc_block_reduce_and_forward_through_csrs():
    ce = 4
    dut = MiniSharpSoCBlock(num_ports=2, chunk_elements=ce, max_ranks=4, n_slots=2, capture_bytes=512)
    setup, frames, expected = D.plan(0x77, ranks=2, elements=6, num_ports=2, chunk_elements=ce, egress=(1, 1))
    other = bytes.fromhex("02000000000102000000000208004500") + bytes(range(44))
    result = {}

    def inject(port, frame):
        while (yield dut.inject.status.fields.busy):
            yield
        data = bytes(frame) + bytes(-len(frame) % 4)
        for i in range(0, len(data), 4):
            yield from dut.inject.data.write(int.from_bytes(data[i:i + 4], "big"))
            for _ in range(4):
                yield
        yield from dut.inject.ctrl.write(len(frame) | (port << 16) | (1 << 24))
        yield

    def main():
        yield from dut.port1_dst_mac.write(0x0200000000A0)
        yield from dut.capture.ctrl.write((1 << 8) | 1)
        for port, f in [(0, setup)] + frames + [(0, other)]:
            yield from inject(port, f)
        for _ in range(250):
            yield
        level = yield dut.capture.level.status
        entries = []
        for a in range(level):
            yield from dut.capture.addr.write(a)
            yield
            entries.append((yield dut.capture.data.fields.byte) | ((yield dut.capture.data.fields.last) << 8))
        result["frames"] = D.split_capture(entries)
        for name in ("setups", "chunks"):
            result[name] = yield getattr(dut, name).status
        for n, _ in ms.DROP_REASONS:
            result.setdefault("drops", []).append((yield getattr(dut, f"drop_{n}").status))
        result["fwd0"] = yield dut.port0_fwd_frames.status
        result["rx0"] = yield dut.port0_rx_frames.status

    def phy_idle():
        for s in dut.sinks:
            yield s.valid.eq(0)
        for s in dut.sources:
            yield s.ready.eq(1)
        yield

    run_simulation(dut, [main(), phy_idle()])
    res = [f for f in result["frames"] if P.parse(f).get("opcode") == ms.MS_OP_COL_RES]
    assert D.check_results(res, 0x77, 6, expected, ce) == expected
    assert all(P.parse(f)["dst_mac"] == 0x0200000000A0 for f in res)
    assert other in result["frames"]                          # forwarded 0 -> 1 (default map)
    assert result["setups"] == 1 and result["chunks"] == 2 and result["fwd0"] == 1
    assert not any(result["drops"])
    assert result["rx0"] == 1 + sum(1 for p, _ in frames if p == 0) + 1

"""Sideband setup (software/minisharp/sideband.py) on MiniSharpSoCBlock behind its CSR bank: every setup and
teardown refusal rule of the in-band path gives the same drop reason through the sideband, and the host
sees it as SetupRefused; a context the sideband installed reduces the ranks' data exactly; a port outside
admin_ports is refused as not_admin."""
import pytest

from cores.minisharp import common as ms
from cores.minisharp.soc_block import MiniSharpSoCBlock
from software.minisharp import demo as D
from software.minisharp import packets as P
from software.minisharp.sideband import SetupRefused, Sideband
from tests.harness.csr import run_demo

CE, CONTEXTS, MAX_RANKS = 4, 2, 4


def block(dw=8):
    b = MiniSharpSoCBlock(num_ports=2, dw=dw, chunk_elements=CE, n_contexts=CONTEXTS, n_slots=2, max_ranks=MAX_RANKS,
                          with_inject=True)
    b.comb += [s.ready.eq(1) for s in b.sources]            # the PHYs: always ready, sending nothing
    return b


GOOD = dict(element_count=12, expected_local=2, egress_first=0, egress_last=1)
# (record fields changed from GOOD, frame keywords, the reason): the setup rules of
# tests/test_minisharp_core.py's in-band table
BAD_SETUPS = [
    (dict(expected_local=0), {}, "bad_setup"),
    (dict(expected_local=MAX_RANKS + 1), {}, "bad_setup"),
    (dict(element_count=0), {}, "bad_setup"),
    (dict(element_count=65536 * CE + 1), {}, "bad_setup"),
    (dict(egress_first=1, egress_last=0), {}, "bad_setup"),
    (dict(egress_last=3), {}, "bad_setup"),
    (dict(collective=2), {}, "bad_setup"),
    (dict(reduce_op=2), {}, "bad_setup"),
    (dict(input_fmt=2), {}, "bad_setup"),
    (dict(acc_mode=0), {}, "bad_setup"),
    (dict(output_fmt=7), {}, "bad_setup"),
    (dict(reserved0=1), {}, "bad_reserved"),
    (dict(reserved1=1), {}, "bad_reserved"),
    ({}, dict(reserved=1), "bad_reserved"),
]


@pytest.mark.extended
def test_every_setup_rule_through_the_sideband():
    def host(bus):
        sb = Sideband(bus)
        verdicts = []
        for over, kw, _ in BAD_SETUPS:
            frame = P.setup_frame(sb.switch_mac, sb.src_mac, 9, P.setup_record(**{**GOOD, **over}), **kw)
            with pytest.raises(SetupRefused) as e:
                sb.send(frame)
            verdicts.append(e.value.reason)
        assert sb.setup(1, 12, 2, egress=(0, 1)) == "setups"
        assert sb.setup(1, 8, 2) == "setups"                          # replaces it
        assert sb.setup(2, 8, 1) == "setups"
        with pytest.raises(SetupRefused, match="setup of collective 3 refused by the switch: ctx_full"):
            sb.setup(3, 8, 1)
        assert sb.teardown(2) == "teardowns"
        with pytest.raises(SetupRefused, match="unknown_coll"):
            sb.teardown(2)
        assert sb.setup(3, 8, 1) == "setups"                          # the freed context is taken
        with pytest.raises(ValueError, match="setup of collective 4"):
            sb.setup(4, 2**32, 1)                                     # not a 32-bit element count: host side
        counters = {n: getattr(bus.regs, f"minisharp_{n}").read() for n in ("setups", "teardowns", "drop_bad_setup",
                                                                      "drop_bad_reserved", "drop_ctx_full")}
        return verdicts, counters

    (verdicts, counters), _ = run_demo(block(), "minisharp", host)
    assert verdicts == [reason for _, _, reason in BAD_SETUPS]
    assert counters == {"setups": 4, "teardowns": 1, "drop_bad_setup": 11, "drop_bad_reserved": 3,
                        "drop_ctx_full": 1}


def test_a_sideband_context_reduces_and_admin_ports_apply():
    """Setup through the sideband, then the ranks' data frames (in-band, shuffled): every chunk result is
    captured and bit-exact. With port 0 out of admin_ports, a sideband entering there is refused."""
    _, frames, expected = D.plan(4, 3, 10, 2, CE, egress=(1, 1), seed=6)

    def host(bus):
        sb = Sideband(bus)
        sb.setup(4, 10, 3, egress=(1, 1))
        bus.regs.minisharp_capture_ctrl.write(ms.CAPTURE_CTRL_CSR.pack(port=1, arm=1))
        for port, f in frames:
            D.inject(bus, "minisharp", port, f)
        n = ms.num_chunks(10, CE)
        while min(bus.regs.minisharp_chunks.read(), bus.regs.minisharp_port1_tx_frames.read()) < n:
            pass                     # a result is counted when its chunk completes, then when its frame has left
        entries = []
        for a in range(bus.regs.minisharp_capture_level.read()):
            bus.regs.minisharp_capture_addr.write(a)
            entries.append(bus.regs.minisharp_capture_data.read())
        D.check_results(D.split_capture(entries), 4, 10, expected, CE)
        bus.regs.minisharp_admin_ports.write(0b10)
        with pytest.raises(SetupRefused, match="not_admin"):
            Sideband(bus, port=0).setup(5, 4, 1)
        return Sideband(bus).port, bus.regs.minisharp_chunks.read()

    (default_port, chunks), _ = run_demo(block(), "minisharp", host)
    assert default_port == 1 and chunks == ms.num_chunks(10, CE)


@pytest.mark.parametrize("dw", [16, pytest.param(32, marks=pytest.mark.extended)])
def test_sideband_on_wide_ports(dw):
    """The boards' port widths (Colorlight 16, Versa 32 bits) with the injector: a sideband setup, a refused
    one (ctx_full after the two contexts), the ranks' data frames through the injector until every chunk
    completes and leaves on the egress port, then a sideband teardown."""
    _, frames, _ = D.plan(4, 3, 10, 2, CE, egress=(1, 1), seed=6)
    n = ms.num_chunks(10, CE)

    def host(bus):
        sb = Sideband(bus)
        assert sb.setup(4, 10, 3, egress=(1, 1)) == "setups" and sb.setup(5, 4, 1) == "setups"
        with pytest.raises(SetupRefused, match="ctx_full"):
            sb.setup(6, 4, 1)
        for port, f in frames:
            D.inject(bus, "minisharp", port, f)
        while min(bus.regs.minisharp_chunks.read(), bus.regs.minisharp_port1_tx_frames.read()) < n:
            pass
        assert sb.teardown(4) == "teardowns"
        return {k: getattr(bus.regs, f"minisharp_{k}").read() for k in
                ("setups", "teardowns", "drop_ctx_full", "chunks", "port1_tx_frames", "inject_refused")}

    assert not hasattr(MiniSharpSoCBlock(num_ports=2, dw=dw), "inject")      # only on request at this width
    counters, _ = run_demo(block(dw), "minisharp", host)
    assert counters == {"setups": 2, "teardowns": 1, "drop_ctx_full": 1, "chunks": n, "port1_tx_frames": n,
                        "inject_refused": 0}


@pytest.mark.parametrize("board, dw", [("colorlight_5a_75b", 16), ("lattice_versa_ecp5", 32)])
def test_board_builds_take_the_injector(board, dw):
    """`make build BOARD=<board> BUILD_ARGS="--cores minisharp --sideband"`'s SoC: the 16-bit (Colorlight) or
    32-bit (Versa) MiniSharp block gets the injector, whose CSRs Sideband looks for (elaboration only: no
    synthesis here; without the option a 16- or 32-bit block has none: test_sideband_on_wide_ports)."""
    import importlib
    module = importlib.import_module(f"boards.{board}")
    block = module.BoardSoC(cores=["minisharp"], minisharp={"with_inject": True}).minisharp
    assert len(block.sinks[0].data) == dw
    assert len(block.inject.sources[0].data) == dw and not hasattr(block, "capture")
    assert {c.name for c in block.inject.get_csrs()} >= {"ctrl", "data", "status"}     # minisharp_inject_<name>

"""Board targets elaborate and generate their gateware (Verilog + LPF) without running the ECP5 tools;
`make build BOARD=...` runs yosys/nextpnr/ecppack on the same targets."""
import os
import re

import pytest

from litex.soc.integration.builder import Builder

from cores.lib.block_ram import ecp5_special_overrides
from tests.harness.verilog import backward_part_selects
from tests.harness.tiers import extended

pytestmark = pytest.mark.long        # the whole file: tens of seconds or more


@pytest.mark.parametrize("board, kwargs", [
    ("colorlight_5a_75b", {"revision": "7.0"}),
    ("colorlight_5a_75b", {"revision": "8.0"}),
    ("lattice_versa_ecp5", {}),
])
def test_board_gateware_generation(board, kwargs, tmp_path):
    import importlib
    soc = importlib.import_module(f"boards.{board}").BoardSoC(**kwargs)
    builder = Builder(soc, output_dir=str(tmp_path), compile_software=False, compile_gateware=False,
                      csr_csv=str(tmp_path / "csr.csv"))
    # as `make build` does: ECP5 lowerings of MiniSharp's block RAMs; every other memory stays as it is
    builder.build(build_name=board, run=False, special_overrides=ecp5_special_overrides)
    verilog = (tmp_path / "gateware" / f"{board}.v").read_text()
    assert "module " + board in verilog
    assert backward_part_selects(verilog) == []
    assert os.path.exists(tmp_path / "gateware" / f"{board}.lpf")
    csr = (tmp_path / "csr.csv").read_text()
    assert re.search(r"reg \[\d+:0\] \w*mem\w*\[0:\d+\];", verilog)      # the SoC's memories, inferred
    assert "ctrl_scratch" in csr and "identifier_mem" in csr


def test_colorlight_refuses_unknown_revision():
    from boards.colorlight_5a_75b import BoardSoC
    with pytest.raises(ValueError, match="revision"):
        BoardSoC(revision="6.1")


def _elaborate(board, cores, tmp_path):
    import importlib
    soc = importlib.import_module(f"boards.{board}").BoardSoC(cores=list(cores))
    Builder(soc, output_dir=str(tmp_path), compile_software=False, compile_gateware=False,
            csr_csv=str(tmp_path / "csr.csv")).build(build_name=board, run=False,
                                                     special_overrides=ecp5_special_overrides)
    return soc, (tmp_path / "csr.csv").read_text()


def _maximal_combinations():
    """Every board's maximal core sets; those whose cores the board's earlier sets already elaborated are
    `extended` (make test-long): `make test` elaborates each core on each board once."""
    from boards import fit
    out = []
    for b in fit.BOARD_DEVICE:
        seen = set()
        for c in fit.fitting_combinations(b)[1]:
            out.append(extended(b, c) if seen.issuperset(c) else (b, c))
            seen.update(c)
    return out


@pytest.mark.parametrize("board, cores", _maximal_combinations())
def test_board_elaborates_with_every_maximal_fitting_core_set(board, cores, tmp_path):
    """Each largest set of cores that boards/fit.py fits on the board generates its gateware, with every
    core's CSRs (a smaller fitting set is a subset of one of these), and none of a core's memories on the CSR
    bus (LiteX maps a Memory attribute there: its second write port turned the sync slot RAM into flip-flops)."""
    from soc.common import CORE_NAMES
    soc, csr = _elaborate(board, cores, tmp_path)
    for core in cores:
        assert f"csr_register,{CORE_NAMES[core]}_" in csr, core
        assert getattr(soc, CORE_NAMES[core]).get_memories() == [], core
    if "sparsr" in cores:
        # Sparsr's XMEM in the board's DRAM: LiteDRAM's controller (initialised by the BIOS on the CPU)
        assert "csr_register,sdram_dfii_control" in csr and "memory_region,rom" in csr
        assert f"csr_register,{CORE_NAMES['sparsr']}_receiver_dram_words_written" in csr


def test_every_core_fits_the_versa_alone_and_the_colorlight_but_the_rifl_network():
    """The RIFL network is refused on the Colorlight's 25F, with the estimate; the 2x2 sync grid fits it (it did
    not while its slot RAMs were on the CSR bus: flip-flops instead of LUT RAM, 23376 LUT4 instead of 10235)."""
    from boards import fit
    for board, too_big in (("lattice_versa_ecp5", set()), ("colorlight_5a_75b", {"rifl_net"})):
        fits, _ = fit.fitting_combinations(board)
        assert {c for (c,) in (f for f in fits if len(f) == 1)} == set(fit.BOARD_CORES) - too_big, board
    with pytest.raises(fit.DoesNotFit, match="rifl_net does not fit its LFE5U-25F"):
        fit.check("colorlight_5a_75b", ["rifl_net"])
    fit.check("colorlight_5a_75b", ["sync"])


def test_build_refuses_a_combination_that_does_not_fit(capsys):
    """`make build` stops before synthesis, with the estimate, when the cores do not fit."""
    from boards import build, fit
    every = list(fit.BOARD_CORES)
    with pytest.raises(fit.DoesNotFit, match="does not fit its LFE5U-25F"):
        fit.check("colorlight_5a_75b", every)
    assert build.main(["colorlight_5a_75b", "--cores", ",".join(every)]) == 2
    err = capsys.readouterr().err
    assert "does not fit" in err and "lut4" in err

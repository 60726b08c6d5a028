"""Board targets elaborate and generate their gateware (Verilog + LPF) without running the ECP5 tools;
`make build BOARD=...` runs yosys/nextpnr/ecppack on the same targets."""
import os
import re

import pytest

from litex.soc.integration.builder import Builder

from cores.lib.block_ram import ecp5_special_overrides
from tests.harness.verilog import backward_part_selects


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

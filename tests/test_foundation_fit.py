"""boards/fit_figures.json is current: every figure carries the digest of the sources it was measured on
(boards.fit.digest) and a figure whose sources changed since is refused, naming it and the command that measures
it again; the digest follows the core's package and the board's modules, not another core's package."""
import copy
import json

import pytest

from boards import fit
from sim.bench import sources


def test_fit_figures_are_current():
    """Fails when a core's or a board's sources changed since their figures were measured: run the command the
    message gives (or, after a change that leaves the gateware as it was, python -m boards.fit --update-digests)."""
    fit.check_current()


def test_a_stale_figure_is_refused_with_the_command_to_measure_it():
    figures = copy.deepcopy(fit.load_figures())
    figures["boards"]["colorlight_5a_75b"]["digests"]["sync"] = "0" * 64
    del figures["boards"]["lattice_versa_ecp5"]["digests"]["base"]
    assert fit.stale(figures) == [("colorlight_5a_75b", "sync"), ("lattice_versa_ecp5", "base")]
    with pytest.raises(fit.StaleFigures) as e:
        fit.check_current(figures)
    message = str(e.value)
    assert "sync on colorlight_5a_75b: python -m boards.fit --measure --boards colorlight_5a_75b --only sync" in message
    assert "base on lattice_versa_ecp5: python -m boards.fit --measure --boards lattice_versa_ecp5\n" in message
    assert "python -m boards.fit --update-digests" in message


def test_update_digests_rewrites_only_the_digests(tmp_path):
    figures = copy.deepcopy(fit.load_figures())
    figures["boards"]["lattice_versa_ecp5"]["digests"]["rifl"] = "stale"
    path = tmp_path / "figures.json"
    path.write_text(json.dumps(figures))
    assert fit.update_digests(str(path)) == [("lattice_versa_ecp5", "rifl")]
    assert json.loads(path.read_text()) == fit.load_figures()


def test_a_core_digest_follows_its_package_and_the_board_not_other_cores(tmp_path, monkeypatch):
    """The digest reads the files: a changed file of cores/sync changes sync's digest and no other core's; a
    changed board module changes every digest of that board."""
    real = sources.module_file
    changed = {}

    def module_file(name):
        return changed.get(name) or real(name)

    def digests():
        sources.forget()
        return {(b, c): fit.digest(b, c) for b in fit.BOARD_DEVICE for c in (None, *fit.BOARD_CORES)}

    monkeypatch.setattr(sources, "module_file", module_file)
    before = digests()
    edited = tmp_path / "node.py"
    edited.write_text(open(real("cores.sync.node")).read() + "\n# edited\n")
    changed["cores.sync.node"] = str(edited)
    after = digests()
    assert {k for k in before if before[k] != after[k]} == {(b, "sync") for b in fit.BOARD_DEVICE}
    board = tmp_path / "board.py"
    board.write_text(open(real("boards.colorlight_5a_75b")).read() + "\n# edited\n")
    changed["boards.colorlight_5a_75b"] = str(board)
    again = digests()
    assert {k for k in after if after[k] != again[k]} == {("colorlight_5a_75b", c) for c in (None, *fit.BOARD_CORES)}


def test_digest_checks_its_arguments():
    with pytest.raises(ValueError, match="board 'nexys'"):
        fit.digest("nexys")
    with pytest.raises(ValueError, match="core 'lib'"):
        fit.digest("colorlight_5a_75b", "lib")


def test_digests_are_not_recorded_from_uncommitted_sources(monkeypatch, capsys):
    """Digests recorded in a work tree with uncommitted edits are those of no commit (CI failed so on f5aa5b6)."""
    recorded = []
    monkeypatch.setattr(fit, "uncommitted", lambda: ["cores/lib/block_ram.py"])
    monkeypatch.setattr(fit, "update_digests", lambda *a: recorded.append(a) or [])
    assert fit.main(["--update-digests"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cores/lib/block_ram.py" in err and not recorded
    monkeypatch.setattr(fit, "uncommitted", lambda: [])
    assert fit.main(["--update-digests"]) == 0 and recorded


def test_measurements_of_two_boards_at_once_keep_each_other(tmp_path, monkeypatch):
    """measure() re-reads the table for each figure it records: a figure another run (another board) wrote
    meanwhile stays."""
    path = str(tmp_path / "fit.json")
    figures = copy.deepcopy(fit.load_figures())
    (tmp_path / "fit.json").write_text(json.dumps(figures))
    other = "colorlight_5a_75b"

    def synth(board, cores):
        if not cores:                                   # the other board's run records a figure meanwhile
            fit._record(path, other, "sync", dict.fromkeys(fit.RESOURCES, 7), "d" * 64)
        return dict.fromkeys(fit.RESOURCES, 100 if cores else 10)
    monkeypatch.setattr(fit, "synth_counts", synth)
    out = fit.measure(["lattice_versa_ecp5"], ["rifl"], path=path)
    assert out["boards"][other]["cores"]["sync"] == dict.fromkeys(fit.RESOURCES, 7)
    assert out["boards"][other]["digests"]["sync"] == "d" * 64
    assert out["boards"]["lattice_versa_ecp5"]["cores"]["rifl"] == dict.fromkeys(fit.RESOURCES, 90)
    assert out["boards"]["lattice_versa_ecp5"]["digests"]["rifl"] == fit.digest("lattice_versa_ecp5", "rifl")

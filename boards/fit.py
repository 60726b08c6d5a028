"""Will a board build fit its device? An estimate before synthesis, from measured synthesis figures.

`check(board, cores)` adds up the board's base SoC and each core's cost, as yosys (synth_ecp5) counted them
in board builds with that core alone (boards/fit_figures.json), and raises DoesNotFit with the figures when
any resource passes FIT_LIMIT of the device. yosys' counts do not depend on the ECP5 part, so one run per
board configuration serves both devices. LUT4 counts every LUT nextpnr places: logic, two per carry cell
(CCU2C) and six per 16x4 LUT RAM (TRELLIS_DPR16X4: four RAM and two RAMW LUTs, as nextpnr's "logic
utilisation before packing" counts them); RAM LUTs are limited on their own (one slice in four).

    python -m boards.fit --measure            # rerun yosys for every (board, core): ~2-4 min each
    python -m boards.fit --update-digests     # only record the digests of the sources as they are now
    python -m boards.fit colorlight_5a_75b minisharp,sync

Each figure carries the digest of the sources it was measured on (`digests` of each board: `digest(board,
core)`, "base" for the base SoC); `check_current()` (tests/test_foundation_fit.py) refuses figures whose sources
changed since. `--update-digests` is for a change that leaves the gateware as it was (a refactor).
"""
import argparse
import fcntl
import itertools
import json
import logging
import os
import re
import subprocess
import sys
import tempfile

from sim.bench import sources
from software.argtypes import names

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIGURES = os.path.join(ROOT, "boards", "fit_figures.json")
BOARD_CORES = ("minisharp", "rifl", "rifl_net", "sparsr", "switch", "sync")
RESOURCES = ("lut4", "ff", "dp16kd", "ram_lut")
# Capacity of the boards' devices (nextpnr-ecp5's counts).
DEVICES = {
    "LFE5U-25F":    dict(lut4=24288, ff=24288, dp16kd=56, ram_lut=3036),
    "LFE5UM5G-45F": dict(lut4=43848, ff=43848, dp16kd=108, ram_lut=5481),
}
BOARD_DEVICE = {"colorlight_5a_75b": "LFE5U-25F", "lattice_versa_ecp5": "LFE5UM5G-45F"}
# The share of each resource a build may use. Above 88 % of the LUT4 placement stalls: the Colorlight's
# MiniSharp at 92 % of the 25F's LUT4 (96 % TRELLIS_COMB after packing) stayed in nextpnr's first
# analytical placement step for 25 minutes. Flip-flops: HeAP's legaliser loops on the Colorlight's MiniSharp
# at 74-76 % of the flip-flops (slices whose clock / LSR / CE sets cannot be completed), took 590 s at 73 %
# and 97 s at 66 % (docs/minisharp.md, "Why HeAP stalls"). Block RAMs and LUT RAM may be used up.
FIT_LIMIT = {"lut4": 0.88, "ff": 0.72, "dp16kd": 1.0, "ram_lut": 1.0}


class DoesNotFit(ValueError):
    """A build that the estimate says does not fit its device (the message gives the figures)."""


class StaleFigures(ValueError):
    """Figures measured on sources that changed since (the message names them and the command to measure)."""


def load_figures(path=FIGURES):
    with open(path) as f:
        return json.load(f)


def _write(figures, path):
    with open(path, "w") as f:
        json.dump(figures, f, indent=1, sort_keys=True)
        f.write("\n")


def estimate(board, cores, figures=None):
    """Estimated use of each resource by `board` with `cores`: the base SoC plus each core's cost."""
    figures = figures or load_figures()
    per_board = figures["boards"][board]
    unknown = set(cores) - set(per_board["cores"])
    if unknown:
        raise ValueError(f"no fit figures for {sorted(unknown)} on {board}: run python -m boards.fit --measure")
    total = dict(per_board["base"])
    for core in cores:
        for r in RESOURCES:
            total[r] += per_board["cores"][core][r]
    return total


def check(board, cores, figures=None):
    """Raise DoesNotFit if `board` with `cores` is estimated past FIT_LIMIT of any resource of its device;
    else return the estimate and the device."""
    device = BOARD_DEVICE[board]
    cap = DEVICES[device]
    use = estimate(board, cores, figures)
    over = [r for r in RESOURCES if use[r] > FIT_LIMIT[r] * cap[r]]
    if over:
        rows = ", ".join(f"{r} {use[r]} of {cap[r]} ({100 * use[r] / cap[r]:.0f} %)" for r in RESOURCES)
        raise DoesNotFit(
            f"{board} with cores {', '.join(cores)} does not fit its {device}: estimated {rows}; over the limit "
            f"in {', '.join(f'{r} ({100 * FIT_LIMIT[r]:.0f} %)' for r in over)} (boards/fit_figures.json, measured by yosys in board "
            f"builds with each core alone). Leave a core out, or use a board with a larger device.")
    return use, device


def fitting_combinations(board, figures=None):
    """Every non-empty set of cores that fits `board`, and the maximal ones among them."""
    fits = []
    for n in range(1, len(BOARD_CORES) + 1):
        for combo in itertools.combinations(BOARD_CORES, n):
            try:
                check(board, combo, figures)
                fits.append(combo)
            except DoesNotFit:
                pass
    maximal = [c for c in fits if not any(set(c) < set(d) for d in fits)]
    return fits, maximal


# The sources the figures were measured on -------------------------------------------------------
def digest(board, core=None):
    """The digest of the sources of `board`'s build with `core` alone (None: the base SoC): the board's modules,
    boards/ports.py and cores/lib/block_ram.py (what synth_counts builds with) and what they import within
    cores/, soc/ and boards/ but the cores' packages (cores/lib is in), and the package cores/<core> with what it
    imports within cores/ (sim.bench.sources: file contents)."""
    if board not in BOARD_DEVICE:
        raise ValueError(f"board {board!r}: expected one of {sorted(BOARD_DEVICE)}")
    if core is not None and core not in BOARD_CORES:
        raise ValueError(f"core {core!r}: expected one of {list(BOARD_CORES)} or None (the base SoC)")
    found = sources.modules([f"boards.{board}", "boards.ports", "cores.lib.block_ram"], ("cores", "soc", "boards"),
                            exclude=[f"cores.{c}" for c in BOARD_CORES])
    if core is not None:
        found.update(sources.modules(sources.package_modules(f"cores.{core}"), ("cores",)))
    return sources.digest(found)


def stale(figures=None):
    """[(board, "base" or core)] of the figures whose recorded digest is not the digest of the sources now."""
    figures = figures or load_figures()
    out = []
    for board, entry in sorted(figures["boards"].items()):
        recorded = entry.get("digests", {})
        for part in ["base", *sorted(entry["cores"])]:
            if recorded.get(part) != digest(board, None if part == "base" else part):
                out.append((board, part))
    return out


def check_current(figures=None):
    """Raise StaleFigures naming every figure whose sources changed since it was measured."""
    old = stale(figures)
    if old:
        lines = [f"{part} on {board}: python -m boards.fit --measure --boards {board}"
                 + ("" if part == "base" else f" --only {part}") for board, part in old]
        raise StaleFigures("boards/fit_figures.json: figures measured on sources that changed since (their "
                           "digest differs); measure them again:\n  " + "\n  ".join(lines) + "\n(a change that "
                           "leaves the gateware as it was: python -m boards.fit --update-digests)")


def update_digests(path=FIGURES):
    """Record the digests of the sources as they are now for every figure of `path`, measuring nothing; returns
    the [(board, part)] whose digest changed."""
    figures = load_figures(path)
    changed = stale(figures)
    for board, entry in figures["boards"].items():
        entry["digests"] = {"base": digest(board), **{c: digest(board, c) for c in entry["cores"]}}
    _write(figures, path)
    return changed


# Measurement ------------------------------------------------------------------------------------
def _cell_counts(stat):
    def count(cell):
        m = re.findall(rf"^\s+(\d+)\s+{cell}\s*$", stat, re.M)
        return int(m[-1]) if m else 0
    lut, ccu, dpr = count("LUT4"), count("CCU2C"), count("TRELLIS_DPR16X4")
    return dict(lut4=lut + 2 * ccu + 6 * dpr, ff=count("TRELLIS_FF"), dp16kd=count("DP16KD"), ram_lut=4 * dpr)


def synth_counts(board, cores):
    """yosys synth_ecp5 of `board` with `cores` (Verilog from the board target); its cell counts."""
    import importlib
    from litex.soc.integration.builder import Builder
    from cores.lib.block_ram import ecp5_special_overrides
    from boards.ports import builder_options
    logging.disable(logging.INFO)
    # meson and ninja (a CPU's BIOS: picolibc) live beside this Python
    os.environ["PATH"] = os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", "")
    soc = importlib.import_module(f"boards.{board}").BoardSoC(cores=list(cores))
    build = os.path.join(ROOT, "build", "fit")
    os.makedirs(build, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=build) as out:
        # a CPU's ROM holds its BIOS: an empty ROM would be optimised away (16 DP16KD missing in the Versa's
        # Sparsr figures before)
        Builder(soc, output_dir=out, **builder_options(soc)).build(
            build_name="top", run=False, special_overrides=ecp5_special_overrides)
        gw = os.path.join(out, "gateware")
        # The platform's other sources (a CPU's Verilog: boards/ports.py DRAM_CPU), then the SoC.
        extra = "".join(f"read_verilog {path}; " for path, language, _ in sorted(soc.platform.sources)
                        if language in ("verilog", "systemverilog")
                        and os.path.dirname(os.path.abspath(path)) != os.path.abspath(gw))
        # YoWASP tools run sandboxed: relative paths inside the project tree.
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "yosys"), "-q", "-p",
                        extra + "read_verilog top.v; synth_ecp5 -top top -json top.json; tee -q -o stat.txt stat"],
                       cwd=gw, check=True, stdout=subprocess.DEVNULL)
        with open(os.path.join(gw, "stat.txt")) as f:
            return _cell_counts(f.read())


def _record(path, board, part, counts, source_digest):
    """Write one measured figure (`part`: "base" or a core) into `path`, under a lock and re-read first, so that
    measurements of other boards running at the same time keep theirs."""
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        figures = load_figures(path) if os.path.exists(path) else {"boards": {}}
        entry = figures["boards"].setdefault(board, {"cores": {}})
        if part == "base":
            entry["base"] = counts
        else:
            entry["cores"][part] = counts
        entry.setdefault("digests", {})[part] = source_digest
        tmp = f"{path}.{os.getpid()}.tmp"
        _write(figures, tmp)
        os.replace(tmp, path)


def measure(boards=tuple(BOARD_DEVICE), cores=BOARD_CORES, path=FIGURES):
    """Measure the base SoC and each of `cores` alone on each of `boards`, with their digests, into `path`
    (several runs at once, on other boards, may share it)."""
    for board in boards:
        base_digest = digest(board)
        base = synth_counts(board, ())
        _record(path, board, "base", base, base_digest)
        print(board, "base", base, flush=True)
        for core in cores:
            core_digest = digest(board, core)
            alone = synth_counts(board, (core,))
            cost = {r: alone[r] - base[r] for r in RESOURCES}
            _record(path, board, core, cost, core_digest)
            print(board, core, cost, flush=True)
    return load_figures(path)


def uncommitted():
    """The files under cores/, soc/, boards/ and sim/bench/sources.py that differ from git's HEAD (untracked
    ones too): digests recorded from them would not be those of any commit."""
    out = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all", "--", "cores", "soc", "boards",
                          "sim/bench/sources.py"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [line[3:] for line in out.splitlines()
            if line[3:] != os.path.relpath(FIGURES, ROOT) and "__pycache__" not in line]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("board", nargs="?", choices=sorted(BOARD_DEVICE))
    parser.add_argument("cores", nargs="?", type=names(BOARD_CORES, "board cores"), default=[],
                        help=f"comma-separated cores, of {', '.join(BOARD_CORES)}")
    parser.add_argument("--measure", action="store_true", help="rerun yosys for the figures")
    parser.add_argument("--update-digests", action="store_true",
                        help="only record the digests of the sources now for the figures (no measurement)")
    parser.add_argument("--boards", type=names(BOARD_DEVICE, "boards", empty=False), default=list(BOARD_DEVICE),
                        help="with --measure: boards to measure")
    parser.add_argument("--only", type=names(BOARD_CORES, "board cores", empty=False), default=list(BOARD_CORES),
                        help="with --measure: cores to measure")
    args = parser.parse_args(argv)
    dirty = uncommitted() if args.measure or args.update_digests else []
    if dirty:
        print(f"error: commit first: the digests would be of uncommitted sources ({', '.join(dirty[:3])}"
              f"{', ...' if len(dirty) > 3 else ''})", file=sys.stderr)
        return 1
    if args.measure:
        measure(args.boards, args.only)
        return 0
    if args.update_digests:
        changed = update_digests()
        print(f"{os.path.relpath(FIGURES, ROOT)}: digests recorded; changed: "
              f"{', '.join(f'{part} on {board}' for board, part in changed) or 'none'}")
        return 0
    if not args.board:
        parser.error("give a board (and cores), --measure or --update-digests")
    try:
        use, device = check(args.board, args.cores)
    except ValueError as e:                  # DoesNotFit, or no figures for a core
        print(f"error: {e}", file=sys.stderr)
        return 1
    cap = DEVICES[device]
    for r in RESOURCES:
        print(f"{r:8s} {use[r]:6d} / {cap[r]:6d} ({100 * use[r] / cap[r]:.0f} %)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Host demo run inside the simulation namespace by `make sim`: identifier, scratch write/read, simulation
speed, Etherbone read rate, then the demo of every core present in the SoC (software/<core>.demo(bus)).

Prints a report and a JSON line (prefixed "RESULT ") for the caller; exits non-zero on any mismatch.
Environment: INNET_CSR_CSV (the SoC's csr.csv, required), INNET_SOC_IP (default the SoC's address),
INNET_SPARSR_ROWS and INNET_MS_ELEMENTS (the Sparsr and MiniSharp demos' sizes).
"""
import argparse
import importlib
import json
import os
import random
import sys
import time

from soc.common import CORE_NAMES, SOC_IP_ADDRESS
from software.client import InnetClient, TargetUnreachable
from software.minisharp import tap_demo


def scratch_check(bus, n, seed=1):
    rng = random.Random(seed)
    mismatches = 0
    for _ in range(n):
        value = rng.getrandbits(32)
        bus.regs.ctrl_scratch.write(value)
        if bus.regs.ctrl_scratch.read() != value:
            mismatches += 1
    return mismatches


def csr_reads_per_second(bus, seconds=2.0):
    n, t0 = 0, time.monotonic()
    while time.monotonic() - t0 < seconds:
        bus.regs.ctrl_scratch.read()
        n += 1
    return n / (time.monotonic() - t0)


def cycles_per_second(bus, seconds=2.0):
    c0, t0 = bus.uptime_cycles(), time.monotonic()
    time.sleep(seconds)
    c1, t1 = bus.uptime_cycles(), time.monotonic()
    return (c1 - c0) / (t1 - t0)


def main(argv=None):
    argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    if "INNET_CSR_CSV" not in os.environ:
        print("error: INNET_CSR_CSV is not set: this runs inside the simulation (`make sim`, sim.runner)",
              file=sys.stderr)
        return 2
    try:
        bus = InnetClient(os.environ.get("INNET_SOC_IP", SOC_IP_ADDRESS), csr_csv=os.environ["INNET_CSR_CSV"],
                          timeout=5.0).open()
    except (TargetUnreachable, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    result = {}
    result["ident"] = bus.ident()
    print(f"identifier            : {result['ident']}")
    result["scratch_pairs"] = 100
    result["scratch_mismatches"] = scratch_check(bus, result["scratch_pairs"])
    print(f"scratch write/read    : {result['scratch_pairs']} pairs, {result['scratch_mismatches']} mismatches")
    result["cycles_per_s"] = cycles_per_second(bus)
    print(f"simulation speed      : {result['cycles_per_s']:.0f} simulated cycles per second")
    result["csr_reads_per_s"] = csr_reads_per_second(bus)
    print(f"Etherbone CSR reads   : {result['csr_reads_per_s']:.0f} per second")
    failures = result["scratch_mismatches"]
    for core, prefix in CORE_NAMES.items():
        if not any(name.startswith(prefix + "_") for name in bus.regs.d):
            continue
        module = importlib.import_module(f"software.{core}.demo")
        print(f"--- {core} ---")
        try:
            kwargs = {"n_rows": int(os.environ["INNET_SPARSR_ROWS"])} \
                if core == "sparsr" and "INNET_SPARSR_ROWS" in os.environ else {}
            for line in module.demo(bus, prefix=prefix, **kwargs):
                print(f"  {line}")
            if core == "minisharp" and tap_demo.available():
                for line in tap_demo.tap_demo(bus, prefix=prefix, elements=int(os.environ.get("INNET_MS_ELEMENTS",
                                                                                              100_000))):
                    print(f"  {line}")
            result[core] = "ok"
        except Exception as e:  # a core demo failing must fail make sim, with its reason
            print(f"  FAILED: {e}")
            result[core] = f"failed: {e}"
            failures += 1
    print("RESULT " + json.dumps(result))
    bus.close()
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

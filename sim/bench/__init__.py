"""Benchmarks behind `make bench`: each `bench_<name>.py` module defines `run(quick=False) -> BenchResult`."""

# innet: LiteX cores for in-network computing. `make sim` runs the main job, `make test` the tests.
SHELL   := /bin/bash
VENV    := $(CURDIR)/.venv
PY      := $(VENV)/bin/python
export PATH := $(VENV)/bin:$(PATH)
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT_PKGS := verilator libevent-dev libjson-c-dev zlib1g-dev gcc-riscv64-unknown-elf iproute2 build-essential git tshark ccache
BOARD   ?= colorlight_5a_75b
PYTEST_ARGS ?=
TOPOLOGY ?= spine-leaf
RANKS    ?= 4
ELEMENTS ?= 100000
ALLREDUCE_ARGS ?=
# make bench: CLUSTER=ray://HOST:PORT runs the sweep points on a Ray cluster (default: every local core),
# WORKERS=N local processes, FRESH=1 ignores the result cache (build/bench/cache/), BENCH_ARGS=--quick etc.
CLUSTER  ?=
WORKERS  ?=
FRESH    ?=
BENCH_ARGS ?=

.PHONY: deps apt venv sim test test-long bench build clean allreduce formal fuzz sparsr-c
.DEFAULT_GOAL := sim

deps: apt $(VENV)/.installed

apt:
	@missing=""; for p in $(APT_PKGS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "Installing apt packages:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

$(VENV)/.installed: pyproject.toml constraints.txt scripts/yowasp-wrappers.sh
	@[ -x $(PY) ] || python3 -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip==24.3.1 setuptools==75.6.0 wheel==0.45.1
	$(PY) -m pip install -q -c constraints.txt -e '.[test,ray]'
	bash scripts/yowasp-wrappers.sh $(VENV)/bin
	# YoWASP compiles each tool to native code on its first run (yosys: about a minute): here, not in a test
	$(VENV)/bin/boolector --version >/dev/null
	$(VENV)/bin/yosys -V >/dev/null
	$(VENV)/bin/nextpnr-ecp5 --version >/dev/null 2>&1
	@touch $@

sim: deps
	$(PY) -m sim.demo

# The two workers take whole test files (tests/conftest.py: the files with tests marked long first), so that neither
# ends the run alone with a queue of tests of several minutes.
# The Sparsr C host library (software/sparsr/include/sparsr.h) and its example: build/sparsr/ (docs/sparsr.md).
sparsr-c: deps
	$(PY) -m software.sparsr.capi build

test: deps
	$(PY) -m pytest -n 2 --timeout 2400 -m "not extended" $(PYTEST_ARGS)

# What `make test` leaves out (tests marked `extended`: the formal runs, the networks of SoCs, the larger variants
# of tests; docs/CORE_CONTRACT.md, "The two test tiers"), then a short random `make fuzz` (1000 examples a
# target); .ci/run calls it after `make test`.
test-long: deps
	$(PY) -m pytest -n 2 --timeout 3600 -m extended $(PYTEST_ARGS)
	rm -f build/bench/fuzz.json
	HYPOTHESIS_PROFILE=fuzz FUZZ_EXAMPLES=1000 $(PY) -m pytest -n 2 --timeout 3600 tests/test_*_fuzz.py $(PYTEST_ARGS)

allreduce: deps
	$(PY) -m sim.allreduce --topology $(TOPOLOGY) --ranks $(RANKS) --elements $(ELEMENTS) $(ALLREDUCE_ARGS)

bench: deps
	$(PY) -m sim.bench $(BENCH) $(if $(CLUSTER),--cluster $(CLUSTER)) $(if $(WORKERS),--workers $(WORKERS)) \
		$(if $(FRESH),--fresh) $(BENCH_ARGS)

formal: deps
	$(PY) -m sim.formal --broken $(FORMAL)

fuzz: deps
	rm -f build/bench/fuzz.json
	HYPOTHESIS_PROFILE=fuzz $(PY) -m pytest -n 2 --timeout 7200 tests/test_*_fuzz.py $(PYTEST_ARGS)

build: deps
	$(PY) -m boards.build $(BOARD) $(BUILD_ARGS)

clean:
	rm -rf build .pytest_cache .hypothesis
	find . -name __pycache__ -not -path './.venv/*' -prune -exec rm -rf {} +

# One entry point for people and CI. Every target sets up what it needs on a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
BIN := $(VENV)/bin
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
export CARGO_TERM_COLOR := never

.DEFAULT_GOAL := help
.PHONY: help demo test test-rust test-python lint fmt bench fuzz build build-release wheel wheel-test \
	clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-14s %s\n", $$1, $$2}'

$(VENV)/.deps-test: requirements/test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements/test.txt
	touch $@

$(VENV)/.deps-lint: requirements/lint.txt $(VENV)/.deps-test
	$(PY) -m pip install --quiet -r requirements/lint.txt
	touch $@

$(VENV)/.deps-wheel: requirements/wheel.txt $(VENV)/.deps-test
	$(PY) -m pip install --quiet -r requirements/wheel.txt
	touch $@

$(VENV)/.deps-bench: requirements/bench.txt $(VENV)/.deps-test
	$(PY) -m pip install --quiet -r requirements/bench.txt
	touch $@

build: $(VENV)/.deps-test ## build the extension (dev profile) into .venv
	$(BIN)/maturin develop --quiet

build-release: $(VENV)/.deps-test ## build the extension with the release profile (benchmarks)
	$(BIN)/maturin develop --quiet --release

# The wheels `make wheel` builds: manylinux2014 (glibc 2.17) x86_64, one per CPython found here
# (WHEEL_PYTHONS), with zig as the linker, as the release workflow builds them in its container.
WHEEL_DIR := target/wheels-manylinux2014
WHEEL_PYTHONS ?= $(shell $(PYTHON) .ci/wheel_test.py pythons)
WHEEL_SOURCES := Cargo.toml Cargo.lock build.rs pyproject.toml $(shell git ls-files rust python)

$(WHEEL_DIR)/.built: $(VENV)/.deps-wheel $(WHEEL_SOURCES)
	@# A cargo target folder per interpreter: a Python-only change then repackages in seconds
	@# instead of building the extension again (fat LTO) for each version in turn.
	rm -rf $(WHEEL_DIR)
	set -e; for py in $(WHEEL_PYTHONS); do \
		tag=$$($$py -c 'import sys; print("cp%d%d" % sys.version_info[:2])'); \
		CARGO_TARGET_DIR=target/wheel-$$tag $(BIN)/maturin build --release --zig \
			--compatibility manylinux2014 --interpreter $$py --out $(WHEEL_DIR); \
	done
	touch $@

wheel: $(WHEEL_DIR)/.built ## build the release manylinux2014 wheels (zig) for every CPython here

wheel-test: $(WHEEL_DIR)/.built ## auditwheel + the whole test suite, each wheel in a fresh venv
	$(PY) .ci/wheel_test.py test $(WHEEL_DIR) $(WHEEL_PYTHONS)

demo: build ## set up and run `streamfold demo` on the bundled example streams
	$(BIN)/streamfold demo

test: test-rust test-python ## set up and run every test: cargo test, then pytest

test-rust:
	cargo test --quiet

test-python: build
	$(PY) -m pytest -q

lint: $(VENV)/.deps-lint build ## ruff, mypy --strict, pyright, stubtest, rustfmt, clippy (pedantic)
	$(BIN)/ruff check python tests benches
	$(BIN)/ruff format --check python tests benches
	$(BIN)/mypy
	$(BIN)/pyright
	$(PY) -m mypy.stubtest streamfold._core
	cargo fmt --check
	cargo clippy --all-targets --features python -- -D warnings

fmt: $(VENV)/.deps-lint ## format Python and Rust
	$(BIN)/ruff format python tests benches
	$(BIN)/ruff check --fix python tests benches
	cargo fmt

bench: $(VENV)/.deps-bench build-release ## run every benchmark against the peers, write BENCHMARKS.md
	@# LiteLLM is heavy and optional: when it cannot install, its row says so in BENCHMARKS.md.
	$(PY) -m pip install --quiet litellm || echo "litellm could not be installed: its benchmark is reported as not run"
	SF_BENCH_BUILD=release $(PY) benches/run.py $(BENCH_ARGS)

fuzz: ## fuzz the framer and the JSON accumulator, time-boxed (FUZZ_SECONDS, default 60 each)
	bash fuzz/run.sh $${FUZZ_SECONDS:-60}

clean: ## remove build products and the virtual environment
	rm -rf $(VENV) target

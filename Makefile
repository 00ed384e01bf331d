# ffnlab: `make demo` runs the main job, `make test` runs the test suite.
# Both create .venv if it is missing and install everything into it.
#
# Torch is installed first, by tools/install_torch.py: the CPU build where `nvidia-smi -L` lists no
# GPU (from PyTorch's CPU index; where that index cannot be reached, from the indexes pip is set up
# with), the default CUDA build where there is one. Choose the index yourself with TORCH_INDEX, e.g.
#   make test TORCH_INDEX="--index-url https://download.pytorch.org/whl/cu128"

PYTHON ?= python3
VENV ?= .venv
TORCH ?= torch==2.13.0
TORCH_INDEX ?=
PY := $(VENV)/bin/python
BASE := $(VENV)/.ffnlab-base
STAMP := $(VENV)/.ffnlab-installed
PIP := $(PY) -m pip install -q --disable-pip-version-check

# GPU check (benchmarks/gpu_check.py): `make gpu-check` on a CUDA machine, `make gpu-check DEVICE=cpu`
# for the toy-size dry run. It uses .venv when there is one, else python3 as is (a bare GPU machine
# with torch: `make gpu-bundle` here first copies pytest into .gpu-bundle/, which must travel with
# the tree; the built-in corpus ships inside src/).
DEVICE ?= cuda
GPU_OUT ?= benchmarks/results
GPU_PY ?= $(if $(wildcard $(PY)),$(PY),python3)

.PHONY: demo test test-all lint docs golden bench gpu-check gpu-bundle clean-venv

# The demo needs ffnlab and its runtime dependencies only; the tests add pytest, ruff,
# transformers/datasets (parameter counts checked against Hugging Face) and Ray.
$(BASE): pyproject.toml tools/install_torch.py
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) tools/install_torch.py --torch="$(TORCH)" --index="$(TORCH_INDEX)"
	$(PIP) -e .
	touch $(BASE)

$(STAMP): $(BASE)
	$(PIP) -e ".[dev,ray]"
	touch $(STAMP)

demo: $(BASE)
	$(PY) -m ffnlab verify

# mypy (one process) runs beside the tests (its report is printed after theirs); idle workers take
# queued tests from busy ones (worksteal), so the long tests at the end do not leave a core idle
WORKERS ?= auto
# `make test` (CI's command) leaves out the tests marked slow (end-to-end runs of minutes of CPU);
# `make test-all` runs every test
MARKS ?= not slow
test: $(STAMP)
	$(PY) -m ruff check src tests benchmarks tools
	$(PY) -m mypy > .mypy.log 2>&1 & mypy=$$!; \
	$(PY) -m pytest -q -n $(WORKERS) --dist worksteal --durations=10 -m "$(MARKS)"; tests=$$?; \
	wait $$mypy; typed=$$?; cat .mypy.log; rm -f .mypy.log; \
	test $$tests -eq 0 && test $$typed -eq 0

test-all:
	$(MAKE) test MARKS=

# Rewrite tests/golden/COMMAND.json, what each sizing command answers as JSON, and tests/golden/api_FUNCTION.json,
# the results no flag can express (tests/project/test_golden.py checks them): run it after a deliberate change of
# an answer and commit the diff with the change.
golden: $(BASE)
	$(PY) tools/golden.py

# Regenerate the command outputs shown in README.md and docs/ (tests/project/test_docs_blocks.py checks them).
docs: $(BASE)
	$(PY) tools/docs_blocks.py
	$(PY) tools/step_figure.py

lint: $(STAMP)
	$(PY) -m ruff check src tests benchmarks tools

bench: $(STAMP)
	$(PY) benchmarks/cli_latency.py

gpu-check:
	$(GPU_PY) benchmarks/gpu_check.py --device $(DEVICE) --out $(GPU_OUT)

gpu-bundle: $(STAMP)
	$(PY) benchmarks/gpu_check.py --bundle .gpu-bundle
	# pytest's backports, needed only if the GPU machine runs Python < 3.11 (pure-Python wheels)
	$(PIP) --no-deps --target .gpu-bundle --upgrade --python-version 3.10 --only-binary=:all: \
		--implementation py "tomli>=2" "exceptiongroup>=1"

clean-venv:
	rm -rf $(VENV)

# Mutation testing (mutmut 3, configured in pyproject.toml [tool.mutmut]): one module at a time,
# each mutant judged by the tests that run the function it changes; then each module's score
# (killed / checked). Each module's log goes to mutants/run-MODULE.log (`mutmut results` and
# `mutmut show NAME` list and show the survivors). `make mutate MUTATE_MODULES=ffnlab.sizing.widths`
# for one module; MUTATE_MIN=90 fails when a module scores below 90%. Every mutant of the four
# modules (~2,800) takes hours on two cores; MUTATE_SAMPLE=150 checks a seeded uniform sample of
# 150 per module instead (a first call brings the mutants up to date without checking any) and prints
# each module's share killed with its 95% interval.
MUTATE_MODULES ?= ffnlab.sizing.counting ffnlab.sizing.widths ffnlab.sizing.memory.activations ffnlab.experiments.analysis.stats
MUTATE_JOBS ?= 2
MUTATE_MIN ?=
MUTATE_SAMPLE ?=

.PHONY: mutate
mutate: $(STAMP)
	mkdir -p mutants
	for m in $(MUTATE_MODULES); do echo "mutating $$m"; \
		if [ -n "$(MUTATE_SAMPLE)" ]; then \
			$(PY) -m mutmut run "$$m.no-such-mutant" >mutants/run-$$m.log 2>&1 || true; \
			set -f; names=$$($(PY) tests/helpers/mutation_scores.py --names $(MUTATE_SAMPLE) $$m) || exit 1; \
		else set -f; names="$$m.*"; fi; \
		$(PY) -m mutmut run --max-children $(MUTATE_JOBS) $$names >mutants/run-$$m.log 2>&1 \
		|| { tail -n 40 mutants/run-$$m.log; exit 1; }; done
	$(PY) tests/helpers/mutation_scores.py $(MUTATE_MODULES) $(if $(MUTATE_SAMPLE),--sample $(MUTATE_SAMPLE)) \
		$(if $(MUTATE_MIN),--min $(MUTATE_MIN))

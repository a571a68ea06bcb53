# Every target that runs code does the whole set-up first, so `make demo` and
# `make test` work on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
# The CPU wheel; an unpinned `torch` pulls several GB of CUDA packages.
TORCH_SPEC ?= torch==2.13.0
BIN := $(VENV)/bin
STAMP := $(VENV)/.pitstop-installed
DOCS_STAMP := $(VENV)/.pitstop-docs-installed

.PHONY: demo test test-all test-gpu lint typecheck docs bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install "$(TORCH_SPEC)"
	$(BIN)/python -m pip install -e ".[dev,onnx,zoo,quant]"
	touch $(STAMP)

# mkdocs, mkdocs-material, mkdocstrings (the `docs` extra), only for `make docs`
$(DOCS_STAMP): $(STAMP) pyproject.toml
	$(BIN)/python -m pip install -e ".[docs]"
	touch $(DOCS_STAMP)

demo: $(STAMP)
	$(BIN)/pitstop bench zoo:mlp
	$(BIN)/pitstop optimize zoo:cnn --batch-size 16 --time-budget-s 120

# Two lanes: most tests in TEST_WORKERS processes (pytest-xdist, one module to a worker so a
# module's shared run happens once), then the `serial` tests alone, since they load every core
# themselves. --no-loadscope-reorder keeps the order of
# tests/conftest.py (the slowest modules first, so that both workers end together). CONTRIBUTING.md
# has the figures.
# The serial lane collects only the modules that mark a test `serial` (collecting all 1,400 tests
# to select three took 9 of its ~45 s).
TEST_WORKERS ?= 2
SERIAL_MODULES = $(shell grep -rlE --include='test_*.py' 'mark\.serial' tests)
test: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not slow and not gpu and not serial"
	$(BIN)/python -m pytest -m "serial and not slow and not gpu" $(SERIAL_MODULES)

test-all: $(STAMP)
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadfile --no-loadscope-reorder -m "not gpu and not serial"
	$(BIN)/python -m pytest -m "serial and not gpu" $(SERIAL_MODULES)

test-gpu: $(STAMP)
	$(BIN)/python -m pytest -m gpu

lint: $(STAMP) typecheck
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/pitstop lint .

typecheck: $(STAMP)
	$(BIN)/mypy

# the site in site/; docs/gen_pages.py (an mkdocs hook) generates the --help texts and PIT code pages.
# NO_MKDOCS_2_WARNING: mkdocs-material prints an end-of-life banner on every build otherwise.
docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python benchmarks/grad_modes.py
	$(BIN)/python benchmarks/harness_overhead.py
	$(BIN)/python benchmarks/optimize_zoo.py
	$(BIN)/python benchmarks/doctor_overhead.py
	$(BIN)/python benchmarks/lint_speed.py   # needs pip install torchfix
	$(BIN)/python benchmarks/checkpointing.py
	$(BIN)/python benchmarks/bucketing.py
	$(BIN)/python benchmarks/optimize_models.py
	$(BIN)/python benchmarks/train_zoo.py
	$(BIN)/python benchmarks/profile_planted.py
	$(BIN)/python benchmarks/doctor_realworld.py    # needs the corpus: see the script's first line
	$(BIN)/python benchmarks/lint_realworld.py      # likewise
	$(BIN)/python benchmarks/fault_injection.py

clean:
	rm -rf $(VENV) build dist site src/*.egg-info .pytest_cache .ruff_cache

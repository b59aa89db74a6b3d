PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-all bench reproduce clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/privrank demo

test: $(STAMP)  # the quick loop: every test but the slow ones, on every core
	$(PY) -m pytest -n auto -m "not slow"

test-all: $(STAMP)  # everything, as CI runs it
	$(PY) -m pytest -n auto

bench: $(STAMP)
	$(PY) benchmarks/bench_btl.py
	$(PY) benchmarks/bench_kemeny.py

reproduce: $(STAMP)
	$(VENV)/bin/privrank reproduce xu --quick --out results/xu

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info

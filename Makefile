PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
CORE := $(VENV)/.installed-core
STAMP := $(VENV)/.installed

.PHONY: demo check test test-all docs system-deps bench frontier reproduce clean

$(VENV)/bin/python:
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

# the demo needs privrank's own dependencies only
$(CORE): pyproject.toml setup.py src/privrank/_kernels.c $(VENV)/bin/python
	$(PY) -m pip install --quiet -e .
	touch $(CORE)

# the developer set: the test suite's tools and every extra
$(STAMP): pyproject.toml $(CORE)
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(CORE)
	$(VENV)/bin/privrank demo

# the quick core: each package's basic contract, the fast files only (about 620 tests)
QUICK := tests/test_architecture.py tests/test_guarantees.py tests/test_kernels.py tests/test_ledger.py \
	tests/aggregation/test_footrule.py tests/aggregation/test_kemeny.py \
	tests/audit/test_blackbox_rr.py tests/audit/test_core.py \
	tests/cli/test_rank_cli.py tests/cli/test_central_cli.py tests/cli/test_output_formats.py \
	tests/data/test_io.py tests/data/test_comparisons.py tests/data/test_rankings.py \
	tests/engines/test_engine_rankings.py tests/experiments/test_runner.py \
	tests/mechanisms/test_randomized_response.py tests/mechanisms/test_noise.py \
	tests/pairwise/test_btl.py tests/pairwise/test_local.py tests/pairwise/test_central.py \
	tests/serve/test_survey.py tests/serve/test_store.py

check: $(STAMP)  # lint (ruff: pyflakes and syntax errors) and the quick core, under 2 minutes
	$(VENV)/bin/ruff check .
	$(PY) -m pytest -n auto -m "not slow" $(QUICK)

test: $(STAMP)  # the quick loop: every test but the slow ones, on every core
	$(PY) -m pytest -n auto -m "not slow"

test-all: $(STAMP) system-deps  # everything, as CI runs it
	$(PY) -m pytest -n auto

docs: $(STAMP)  # the documentation site, into site/; a warning (a broken link, a docstring at odds with its signature) is an error
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict

# Debian's Chromium, ChromeDriver, PostgreSQL and R for the survey's tests in a real browser,
# against a real database server, and of its export read by R, and fish for the syntax check of its
# completion script (skipped, with a message saying so, where they cannot be installed)
system-deps:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver -a -x /usr/bin/Rscript -a -x /usr/bin/fish \
	  -a -n "$$(ls /usr/lib/postgresql/*/bin/initdb 2>/dev/null)" || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (timeout 600 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
	      chromium chromium-driver postgresql r-base-core fish >/dev/null) \
	      || echo "could not install chromium, postgresql, R or fish: their tests will be skipped"; \
	  else echo "no chromium, postgresql, R or fish and no root to install them: their tests will be skipped"; fi; }

# every script of benchmarks/, end to end, in about 30 minutes on a quiet 2-core machine; the peers
# (choix, evalica, pref_voting, scikit-learn) are installed first. Each script that has a table in
# README.md's Speed and Utility sections rewrites it (median and min-max over interleaved rounds, the
# command, the date, the load); each line prints its own wall and CPU time. The serve benchmark also
# measures PostgreSQL on a throw-away server (pg_virtualenv, Debian's postgresql-common) when there is
# one. The utility table is rewritten from the shipped frontier (src/privrank/frontier.json): `make
# frontier` re-runs that grid (about 15 minutes of CPU) and rewrites the file that --method auto reads.
TIMED := /usr/bin/time -f "%e s wall, %U s CPU: %C"
bench: $(STAMP)
	$(PY) -m pip install --quiet -e ".[bench]"
	$(TIMED) $(PY) benchmarks/bench_cli.py
	$(TIMED) $(PY) benchmarks/bench_btl.py --without-opt --readme
	$(TIMED) $(PY) benchmarks/bench_local.py --readme
	$(TIMED) $(PY) benchmarks/bench_kemeny.py --max-m 1000 --draws 3 --readme
	$(TIMED) $(PY) benchmarks/bench_arena.py --recipe-rounds 1 --readme
	if command -v pg_virtualenv >/dev/null; then \
	  $(TIMED) pg_virtualenv -t $(PY) benchmarks/bench_serve.py --postgres postgresql:// --readme; \
	else $(TIMED) $(PY) benchmarks/bench_serve.py --readme; fi
	$(TIMED) $(PY) benchmarks/bench_scale.py --n 2e7 --rankings 1e6
	$(TIMED) $(PY) benchmarks/bench_scale.py --arena --n 1e7
	$(TIMED) $(PY) benchmarks/bench_plan.py
	$(TIMED) $(PY) benchmarks/bench_inference.py
	$(TIMED) $(PY) benchmarks/bench_aggregate_intervals.py
	$(TIMED) $(PY) benchmarks/bench_utility.py --from-json src/privrank/frontier.json --readme

frontier: $(STAMP)
	$(TIMED) $(PY) benchmarks/bench_utility.py --readme

reproduce: $(STAMP)
	$(VENV)/bin/privrank reproduce xu --quick --out results/xu

clean:
	rm -rf $(VENV) build site *.egg-info src/*.egg-info

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test test-all browser bench reproduce clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/privrank demo

test: $(STAMP)  # the quick loop: every test but the slow ones, on every core
	$(PY) -m pytest -n auto -m "not slow"

test-all: $(STAMP) browser  # everything, as CI runs it
	$(PY) -m pytest -n auto

# Debian's Chromium and ChromeDriver for the survey page's tests in a real browser (skipped,
# with a message saying so, where they cannot be installed)
browser:
	@test -x /usr/bin/chromium -a -x /usr/bin/chromedriver || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    (timeout 600 apt-get update -qq && DEBIAN_FRONTEND=noninteractive timeout 900 apt-get install -y -qq \
	      chromium chromium-driver >/dev/null) || echo "could not install chromium: the browser tests will be skipped"; \
	  else echo "no chromium and no root to install it: the browser tests will be skipped"; fi; }

bench: $(STAMP)
	$(PY) benchmarks/bench_btl.py
	$(PY) benchmarks/bench_kemeny.py

reproduce: $(STAMP)
	$(VENV)/bin/privrank reproduce xu --quick --out results/xu

clean:
	rm -rf $(VENV) build *.egg-info src/*.egg-info

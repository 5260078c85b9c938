# Every target sets up its own virtual environment on first use (.venv, reinstalled when pyproject.toml changes).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

SLOW_STAMP := $(VENV)/.installed-slow

.PHONY: run test test-slow venv venv-slow clean

# pip byte-compiles what it installs one file at a time (~30 s for torch on 2 cores); compileall does it on
# every core. Like pip, it passes over the few files written for another Python's syntax (its exit status).
COMPILE_PACKAGES = $(PY) -m compileall -q -j0 $$($(PY) -c 'import sysconfig; print(sysconfig.get_path("purelib"))') > /dev/null || true

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --no-compile -e ".[dev,triton,cluster]"
	$(COMPILE_PACKAGES)
	touch $(STAMP)

# The slow tests also read an SMV file with a second reader (the interop extra, fabio)
venv-slow: $(SLOW_STAMP)

$(SLOW_STAMP): $(STAMP)
	$(PY) -m pip install -q --no-compile -e ".[dev,triton,interop]"
	$(COMPILE_PACKAGES)
	touch $(SLOW_STAMP)

# Main job: the tracking run (docs/tracking.md), all of it in .ci/track: records the RECENT most recent
# commits, HEAD included, that this machine has not recorded yet (HEAD always again), publishes
# reports/html with its status page and prints what changed. make turns any failing recipe into its own exit status 2; for
# detsim-track's own (0 all good, 1 something regressed, 2 something could not be measured) run
# `bash .ci/track` directly, as the README does.
ASV_MACHINE ?= $(shell hostname)
RECENT      ?= 10
run: venv
	RECENT=$(RECENT) ASV_MACHINE=$(ASV_MACHINE) TARGET=$(TARGET) bash .ci/track

# The default test run (CI runs exactly this; slow tests are excluded by pyproject's addopts), one
# pytest-xdist worker per CPU, an idle worker taking tests queued for a busy one. The flags are here, not
# in addopts: `python -m pytest PATH` runs in one process, and so do the pytest runs of detsim-track evidence.
# The checkout's modules are byte-compiled first, on every core: the tests start ~130 fresh interpreters,
# and where PYTHONDONTWRITEBYTECODE is set (it is on the machines docs/tracking.md was measured on) each
# would otherwise compile again what it imports from the checkout. Then pytest's cache of the test modules
# with their asserts rewritten (tests/rewritten_asserts.py): each worker would otherwise rewrite them all.
test: venv
	$(PY) -m compileall -q -j0 detsim benchmarks tests
	$(PY) tests/rewritten_asserts.py
	$(PY) -m pytest -q -n logical --dist worksteal

test-slow: venv-slow
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) out .pytest_cache

# Every target sets up its own virtual environment on first use (.venv, reinstalled when pyproject.toml changes).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed

.PHONY: run test test-slow venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e ".[dev,triton]"
	touch $(STAMP)

# Main job: the tracking run (docs/tracking.md). Records the RECENT commits before HEAD that this
# machine has not recorded yet and (again) HEAD itself, on the golden cases in tests/golden; publishes
# the history to reports/html and prints what changed since the stored baselines. Exit status is
# detsim-track's: 0 all good, 1 something regressed, 2 something could not be measured.
ASV_MACHINE ?= $(shell hostname)
RECENT      ?= 10
ASV_RUN     := $(VENV)/bin/asv run --machine $(ASV_MACHINE) --record-samples
run: venv
	mkdir -p .asv
	$(VENV)/bin/asv machine --yes --machine $(ASV_MACHINE) > /dev/null
	git rev-list --skip=1 --max-count=$(RECENT) HEAD > .asv/recent-commits.txt
	test ! -s .asv/recent-commits.txt || $(ASV_RUN) --skip-existing-commits HASHFILE:.asv/recent-commits.txt \
		|| test $$? -eq 2
	$(ASV_RUN) HEAD^! || test $$? -eq 2
	$(VENV)/bin/asv publish > /dev/null
	$(VENV)/bin/detsim-track regressions --machine $(ASV_MACHINE)

# The default test run (CI runs exactly this; slow tests are excluded by pyproject's addopts).
test: venv
	$(PY) -m pytest -q

test-slow: venv
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) out .pytest_cache

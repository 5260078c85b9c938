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

# Main job: a simulation on nanoBragg's defaults (1024x1024, 100 A cubic cell, default_F 100).
run: venv
	mkdir -p out
	$(VENV)/bin/detsim -cell 100 100 100 90 90 90 -default_F 100 -floatfile out/floatimage.bin -intfile out/intimage.img

# The default test run (CI runs exactly this; slow tests are excluded by pyproject's addopts).
test: venv
	$(PY) -m pytest -q

test-slow: venv
	$(PY) -m pytest -q -m slow

clean:
	rm -rf $(VENV) out .pytest_cache

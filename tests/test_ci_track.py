"""The tracking run (.ci/track) keeps tools' caches inside the checkout: what it writes elsewhere is only
what docs/tracking.md names."""

from __future__ import annotations

import ast
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = (ROOT / ".ci" / "track").read_text()


def test_virtualenv_keeps_its_app_data_in_the_checkout_for_every_asv_call():
    export = re.search(r'^export VIRTUALENV_APP_DATA="\$PWD/(\.asv/[^"]+)"$', SCRIPT, re.M)
    assert export, "the tracking run must export VIRTUALENV_APP_DATA inside .asv (else ~/.cache/virtualenv)"
    first_asv = re.search(r"^\$V/asv ", SCRIPT, re.M)
    assert first_asv and export.start() < first_asv.start()
    assert SCRIPT.index("cd \"$(dirname \"$0\")/..\"") < export.start()  # $PWD is the checkout there


def _phase_patterns() -> dict[str, re.Pattern]:
    return {name: re.compile(re.search(rf"^{name}='([^']+)'$", SCRIPT, re.M).group(1))
            for name in ("EXACT_1", "EXACT_2", "TIMED")}


def _benchmark_names() -> list[str]:
    """Every benchmark of the asv suite, named as asv names it (module.Class.method or module.function)."""
    prefixes = ("time_", "timeraw_", "track_", "peakmem_", "mem_")
    names = []
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith(prefixes):
                names.append(f"{path.stem}.{node.name}")
            elif isinstance(node, ast.ClassDef):
                names += [f"{path.stem}.{node.name}.{item.name}" for item in node.body
                          if isinstance(item, ast.FunctionDef) and item.name.startswith(prefixes)]
    return names


def test_each_benchmark_is_recorded_in_exactly_one_phase_and_the_timings_alone():
    phases = _phase_patterns()
    names = _benchmark_names()
    assert len(names) > 5
    for name in names:
        matched = [phase for phase, pattern in phases.items() if pattern.search(name)]
        assert len(matched) == 1, (name, matched)
    timed = {n for n in names if phases["TIMED"].search(n)}
    assert timed == {"bench_engine.PathThroughput.track_ns_per_pixel_step", "bench_cli.DetsimCommand.time_detsim_command"}


def test_a_fresh_clone_installs_the_asv_that_pyproject_pins_before_the_rest():
    sed = re.search(r"\$\((sed -n '[^']*' pyproject\.toml)\)", SCRIPT).group(1)
    pinned = subprocess.run(["bash", "-c", sed], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    dev = re.search(r"^dev = \[(.*)\]$", (ROOT / "pyproject.toml").read_text(), re.M).group(1)  # dev extra
    assert pinned == [r for r in re.findall(r'"([^"]+)"', dev) if r.startswith("asv==")] != []
    assert SCRIPT.index(sed) < SCRIPT.index("make venv >&2 &")  # asv first, then .venv's rest beside asv's setup


def test_ci_runs_the_readmes_test_command_as_make_test_runs_it():
    recipe = re.search(r"^test: venv\n((?:\t.*\n)+)", (ROOT / "Makefile").read_text(), re.M)
    assert recipe, "the Makefile has no test target"
    commands = [line.strip().replace("$(PY)", ".venv/bin/python") for line in recipe.group(1).splitlines()]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert ci[-len(commands):] == commands and "make venv" in ci  # the same commands, last, after the install
    readme = (ROOT / "README.md").read_text()
    assert "make test" in readme and commands[-1].removeprefix(".venv/bin/") in readme

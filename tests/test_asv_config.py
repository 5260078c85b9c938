"""asv.conf.json gives every benchmark of the suite its regression threshold and direction.

A benchmark that no ``regressions_thresholds`` entry matches falls back to asv's 5%, which the noise of
a shared runner exceeds on every run; a throughput benchmark (larger is better) left to asv's own
detection is flagged in the wrong direction. Names are read from the benchmark files' syntax, so the
check needs neither asv nor an import of the suite (which pins torch's thread count).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from detsim.track.history.cmd_regressions import load_config

ROOT = Path(__file__).resolve().parents[1]
PREFIXES = ("time_", "peakmem_", "track_", "mem_")
MACHINE_REFERENCE = "bench_engine.MachineReference."  # measures the machine; never a regression


def benchmark_names() -> dict[str, str | None]:
    """``module.Class.method`` (or ``module.function``) of every benchmark -> its class's ``unit``."""
    names = {}
    for path in sorted((ROOT / "benchmarks").glob("bench_*.py")):
        module = path.stem
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name.startswith(PREFIXES):
                names[f"{module}.{node.name}"] = None
            if isinstance(node, ast.ClassDef):
                unit = next((n.value.value for n in node.body if isinstance(n, ast.Assign)
                             and any(getattr(t, "id", None) == "unit" for t in n.targets)
                             and isinstance(n.value, ast.Constant)), None)
                for item in node.body:
                    if isinstance(item, ast.FunctionDef) and item.name.startswith(PREFIXES):
                        names[f"{module}.{node.name}.{item.name}"] = unit
        if "define_case_tracks(" in path.read_text():  # per-case tracks made at import time
            names[f"{module}.track_<case>"] = None
    return names


def test_every_benchmark_has_a_regression_threshold():
    conf = load_config(ROOT)
    thresholds = conf["regressions_thresholds"]
    names = benchmark_names()
    assert any(".PathThroughput." in n for n in names) and any(".track_<case>" in n for n in names)
    missing = [n for n in names if not n.startswith(MACHINE_REFERENCE)
               and not any(re.match(regex, n) for regex in thresholds)]
    assert not missing, f"no regressions_thresholds entry in asv.conf.json matches {missing}"


def test_throughput_benchmarks_are_kept_from_asvs_own_detection():
    first_commits = load_config(ROOT).get("regressions_first_commits") or {}
    off = [regex for regex, commit in first_commits.items() if commit is None]
    throughput = [n for n, unit in benchmark_names().items() if unit and unit.endswith("/s")]
    assert throughput
    wrong_way = [n for n in throughput if not any(re.match(regex, n) for regex in off)]
    assert not wrong_way, f"asv would flag a rise of these (larger is better): {wrong_way}"

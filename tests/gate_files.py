"""The committed pytest-benchmark run files of the gate's tests (tests/data/bench/), and ways to vary them.

The files are real ``pytest bench --benchmark-json`` outputs of an Intel AVX512 machine (CPU flags
trimmed; each benchmark's machine class added as bench/conftest.py now records it): a baseline, an
unchanged re-run, runs with each planted fault of bench/conftest.py (2x slowdown, parity break,
one-ulp image change), a truncated file and a run without its calibration benchmark.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

from detsim.track.judge.bench import BaselineVerdict, judge, load_results
from detsim.track.judge.text import View, finding_line

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "bench"
COMMITTED = ROOT / "results" / "baselines" / "pytest-baseline.json"
BASELINE = DATA / "baseline.json"
SIMULATE = [
    "test_simulate[p1_small-cpu-float32]", "test_simulate[p1_small-cpu-float64]",
    "test_simulate[phi_40steps-cpu-float32]", "test_simulate[phi_40steps-cpu-float64]",
]
INTEL = "x86_64 GenuineIntel AVX512"  # the machine class of the committed run files
AMD = "x86_64 AuthenticAMD AVX512"


def verdict_of(results: Path, baseline: Path = BASELINE, **kwargs) -> BaselineVerdict:
    return judge(load_results(baseline), load_results(results), **kwargs)


def flagged(verdict: BaselineVerdict, family: str) -> dict[str, str]:
    """The lines of the verdict's findings of ``family`` (``timing``, ``parity``, ``determinism``...), by name."""
    return {f.series.name: finding_line(f, view=View.GATE) for f in verdict.findings if f.series.family == family}


def write_variant(tmp_path: Path, edit: Callable[[dict], None], source: str = "unchanged.json",
                  name: str = "variant.json") -> Path:
    """A copy of ``source`` (in tests/data/bench) changed by ``edit(data)``."""
    data = json.loads((DATA / source).read_text())
    edit(data)
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


def simulate_entries(data) -> list[dict]:
    return [b for b in data["benchmarks"] if b["extra_info"]["role"] == "simulate"]


def entry(data, name) -> dict:
    return next(b for b in data["benchmarks"] if b["name"] == name)

"""The gate's COST check on instruction counts, and the planted 3 % extra computation it must catch."""

from __future__ import annotations

import pytest

from detsim.track.measure.cost import not_measured_reason
from detsim.track.measure.cost import CostSpec, count_spec
from detsim.track.gate.checks import GateLine, cost_check, judge
from detsim.track.gate.results import Benchmark
from detsim.track.verdict.finding import Finding
from detsim.track.verdict.thresholds import COST_THRESHOLD

INTEL = "x86_64 GenuineIntel AVX2"
CLASS = {"torch": "2.13.0", "threads": 1, "cpu_class": INTEL, "dtype": "float64", "device": "cpu"}


def bench(instructions=None, role="simulate", **extra) -> Benchmark:
    info = {"role": role, **CLASS, **extra}
    if instructions is not None:
        info.update(instructions=instructions, instructions_workload="P1@64 cpu float64 eager")
    return Benchmark(fullname=f"f.py::{role}", name=role, min_s=0.01, extra=info)


def test_a_rise_over_the_threshold_is_a_cost_finding():
    finding = cost_check(bench(10_000_000), bench(10_210_000))
    assert isinstance(finding, Finding) and finding.series.family == "cost" and finding.label == "REGRESSED"
    assert "+2.10%" in finding.detail["evidence"] and "limit +2%" in finding.detail["evidence"]


def test_a_rise_within_the_threshold_and_a_fall_pass():
    assert cost_check(bench(10_000_000), bench(10_190_000)).startswith("cost 10,000,000 instructions -> 10,190,000")
    assert isinstance(cost_check(bench(10_000_000), bench(9_000_000)), str)


def test_no_count_on_either_side_is_not_checked():
    assert cost_check(bench(), bench()) is None
    never = "instructions not counted: the compiled path under valgrind takes minutes to compile"
    assert cost_check(bench(instructions_note=never), bench(instructions_note=never)) is None


def test_a_count_missing_on_one_side_is_a_note_with_the_reason():
    note = "instruction counts not measured: valgrind is not installed (Debian package `valgrind`)"
    run_side = cost_check(bench(10_000_000), bench(instructions_note=note))
    assert isinstance(run_side, GateLine) and run_side.kind == "note" and "valgrind" in run_side.text
    assert cost_check(bench(), bench(10_000_000)).kind == "note"


def test_counts_of_another_machine_class_or_region_are_not_compared():
    other = bench(20_000_000)
    other = Benchmark(other.fullname, other.name, other.min_s, {**other.extra, "cpu_class": "aarch64"})
    note = cost_check(bench(10_000_000), other)
    assert note.kind == "note" and "cpu_class" in note.text
    moved = bench(20_000_000)
    moved = Benchmark(moved.fullname, moved.name, moved.min_s, {**moved.extra, "instructions_workload": "P1@128"})
    assert cost_check(bench(10_000_000), moved).kind == "note"


def test_the_gate_fails_on_cost_alone():
    baseline = {"c": bench(1000, role="calibration"), "s": bench(10_000_000)}
    run = {"c": bench(1000, role="calibration"), "s": bench(10_500_000)}
    baseline = {b.fullname: b for b in baseline.values()}
    run = {b.fullname: b for b in run.values()}
    verdict = judge(baseline, run)
    assert [f.series.family for f in verdict.findings] == ["cost"]
    assert verdict.exit == 1


PLANT = 26_000  # elements of exp added to the region: about 3 % of P1@64's ~11.3 M instructions


# Three counts under valgrind (about 10 s of imports each): slow. Quick twins in the default run: the COST
# check on given counts (above), the plant joining the measured region only when asked
# (tests/track/base/test_base_callgrind.py) and a real count of a small region (tests/track/cost/test_cost_counting.py).
@pytest.mark.slow
@pytest.mark.skipif(not_measured_reason() is not None, reason=str(not_measured_reason()))
def test_a_planted_three_percent_is_flagged_and_a_recount_is_not(tmp_path):
    spec = CostSpec("P1@64")
    first, again = (count_spec(spec, out_dir=tmp_path, keep=False).instructions for _ in range(2))
    planted = count_spec(spec, out_dir=tmp_path, keep=False, env={"DETSIM_COST_PLANT": str(PLANT)}).instructions
    assert 0.025 < planted / first - 1 < 0.04  # the plant costs about 3 %
    assert abs(again / first - 1) < COST_THRESHOLD / 4  # counts repeat far inside the threshold
    assert isinstance(cost_check(bench(first), bench(again)), str)  # passed
    assert isinstance(cost_check(bench(first), bench(planted)), Finding)


@pytest.fixture
def bench_conftest():
    """bench/conftest.py as a plain module (its hooks are not registered here)."""
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[3] / "bench" / "conftest.py"
    spec = importlib.util.spec_from_file_location("bench_conftest_cost", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


class _Recorder:
    def __init__(self):
        self.extra_info = {}


def test_bench_records_why_a_count_is_missing_in_one_line(bench_conftest, monkeypatch):
    import shutil

    monkeypatch.setattr(shutil, "which", lambda name: None)
    recorder = _Recorder()
    bench_conftest.record_instructions(recorder, "P1@128 cpu float64 eager", spec=CostSpec("P1@128"))
    note = recorder.extra_info["instructions_note"]
    assert "instructions" not in recorder.extra_info and "`valgrind`" in note and "\n" not in note
    assert cost_check(bench(10_000_000), bench(instructions_note=note)).kind == "note"


def test_bench_counts_can_be_switched_off(bench_conftest, monkeypatch):
    monkeypatch.setenv("DETSIM_BENCH_COUNT", "0")
    recorder = _Recorder()
    bench_conftest.record_instructions(recorder, "x", "x = 1", "x")
    assert recorder.extra_info == {"instructions_note": "instruction counts not measured: DETSIM_BENCH_COUNT=0"}

"""The goals table and its rule (met, missed with its gap, or not measured with why; never met on a dry run), and a
check's record read against the goals and against nanoBragg.c: which path's value each goal is judged on, what is
missing, and the dry run's CPU figures never judged."""

import math

import pytest

from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.gpu.goals import (MIN_THROUGHPUT_PIXEL_STEPS, GOALS, GOALS_BY_KEY, GoalValue, Scope, Sense,
                                    Verdict, goal_rows, judge, measurements, side_by_side)

H200 = "NVIDIA H200"


def test_the_table_holds_each_target_of_the_device_check_once_with_its_limit():
    assert len(GOALS_BY_KEY) == len(GOALS)
    limits = {t.key: (t.sense, t.limit) for t in GOALS}
    assert limits["rate-float32-kernel"] == limits["rate-float32-end-to-end"] == (Sense.AT_LEAST, 3e11)
    assert limits["rate-float64-kernel"] == limits["rate-float64-end-to-end"] == (Sense.AT_LEAST, 1e11)
    assert limits["p2-end-to-end-float32"] == (Sense.AT_MOST, 2.0)
    assert limits["fixed-cost-new"] == (Sense.AT_MOST, 1.0) and limits["fixed-cost-cached"] == (Sense.AT_MOST, 0.2)
    assert limits["p4096-per-step"] == (Sense.AT_LEAST, 1.0) and limits["launches"] == (Sense.AT_MOST, 10)
    assert limits["bit-identical"] == (Sense.AT_MOST, 0) and limits["parity"] == (Sense.AT_LEAST, PARITY_MIN_R)
    assert MIN_THROUGHPUT_PIXEL_STEPS == 3e9
    assert {t.key for t in GOALS if t.scope is Scope.EVERY} == {"bit-identical", "parity"}


def test_a_value_within_its_limit_is_met_and_one_past_it_missed_with_how_far():
    rate = GOALS_BY_KEY["rate-float32-kernel"]
    assert judge(rate, GoalValue(3e11, "triton-float32, P3G"), H200).verdict is Verdict.MET
    missed = judge(rate, GoalValue(5e9, "eager-float32, P3G"), H200)
    assert missed.verdict is Verdict.MISSED and missed.gap == 60 and "60x off" in missed.note
    cost = GOALS_BY_KEY["fixed-cost-cached"]
    assert judge(cost, GoalValue(0.2), H200).verdict is Verdict.MET
    slow = judge(cost, GoalValue(12.0), H200)
    assert slow.verdict is Verdict.MISSED and math.isclose(slow.gap, 60)


def test_a_correlation_is_off_by_its_distance_from_one():
    parity = judge(GOALS_BY_KEY["parity"], GoalValue(0.999, "eager-float32, c1"), H200)
    assert parity.verdict is Verdict.MISSED and math.isclose(parity.gap, 2.0)


def test_a_count_that_must_be_zero_is_missed_without_a_ratio():
    row = judge(GOALS_BY_KEY["bit-identical"], GoalValue(2, "compiled-float32, triton-float32"), H200)
    assert row.verdict is Verdict.MISSED and row.gap is None and row.note == ""


def test_nothing_is_met_or_missed_on_a_dry_run_and_its_cpu_figure_is_said_to_be_one():
    for goal in GOALS:
        row = judge(goal, GoalValue(goal.limit, "eager-float32"), None)
        assert row.verdict is Verdict.NOT_MEASURED and row.note.startswith("no CUDA device: dry run (CPU, small")
    assert judge(GOALS[0], GoalValue(None, why="x"), None).note == "no CUDA device: dry run"
    assert judge(GOALS_BY_KEY["parity"], GoalValue(0.99999999), None).note.endswith("0.999999990 r)")


def test_what_was_not_measured_says_why():
    row = judge(GOALS_BY_KEY["launches"], GoalValue(None, why="no render of P2 was profiled"), H200)
    assert row.verdict is Verdict.NOT_MEASURED and row.note == "no render of P2 was profiled"


def test_a_target_for_every_path_is_met_only_once_every_path_was_measured():
    parity = GOALS_BY_KEY["parity"]
    partial = judge(parity, GoalValue(0.99999, "eager-float64, c1", missing=("triton-float64",)), H200)
    assert partial.verdict is Verdict.NOT_MEASURED and "not measured: triton-float64" in partial.note
    below = judge(parity, GoalValue(0.99, "eager-float64, c1", missing=("triton-float64",)), H200)
    assert below.verdict is Verdict.MISSED and "also not measured: triton-float64" in below.note
    assert judge(parity, GoalValue(0.99999, "eager-float64, c1"), H200).verdict is Verdict.MET


def test_a_row_is_recorded_as_json_ready_fields():
    row = judge(GOALS_BY_KEY["launches"], GoalValue(3890, "eager-float32, P2"), H200).to_dict()
    assert row == {"key": "launches", "what": "device launches per render (P2)", "limit": "<= 10 launches",
                   "scope": "best path", "how": GOALS_BY_KEY["launches"].how, "verdict": "missed", "value": 3890,
                   "where": "eager-float32, P2", "gap": 389.0, "note": "389x off"}


PATHS = ["eager-float64", "eager-float32", "triton-float64", "triton-float32"]
P3G = 2048 * 2048 * 800


def _step(name, status="ok", **data):
    return {"name": name, "status": status, "seconds": 1.0, "reason": "", "data": data}


def _workload(pixel_steps, kernel_s, e2e_s, launches=None):
    timed = lambda s: {"calls": 3, "best_s": s, "median_s": s, "pixel_steps_per_s": pixel_steps / s}  # noqa: E731
    return {"pixel_steps": pixel_steps, "fused": True, "cold_s": 9.0, "cold_pixel_steps_per_s": pixel_steps / 9,
            "kernel": timed(kernel_s), "end_to_end": timed(e2e_s), "sha256": ["a", "a"],
            "launches": None if launches is None else {"end_to_end": {}, "render": launches}}


def _speed(path, fast, new_ms=5.0, cached_ms=0.1):
    """A path's speed step: ``fast`` times faster than eager float64 on the H100's first run."""
    cuda = {"kernels": 2 if fast > 10 else 1800, "memory_ops": 1, "aten_ops": 5, "interpreted_launches": None}
    return _step(f"speed {path}", path=path, clock="cuda events", not_measured=[], workloads={
        "P2": _workload(1024 ** 2 * 200, 0.07 / fast, 0.07 / fast + 1e-3, cuda),
        "P4096": _workload(4096 ** 2, 0.03 / fast, 0.03 / fast + 1e-3, cuda),
        "P3G": _workload(P3G, 1.0 / fast, 1.0 / fast + 1e-3)},
        fixed_cost={"workload": "P1@8", "new": {"calls": 20, "best_ms": new_ms, "median_ms": new_ms},
                    "cached": {"calls": 20, "best_ms": cached_ms, "median_ms": cached_ms}})


def _parity(path, min_r, not_run=(), eager_code=0):
    return _step(f"parity {path}", path=path, device="cuda", cases={}, not_run=list(not_run), errors=[],
                 min_r=min_r, worst_case="c1" if min_r else None, rendered=1 if min_r else 0, below_line=[],
                 eager_code=eager_code)


def _record(dry_run=False, steps=None):
    steps = steps if steps is not None else [
        _step("probe", environment={}, cuda=None if dry_run else {"name": "NVIDIA H200", "cuda_version": "13.0"}),
        _speed("eager-float64", 1), _speed("eager-float32", 1.6),
        _speed("triton-float64", 40, new_ms=0.8, cached_ms=0.05), _speed("triton-float32", 120),
        *[_step(f"determinism {p}", in_process=True, across_processes=True, workload="P2") for p in PATHS],
        _parity("eager-float64", 1.0), _parity("eager-float32", 0.99999999), _parity("triton-float64", 1.0),
        _parity("triton-float32", 0.9999999)]
    return {"dry_run": dry_run, "device": "cpu" if dry_run else "cuda", "started": "20261129T010000Z",
            "commit": "c" * 40, "plan": {"speed_workloads": ["P2", "P4096", "P3G"], "throughput_workload": "P3G",
                                         "overhead_workload": "P1@8", "paths": PATHS}, "steps": steps}


def _rows(record):
    return {row.goal.key: row for row in goal_rows(record)}


def test_each_rate_is_the_best_path_of_its_dtype_on_the_throughput_workload():
    found = measurements(_record())
    assert found["rate-float32-kernel"].value == pytest.approx(P3G * 120) and \
        found["rate-float32-kernel"].where == "triton-float32, P3G"
    assert found["rate-float64-end-to-end"].value == pytest.approx(P3G / (1 / 40 + 1e-3))
    assert found["p2-end-to-end-float32"].value == pytest.approx((0.07 / 120 + 1e-3) * 1e3)
    assert found["fixed-cost-new"].value == 0.8 and found["fixed-cost-new"].where == "triton-float64, P1@8"
    assert found["fixed-cost-cached"].value == 0.05
    assert found["launches"].value == 3 and found["launches"].where.startswith("triton-float")
    assert found["bit-identical"].value == 0 and found["bit-identical"].missing == ()
    assert found["parity"].value == 0.9999999 and found["parity"].where == "triton-float32, c1"


def test_the_verdicts_of_a_gpu_run_are_met_or_missed_with_the_gap():
    rows = _rows(_record())
    verdicts = {key: row.verdict for key, row in rows.items()}
    assert verdicts["rate-float32-kernel"] is Verdict.MET  # 3.36e9 x 120 = 4e11
    assert verdicts["rate-float64-kernel"] is Verdict.MET and verdicts["rate-float64-end-to-end"] is Verdict.MET
    assert verdicts["rate-float32-end-to-end"] is Verdict.MET
    assert verdicts["p2-end-to-end-float32"] is Verdict.MET and verdicts["fixed-cost-new"] is Verdict.MET
    assert verdicts["launches"] is Verdict.MET and verdicts["parity"] is Verdict.MET
    assert verdicts["bit-identical"] is Verdict.MET
    per_step = rows["p4096-per-step"]  # P4096's 1e-3 s of overhead against P2's: slower per pixel·step
    assert per_step.verdict is Verdict.MISSED and per_step.gap > 1 and per_step.note.endswith("x off")


def test_a_slow_run_misses_by_the_ratio_to_the_limit():
    steps = [_step("probe", environment={}, cuda={"name": "NVIDIA H100"}), _speed("eager-float32", 1.6)]
    rows = _rows(_record(steps=steps))
    rate = rows["rate-float32-kernel"]
    assert rate.verdict is Verdict.MISSED and math.isclose(rate.gap, 3e11 / (P3G * 1.6))
    assert rows["rate-float64-kernel"].verdict is Verdict.NOT_MEASURED
    assert "not measured on a float64 path" in rows["rate-float64-kernel"].note
    assert rows["launches"].verdict is Verdict.MISSED and rows["launches"].measured.value == 1801
    assert rows["parity"].verdict is Verdict.NOT_MEASURED and "no path rendered" in rows["parity"].note


def test_paths_that_differ_or_were_not_compared_count_against_bit_identity():
    record = _record()
    record["steps"][5] = _step("determinism eager-float64", "failed", in_process=False, across_processes=True)
    record["steps"][6] = _step("determinism eager-float32", "ok", in_process=True, across_processes=None)
    found = measurements(record)["bit-identical"]
    assert found.value == 1 and found.where == "eager-float64" and found.missing == ("eager-float32",)
    assert _rows(record)["bit-identical"].verdict is Verdict.MISSED


def test_parity_with_cases_not_run_is_not_met_and_a_path_left_to_the_eager_code_is_covered():
    record = _record()
    record["steps"][-1] = _parity("triton-float32", None, eager_code=53)
    assert measurements(record)["parity"].missing == ()
    record["steps"][-2] = _parity("triton-float64", 1.0, not_run=["c2", "c3"])
    row = _rows(record)["parity"]
    assert row.verdict is Verdict.NOT_MEASURED and "triton-float64 (2 cases not run" in row.note


def test_a_throughput_workload_under_the_size_is_not_measured_on_a_gpu():
    record = _record()
    record["plan"]["throughput_workload"] = "P2"
    assert "under 3e+09" in _rows(record)["rate-float32-kernel"].note


def test_a_dry_run_measures_but_judges_nothing():
    rows = _rows(_record(dry_run=True))
    assert {row.verdict for row in rows.values()} == {Verdict.NOT_MEASURED}
    assert rows["rate-float32-kernel"].note.startswith("no CUDA device: dry run (CPU, small size: ")


def test_nanobragg_is_set_beside_the_best_path_of_each_dtype():
    record = _record()
    record["steps"].append(_step("nanobragg", threads=16, workloads={
        "P1@8": {"wall_s": 0.02, "calls": 3, "pixel_steps": 64, "pixel_steps_per_s": 3200.0},
        "P3G": {"wall_s": 4.0, "calls": 1, "pixel_steps": P3G, "pixel_steps_per_s": P3G / 4}}))
    fixed, big = side_by_side(record)
    assert big["workload"] == "P3G" and big["float32"]["path"] == "triton-float32"
    assert big["float32"]["ratio"] == pytest.approx(4.0 / (1 / 120 + 1e-3))
    assert big["float64"]["ratio"] == pytest.approx(4.0 / (1 / 40 + 1e-3))
    assert fixed["float64"]["path"] == "triton-float64" and fixed["float64"]["ratio"] == pytest.approx(0.02 / 5e-5)
    assert side_by_side(_record()) == []

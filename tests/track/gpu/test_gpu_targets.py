"""The targets table and its rule: met, missed with its gap, or not measured with why; never met on a dry run."""

import math

from detsim.track.base.metrics import PARITY_MIN_R
from detsim.track.gpu.targets import (MIN_THROUGHPUT_PIXEL_STEPS, TARGETS, TARGETS_BY_KEY, TargetValue, Scope, Sense,
                                      Verdict, judge)

H200 = "NVIDIA H200"


def test_the_table_holds_each_target_of_the_device_check_once_with_its_limit():
    assert len(TARGETS_BY_KEY) == len(TARGETS)
    limits = {t.key: (t.sense, t.limit) for t in TARGETS}
    assert limits["rate-float32-kernel"] == limits["rate-float32-end-to-end"] == (Sense.AT_LEAST, 3e11)
    assert limits["rate-float64-kernel"] == limits["rate-float64-end-to-end"] == (Sense.AT_LEAST, 1e11)
    assert limits["p2-end-to-end-float32"] == (Sense.AT_MOST, 2.0)
    assert limits["fixed-cost-new"] == (Sense.AT_MOST, 1.0) and limits["fixed-cost-cached"] == (Sense.AT_MOST, 0.2)
    assert limits["p4096-per-step"] == (Sense.AT_LEAST, 1.0) and limits["launches"] == (Sense.AT_MOST, 10)
    assert limits["bit-identical"] == (Sense.AT_MOST, 0) and limits["parity"] == (Sense.AT_LEAST, PARITY_MIN_R)
    assert MIN_THROUGHPUT_PIXEL_STEPS == 3e9
    assert {t.key for t in TARGETS if t.scope is Scope.EVERY} == {"bit-identical", "parity"}


def test_a_value_within_its_limit_is_met_and_one_past_it_missed_with_how_far():
    rate = TARGETS_BY_KEY["rate-float32-kernel"]
    assert judge(rate, TargetValue(3e11, "triton-float32, P3G"), H200).verdict is Verdict.MET
    missed = judge(rate, TargetValue(5e9, "eager-float32, P3G"), H200)
    assert missed.verdict is Verdict.MISSED and missed.gap == 60 and "60x off" in missed.note
    cost = TARGETS_BY_KEY["fixed-cost-cached"]
    assert judge(cost, TargetValue(0.2), H200).verdict is Verdict.MET
    slow = judge(cost, TargetValue(12.0), H200)
    assert slow.verdict is Verdict.MISSED and math.isclose(slow.gap, 60)


def test_a_correlation_is_off_by_its_distance_from_one():
    parity = judge(TARGETS_BY_KEY["parity"], TargetValue(0.999, "eager-float32, c1"), H200)
    assert parity.verdict is Verdict.MISSED and math.isclose(parity.gap, 2.0)


def test_a_count_that_must_be_zero_is_missed_without_a_ratio():
    row = judge(TARGETS_BY_KEY["bit-identical"], TargetValue(2, "compiled-float32, triton-float32"), H200)
    assert row.verdict is Verdict.MISSED and row.gap is None and row.note == ""


def test_nothing_is_met_or_missed_on_a_dry_run_and_its_cpu_figure_is_said_to_be_one():
    for target in TARGETS:
        row = judge(target, TargetValue(target.limit, "eager-float32"), None)
        assert row.verdict is Verdict.NOT_MEASURED and row.note.startswith("no CUDA device: dry run (CPU, small")
    assert judge(TARGETS[0], TargetValue(None, why="x"), None).note == "no CUDA device: dry run"
    assert judge(TARGETS_BY_KEY["parity"], TargetValue(0.99999999), None).note.endswith("0.999999990 r)")


def test_what_was_not_measured_says_why():
    row = judge(TARGETS_BY_KEY["launches"], TargetValue(None, why="no render of P2 was profiled"), H200)
    assert row.verdict is Verdict.NOT_MEASURED and row.note == "no render of P2 was profiled"


def test_a_target_for_every_path_is_met_only_once_every_path_was_measured():
    parity = TARGETS_BY_KEY["parity"]
    partial = judge(parity, TargetValue(0.99999, "eager-float64, c1", missing=("triton-float64",)), H200)
    assert partial.verdict is Verdict.NOT_MEASURED and "not measured: triton-float64" in partial.note
    below = judge(parity, TargetValue(0.99, "eager-float64, c1", missing=("triton-float64",)), H200)
    assert below.verdict is Verdict.MISSED and "also not measured: triton-float64" in below.note
    assert judge(parity, TargetValue(0.99999, "eager-float64, c1"), H200).verdict is Verdict.MET


def test_a_row_is_recorded_as_json_ready_fields():
    row = judge(TARGETS_BY_KEY["launches"], TargetValue(3890, "eager-float32, P2"), H200).record()
    assert row == {"key": "launches", "what": "device launches per render (P2)", "limit": "<= 10 launches",
                   "scope": "best path", "how": TARGETS_BY_KEY["launches"].how, "verdict": "missed", "value": 3890,
                   "where": "eager-float32, P2", "gap": 389.0, "note": "389x off"}

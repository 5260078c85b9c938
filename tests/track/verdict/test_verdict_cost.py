"""Instruction-count tracks are their own family, judged exactly against their 2 % threshold."""

from __future__ import annotations

from detsim.track.verdict.detection import detect
from detsim.track.verdict.lines import finding_text
from detsim.track.history.series import Point, Series, family_of

NAME = "bench_cost.InstructionCounts.track_instructions"


def _series(values, threshold=0.02) -> Series:
    points = tuple(Point(commit=f"c{i:07d}", value=v) for i, v in enumerate(values))
    return Series(env="e", name=NAME, params="(workload='P1@64')", family="cost", unit="instructions",
                  threshold=threshold, points=points)


def test_an_instructions_track_is_a_cost_not_a_noisy_track():
    assert family_of(NAME, {"type": "track", "unit": "instructions"}) == "cost"
    assert family_of("bench_x.T.track_other", {"type": "track", "unit": "cases"}) == "track"


def test_a_three_percent_rise_at_one_commit_is_a_regression_at_that_commit():
    finding = detect(_series([11_300_000, 11_301_000, 11_299_000, 11_640_000]), 0, {}, {})
    assert finding is not None and finding.last_good == "c0000002" and finding.first_bad == "c0000003"
    assert finding.old == 11_299_000 and finding.new == 11_640_000
    assert "exact" in finding.detail["evidence"]
    assert "11,299,000 instructions -> 11,640,000 instructions" in finding_text(finding.record())


def test_spread_within_the_threshold_and_a_fall_are_not():
    assert detect(_series([11_300_000, 11_310_000, 11_295_000, 11_320_000]), 0, {}, {}) is None
    assert detect(_series([11_300_000, 10_000_000]), 0, {}, {}) is None


def test_a_creep_is_found_once_it_passes_the_threshold_over_the_best():
    finding = detect(_series([100, 101, 102, 103]), 0, {}, {})
    assert finding is not None and finding.first_bad == "c0000003" and finding.last_good == "c0000002"

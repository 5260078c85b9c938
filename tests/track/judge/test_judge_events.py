"""detsim.track.judge.events: a history told as a list of events, each found by the rule the verdict judges the
latest commit by."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from detsim.track.judge.analysis import analyse, rule_of
from detsim.track.judge.events import EventStep, history_events
from detsim.track.judge.series import Point, Series
from tests import planted_history

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"
GOOD = DATA / "good"
PARITY = "bench_parity.track_parity_a01_cubic_mosflm_center"
COMMITS = [f"c{i}" for i in range(8)]


def _series(family: str, values, unit: str = "1 - r", case: str | None = "a01") -> Series:
    return Series(env="e", name=f"b.track_{family}", params="", family=family, unit=unit, case=case,
                  threshold=0.0, points=tuple(Point(c, v) for c, v in zip(COMMITS, values)))


def _events(series: list[Series], conf: dict | None = None):
    rule = rule_of(series, conf or {}, {}, {})
    return history_events(series, COMMITS, rule.start, rule.finding)


def test_a_drop_and_its_recovery_are_two_events_with_the_values_on_both_sides():
    parity = _series("parity", [1e-12, 1e-12, 1e-12, 0.02, 0.02, 0.03, 1e-12, 1e-12])
    events = _events([parity])
    assert [(e.step, e.commit, e.before, e.old, e.new, e.label) for e in events] == [
        (EventStep.REGRESSED, "c3", "c2", 1e-12, 0.02, "REGRESSED"),
        (EventStep.FIXED, "c6", "c5", 0.03, 1e-12, "FIXED")]
    assert json.dumps([e.to_dict() for e in events], allow_nan=False)  # strict JSON, as verdict.json is


def test_a_failure_is_broken_then_fixed_and_a_skip_changes_nothing():
    cost = _series("cost", [100.0, None, None, 100.0, float("nan"), 100.0, 100.0, 100.0], unit="instructions",
                   case=None)
    events = _events([cost])
    assert [(e.step, e.commit, e.before, e.old, e.new) for e in events] == [
        (EventStep.BROKEN, "c1", "c0", 100.0, None), (EventStep.FIXED, "c3", None, None, 100.0)]


def test_image_changes_and_irreproducible_runs_are_their_own_steps():
    changed = _series("hash count", [0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0], unit="cases changed", case=None)
    differ = _series("reproducibility", [0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0], unit="runs differ (0/1)")
    steps = [(e.step, e.commit, e.series.family) for e in _events([differ, changed])]
    assert steps == [(EventStep.CHANGED, "c2", "hash count"), (EventStep.FIXED, "c4", "hash count"),
                     (EventStep.IRREPRODUCIBLE, "c5", "reproducibility"), (EventStep.FIXED, "c7", "reproducibility")]


def test_a_series_bad_from_its_first_commit_has_no_step_but_its_recovery_is_one():
    parity = _series("parity", [0.01, 0.01, 0.01, 1e-12, 1e-12, 1e-12, 1e-12, 1e-12])
    assert [(e.step, e.commit) for e in _events([parity])] == [(EventStep.FIXED, "c3")]


def test_nothing_before_the_first_commit_asv_judges_and_nothing_where_detection_is_off():
    parity = _series("parity", [1e-12, 0.02, 1e-12, 1e-12, 0.02, 0.02, 0.02, 0.02])
    conf = {"regressions_first_commits": {"b.track_parity": "c2"}}
    assert [(e.step, e.commit) for e in _events([parity], conf)] == [(EventStep.REGRESSED, "c4")]
    assert _events([parity], {"regressions_first_commits": {"b.track_parity": None}}) == []


def _planted(tmp_path: Path, a01: list[float]) -> tuple[Path, list[str]]:
    """A git project (tests/planted_history.py's helpers) with one commit per value of a01's 1 - r, each with an
    asv results file copied from the good fixture's first, its parity set to that value."""
    root, _, _ = planted_history.start(tmp_path)
    for name in ("asv.conf.json", "results/asv/benchmarks.json", "results/asv/fixture-2cpu/machine.json",
                 "results/baselines/golden_hashes.json"):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(GOOD / name, root / name)
    (root / "notes.txt").write_text("")
    shas = []
    for i in range(len(a01)):
        planted_history.append(root / "notes.txt", f"{i}\n")
        shas.append(planted_history.commit(root, f"step {i}"))
    template = json.loads(next(p for p in sorted((GOOD / "results/asv/fixture-2cpu").glob("*.json"))
                               if p.name != "machine.json").read_text())
    for i, (sha, value) in enumerate(zip(shas, a01)):
        data = {**template, "commit_hash": sha, "date": template["date"] + 60_000 * i,
                "results": {**template["results"], PARITY: [[value], *template["results"][PARITY][1:]]}}
        (root / f"results/asv/fixture-2cpu/{sha[:8]}-{data['env_name']}.json").write_text(json.dumps(data))
    return root, shas


def test_a_planted_improvement_drop_and_recovery_are_told_at_their_commits_in_the_verdict(tmp_path):
    root, shas = _planted(tmp_path, [1e-4, 1e-4, 0.0, 0.0, 0.02, 0.02, 0.02, 0.0, 0.0])
    report = analyse(root).single
    parity = [e for e in report.events if e.series.family == "parity"]
    assert [(e.step, e.commit, e.before, e.old, e.new, e.label) for e in parity] == [
        (EventStep.IMPROVED, shas[2], shas[1], 1e-4, 0.0, "IMPROVED"),
        (EventStep.REGRESSED, shas[4], shas[3], 0.0, 0.02, "REGRESSED"),
        (EventStep.FIXED, shas[7], shas[6], 0.02, 0.0, "FIXED")]
    assert not [f for f in report.regressions if f.series.family == "parity"]  # recovered: not regressed now
    records = report.as_json()["events"]
    assert [(r["step"], r["commit"], r["case"]) for r in records if r["family"] == "parity"] == [
        ("improved", shas[2], "a01_cubic_mosflm_center"), ("regressed", shas[4], "a01_cubic_mosflm_center"),
        ("fixed", shas[7], "a01_cubic_mosflm_center")]


def _directed(family: str, values, threshold: float, unit: str = "seconds") -> tuple[Series, list[str]]:
    commits = [f"{i:040x}" for i in range(len(values))]
    return Series(env="e", name=f"b.{family}_x", params="", family=family, unit=unit, threshold=threshold,
                  points=tuple(Point(c, v) for c, v in zip(commits, values))), commits


def test_an_improvement_is_the_rule_read_backwards_with_the_same_threshold():
    from detsim.track.judge.thresholds import COST

    cost, c = _directed("cost", [100.0] * 3 + [97.0] * 3 + [96.0] * 2 + [120.0] * 2, COST.value, "instructions")
    rule = rule_of([cost], {}, {}, {})
    assert [(e.step, e.commit, e.before, e.old, e.new, e.label) for e in history_events(
        [cost], c, rule.start, rule.finding)] == [
        (EventStep.IMPROVED, c[3], c[2], 100.0, 97.0, "IMPROVED"),  # 3 % past the 2 % rule; 97 -> 96 within it
        (EventStep.REGRESSED, c[8], c[7], 96.0, 120.0, "REGRESSED")]
    within, c = _directed("cost", [100.0] * 4 + [98.5] * 4, COST.value, "instructions")
    assert history_events([within], c, rule.start, rule.finding) == []  # 1.5 %: within the rule either way


def test_a_timing_improvement_is_a_suspect_and_throughput_improves_upwards():
    level = [1.0 + 0.002 * (i % 3) for i in range(8)]
    timing, c = _directed("timing", level + [0.6 * v for v in level], 0.05)
    rule = rule_of([timing], {}, {}, {})
    [event] = history_events([timing], c, rule.start, rule.finding)
    assert (event.step, event.commit, event.before, event.label) == (EventStep.IMPROVED, c[8], c[7], "SUSPECT")
    rate, c = _directed("throughput", [1e6 * v for v in level] + [2e6 * v for v in level] + [1e6 * v for v in level],
                        0.05, "steps/s")
    steps = [(e.step, e.commit, e.label) for e in history_events([rate], c, rule.start, rule.finding)]
    assert steps == [(EventStep.IMPROVED, c[8], "SUSPECT"), (EventStep.REGRESSED, c[16], "SUSPECT")]


def test_a_long_history_tells_its_events_on_the_verdicts_screen_and_in_full(tmp_path):
    from detsim.track.judge.text import FEW_COMMITS, report_lines, screen_lines

    values = [0.0] * 3 + [0.02] * 4 + [0.0] * (FEW_COMMITS - 5)
    root, shas = _planted(tmp_path, values)
    judgement = analyse(root)
    screen = screen_lines(judgement)
    at = screen.index(f"events: 2 steps over {FEW_COMMITS + 2} commits")
    assert screen[at + 1:at + 3] == [
        f"  {shas[3][:8]} regressed parity a01_cubic_mosflm_center: 1 - r 0 -> 0.02 (after {shas[2][:8]})",
        f"  {shas[7][:8]} fixed parity a01_cubic_mosflm_center: 1 - r 0.02 -> 0 (after {shas[6][:8]})"]
    assert [line for line in report_lines(judgement) if line.startswith("events:")] == [screen[at]]
    (tmp_path / "short").mkdir()
    short, _ = _planted(tmp_path / "short", values[:FEW_COMMITS])
    assert not [line for line in screen_lines(analyse(short)) if line.startswith("events:")]


def test_a_targets_parity_recovery_within_its_factor_is_an_event_and_no_longer_regressed():
    from detsim.track.judge.analysis import judge
    from detsim.track.judge.thresholds import TARGET_PARITY

    def case(name, values):
        return Series(env="e", name="bench_target.Case.track_parity_one_minus_r", params=f"(case='{name}')",
                      family="parity", unit="1 - r", case=name, threshold=TARGET_PARITY.value - 1,
                      points=tuple(Point(c, v) for c, v in zip(COMMITS, values)))

    a01 = case("a01", [1.4e-8] * 3 + [1e-4] * 3 + [2e-8] * 2)  # back within x10 of its best
    e01 = case("e01", [1.4e-8] * 3 + [1e-4] * 3 + [7e-5] * 2)  # still x5,000 worse
    steps = [(e.series.case, e.step, e.commit) for e in _events([a01, e01])]
    assert steps == [("a01", EventStep.REGRESSED, "c3"), ("e01", EventStep.REGRESSED, "c3"),
                     ("a01", EventStep.FIXED, "c6")]
    [finding] = judge([a01, e01], "c7", {}, {}, {}).findings
    assert (finding.series.case, finding.first_bad, finding.label) == ("e01", "c3", "REGRESSED")


def test_a_timing_step_and_its_return_are_dated_by_the_fit_asked_once_per_level():
    from detsim.track.judge.detection import checkpoints

    commits = [f"{i:040x}" for i in range(24)]
    values = [1.0 + 0.002 * (i % 3) for i in range(8)] + [1.5 + 0.002 * (i % 3) for i in range(8)] + \
             [1.0 + 0.002 * (i % 3) for i in range(8)]
    timing = Series(env="e", name="b.time_x", params="", family="timing", unit="seconds", threshold=0.05,
                    points=tuple(Point(c, v) for c, v in zip(commits, values)))
    assert checkpoints(timing, 0) == [7, 15, 23]  # the end of each level, the latest
    rule = rule_of([timing], {}, {}, {})
    events = history_events([timing], commits, rule.start, rule.finding)
    assert [(e.step, e.commit, e.before, e.label) for e in events] == [
        (EventStep.REGRESSED, commits[8], commits[7], "SUSPECT"), (EventStep.FIXED, commits[16], commits[15], "FIXED")]
    parity = _series("parity", [0.0] * 8)
    assert checkpoints(parity, 2) == list(range(2, 8))  # exact values: every point


def test_the_screen_leads_with_decided_events_and_counts_the_suspect_timing_steps_in_one_line(tmp_path):
    from dataclasses import replace

    from detsim.track.judge.text import event_lines

    values = [0.0] * 3 + [0.02] * 3 + [0.0] * 5
    root, shas = _planted(tmp_path, values)
    report = analyse(root).single
    level = [1.0 + 0.002 * (i % 3) for i in range(4)]
    timing = Series(env="e", name="b.time_x", params="", family="timing", unit="seconds", threshold=0.05,
                    points=tuple(Point(c, v) for c, v in zip(shas, level + [1.5 * v for v in level] + level[:3])))
    rule = rule_of([timing], {}, {}, {})
    noise = history_events([timing], shas, rule.start, rule.finding)
    assert [(e.step, e.label) for e in noise] == [(EventStep.REGRESSED, "SUSPECT"), (EventStep.FIXED, "FIXED")]
    report = replace(report, events=tuple(sorted((*report.events, *noise), key=lambda e: shas.index(e.commit))))
    screen = event_lines(report)
    assert screen == [
        f"events: 4 steps over {len(shas)} commits",
        f"  {shas[3][:8]} regressed parity a01_cubic_mosflm_center: 1 - r 0 -> 0.02 (after {shas[2][:8]})",
        f"  {shas[6][:8]} fixed parity a01_cubic_mosflm_center: 1 - r 0.02 -> 0 (after {shas[5][:8]})",
        "  2 suspect timing steps at 2 commits (1 regressed, 1 back within the rule): not re-measured here, each in "
        "verdict.txt and verdict.json"]
    full = event_lines(report, limit=None)
    assert len(full) == 5 and full[2].startswith(f"  {shas[4][:8]} regressed (suspect) timing b.time_x")

"""A verdict's timing suspects re-measured: the largest first, up to a limit, outcomes kept per commit pair."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.confirm import apply
from detsim.track.confirm.apply import confirm, target_of
from detsim.track.confirm.remeasure import RemeasureError
from detsim.track.history.asvresults import load_benchmarks
from detsim.track.verdict.analysis import analyse, judgement_of

DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


@pytest.fixture
def noisy(tmp_path, monkeypatch) -> Path:
    """A copy of the noisy fixture project (three timing suspects at its latest commit)."""
    root = tmp_path / "noisy"
    shutil.copytree(DATA / "noisy", root)
    monkeypatch.setattr(apply, "machines_here", lambda: None)
    return root


def _suspects(report):
    return [f for f in report.regressions if f.detail.get("confirmation") == "suspect"]


def test_targets_carry_the_benchmarks_own_parameter_values_and_direction(noisy):
    report = analyse(noisy).single
    benchmarks = load_benchmarks(noisy / "results" / "asv")
    targets = {f.series.label: target_of(f, benchmarks) for f in _suspects(report)}
    timing = targets["bench_engine.EngineSweep.time_simulate(pixels=128, dtype='float64')"]
    assert timing.params == (128, "float64") and not timing.larger_is_better
    throughput = targets["bench_engine.Throughput.track_pixel_steps_per_second"]
    assert throughput.params == () and throughput.larger_is_better


def test_the_largest_rises_are_re_measured_first_and_the_rest_say_why_not(noisy, remeasured_as):
    measured = remeasured_as(default=2.0)
    report = confirm(analyse(noisy), noisy, limit=1).single
    statuses = {f.series.label: f.detail["confirmation"] for f in report.regressions}
    largest = max(_suspects(analyse(noisy).single), key=lambda f: f.detail["rise"])
    assert [t.label for t, _, _ in measured] == [f"{largest.series.name}{target_of(largest, load_benchmarks(noisy / 'results' / 'asv')).params}"]
    assert statuses.pop(largest.series.label) == "confirmed" and set(statuses.values()) == {"undecided"}
    assert all("over the limit of 1" in f.detail["confirmation_evidence"] for f in report.regressions if not f.is_verdict)
    assert report.exit == ExitCode.REGRESSED


def test_outcomes_are_kept_and_reused_and_a_corrupt_store_is_one_line(noisy, remeasured_as):
    measured = remeasured_as(default=1.0)
    first = confirm(analyse(noisy), noisy).single
    assert first.exit == ExitCode.OK and len(measured) == 3
    store = noisy / ".asv" / "confirmations.json"
    assert json.loads(store.read_text())["report"] == "detsim-track confirmations" and store.stat().st_mode & 0o777 == 0o644
    again = confirm(analyse(noisy), noisy).single
    assert len(measured) == 3 and {f.detail["confirmation"] for f in again.regressions} == {"noise"}
    store.write_text("{ cut")
    with pytest.raises(Exception, match="confirmations.json: unreadable"):
        confirm(analyse(noisy), noisy).single
    assert store.read_text() == "{ cut"  # never replaced


def test_suspects_of_another_machine_or_without_a_good_commit_are_not_re_measured(noisy, remeasured_as, monkeypatch):
    measured = remeasured_as(default=2.0)
    monkeypatch.setattr(apply, "machines_here", lambda: {"some-other-host"})
    report = confirm(analyse(noisy), noisy).single
    assert measured == [] and report.exit == ExitCode.OK
    assert all("not defined on this host" in f.detail["confirmation_evidence"] for f in report.regressions)
    monkeypatch.setattr(apply, "machines_here", lambda: None)
    orphan = analyse(noisy).single
    orphan = replace(orphan, regressions=tuple(replace(f, last_good=None) for f in orphan.regressions))
    assert all("no earlier commit" in f.detail["confirmation_evidence"]
               for f in confirm(judgement_of({orphan.machine: orphan}), noisy).single.regressions)


def test_a_failed_re_measurement_leaves_a_suspect_with_the_reason(noisy, monkeypatch):
    monkeypatch.setattr(apply, "machines_here", lambda: None)

    def broken(root):
        def measure(target, a, b, threshold, deadline=None):
            raise RemeasureError(f"{target.label} did not run at {a[:8]}: boom")
        return measure

    monkeypatch.setattr(apply, "default_measure", broken)
    report = confirm(analyse(noisy), noisy).single
    assert report.exit == ExitCode.OK
    assert all(f.detail["confirmation"] == "undecided" and "boom" in f.detail["confirmation_evidence"]
               for f in report.regressions)
    assert not (noisy / ".asv" / "confirmations.json").exists()  # nothing decided, nothing kept


def test_re_measuring_stops_when_its_time_budget_is_spent(noisy, remeasured_as):
    measured = remeasured_as(default=2.0)
    report = confirm(analyse(noisy), noisy, budget_s=0.0).single
    assert measured == [] and report.exit == ExitCode.OK
    assert all("budget of 0 s was spent" in f.detail["confirmation_evidence"] for f in report.regressions)


def test_each_suspect_gets_an_equal_share_of_the_budget_so_a_slow_one_cannot_starve_the_rest(noisy, monkeypatch):
    given = []

    def measure_factory(root):
        def measure(target, commit_a, commit_b, threshold, deadline=None):
            given.append(deadline - apply.time.monotonic())
            raise RemeasureError("the time given to re-measuring ran out after 3 rounds")  # as a compiled one would
        return measure
    monkeypatch.setattr(apply, "default_measure", measure_factory)
    suspects = len(_suspects(analyse(noisy).single))
    report = confirm(analyse(noisy), noisy, budget_s=90.0).single
    assert len(given) == suspects >= 2  # the first one's running out did not stop the others
    # an equal share of what is left: these fakes spend nothing, so each later one gets the rest divided
    assert all(abs(share - 90.0 / (suspects - i)) < 1.0 for i, share in enumerate(given)), given
    assert all("its share of the 90 s re-measuring budget" in f.detail["confirmation_evidence"]
               for f in report.regressions)


def test_a_step_over_commits_that_run_the_same_package_is_noise_without_re_measuring(noisy, remeasured_as, monkeypatch):
    measured = remeasured_as(default=2.0)
    monkeypatch.setattr(apply, "package_tree", lambda root, commit: "one tree")
    report = confirm(analyse(noisy), noisy).single
    assert measured == [] and report.exit == ExitCode.OK
    assert all(f.detail["confirmation"] == "noise" and "same detsim package" in f.detail["confirmation_evidence"]
               and f.detail["confirmation_evidence"].endswith("it can only be the machine")
               for f in report.regressions)
    assert not (noisy / ".asv" / "confirmations.json").exists()


def test_a_step_is_re_measured_at_the_first_commit_of_its_run_that_changed_the_package(noisy, remeasured_as,
                                                                                         monkeypatch):
    measured = remeasured_as(default=2.0)
    report = analyse(noisy).single
    commits = [p.commit for p in report.regressions[0].series.points]
    earlier = replace(report, regressions=tuple(replace(f, last_good=commits[-3], first_bad=commits[-2])
                                                for f in report.regressions))
    monkeypatch.setattr(apply, "package_tree", lambda root, commit: "new" if commit == commits[-1] else "old")
    confirmed = confirm(judgement_of({earlier.machine: earlier}), noisy).single
    assert {(a, b) for _, a, b in measured} == {(commits[-3], commits[-1])}
    assert {f.first_bad for f in confirmed.regressions} == {commits[-1]} and confirmed.exit == ExitCode.REGRESSED


def test_a_step_whose_commits_git_does_not_know_is_re_measured_as_recorded(noisy, remeasured_as):
    measured = remeasured_as(default=1.0)
    report = analyse(noisy).single  # the fixture's commits are not in any repository here
    confirm(judgement_of({report.machine: report}), noisy).single
    assert {(a, b) for _, a, b in measured} == {(f.last_good, f.first_bad) for f in report.regressions}

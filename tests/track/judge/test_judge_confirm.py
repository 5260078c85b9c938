"""detsim.track.judge.confirm: re-measuring a timing suspect, deciding it, and applying the outcomes to a verdict."""

from __future__ import annotations

import json
import math
import shutil
import statistics
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.judge import confirm as confirm_module
from detsim.track.judge.confirm import ALPHA, ROUNDS, RemeasureError, Remeasurement, Confirmation, Target, \
    confirm, decide, extra_rounds, remeasure, signed_rank_greater, target_of
from detsim.track.judge.results_files import load_benchmarks
from detsim.track.judge.analysis import analyse
from detsim.track.judge.verdict import judgement_of


BENCH = '''
import time
import detsim


class Work:
    timer = staticmethod(time.process_time)
    params = [[1, 2]]
    param_names = ["scale"]

    def setup(self, scale):
        self.scale = scale

    def time_work(self, scale):
        detsim.work(self.scale)

    def track_rate(self, scale):
        started = time.process_time()
        detsim.work(self.scale)
        return 1.0 / (time.process_time() - started)

    def time_broken(self, scale):
        raise RuntimeError("this benchmark is broken")
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, loops: int, message: str) -> str:
    (repo / "detsim" / "__init__.py").write_text(
        f"def work(scale):\n    total = 0\n    for i in range({loops} * scale):\n        total += i * i\n    return total\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(autouse=True)
def no_torch(monkeypatch):
    """The tiny project's benchmarks need no torch: its servers skip the import (torch's preload is tested
    with the fork server itself)."""
    monkeypatch.setattr(confirm_module, "PRELOADED", ())


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> dict:
    """A project whose second commit makes ``work`` twice as slow, and a third that changes nothing."""
    repo = tmp_path_factory.mktemp("project")
    (repo / "detsim").mkdir()
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench_work.py").write_text(BENCH)
    _git(repo, "init", "-q")
    fast = _commit(repo, 60_000, "fast")
    slow = _commit(repo, 120_000, "twice the work")
    (repo / "README").write_text("docs only\n")
    same = _commit(repo, 120_000, "docs")
    return {"root": repo, "fast": fast, "slow": slow, "same": same}


def test_a_doubled_cost_is_measured_interleaved_and_confirmed(project):
    m = remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["fast"], project["slow"], rounds=16)
    assert (m.commit_a, m.commit_b) == (project["fast"], project["slow"])
    assert len(m.a) == len(m.b) == 16 and m.order == "AB" * 8  # rounds started by A and by B in turn
    assert decide(m, 0.05).status is Confirmation.CONFIRMED


def test_an_unchanged_cost_is_noise(project):
    m = remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["slow"], project["same"], rounds=8)
    assert decide(m, 0.5).status is Confirmation.NOISE


def test_a_throughput_is_compared_by_its_inverse(project):
    m = remeasure(project["root"], Target("bench_work.Work.track_rate", (1,), larger_is_better=True),
                  project["fast"], project["slow"], rounds=16)
    assert statistics.median(m.b) > 1.5 * statistics.median(m.a)  # slower commit: more seconds per unit
    assert decide(m, 0.05).status is Confirmation.CONFIRMED


def test_more_rounds_are_taken_when_asked(project):
    asked = []

    def more(m):
        asked.append(len(m.a))
        return 2 if len(m.a) < 4 else 0

    m = remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["fast"], project["same"],
                  rounds=2, more=more)
    assert asked == [2, 4] and len(m.a) == 4 and m.order == "ABAB"


def test_a_failing_benchmark_names_itself_and_the_commit(project):
    with pytest.raises(RemeasureError, match=r"bench_work\.Work\.time_broken.*" + project["fast"][:8]
                       + ".*this benchmark is broken"):
        remeasure(project["root"], Target("bench_work.Work.time_broken", (1,)), project["fast"], project["slow"], rounds=1)


def test_a_commit_that_does_not_exist_is_one_line(project):
    with pytest.raises(RemeasureError, match="deadbeef: not a commit"):
        remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), "deadbeef", project["slow"], rounds=1)


def test_no_round_starts_past_the_deadline(project):
    import time

    with pytest.raises(RemeasureError, match="time given to re-measuring ran out after 0 rounds"):
        remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["fast"], project["slow"],
                  rounds=4, deadline=time.monotonic() - 1)


@pytest.fixture
def fake(fake_remeasurement):
    return fake_remeasurement


def test_signed_rank_exact_tails():
    assert signed_rank_greater([0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(1 / 32)  # all positive: 1 of 2^5
    assert signed_rank_greater([-0.1, -0.2, -0.3, -0.4, -0.5]) == 1.0
    assert signed_rank_greater([-0.1, 0.2, 0.3, 0.4, 0.5]) == pytest.approx(2 / 32)  # W = 14 of 15
    assert signed_rank_greater([0.0, 0.0]) == 1.0  # zeros dropped: nothing to test


def test_signed_rank_with_ties_stays_a_probability_and_orders_evidence():
    tied = signed_rank_greater([0.1, 0.1, 0.1, -0.1, 0.2, 0.2])
    assert 0 < tied < 1
    assert signed_rank_greater([0.1, 0.1, 0.1, 0.1, 0.2, 0.2]) < tied


def test_a_clear_slowdown_is_confirmed_and_an_unchanged_commit_is_noise(fake):
    confirmed = decide(fake(1.2), threshold=0.05)
    assert confirmed.status is Confirmation.CONFIRMED and confirmed.p_value < ALPHA
    assert confirmed.ratio == pytest.approx(1.2, rel=0.03) and "slower by more than 5%" in confirmed.evidence
    noise = decide(fake(1.0), threshold=0.05)
    assert noise.status is Confirmation.NOISE and "not significant" in noise.evidence


def test_a_real_but_small_difference_is_noise_against_the_threshold(fake):
    small = decide(fake(1.03), threshold=0.05)
    assert small.status is Confirmation.NOISE and "within the 5% threshold" in small.evidence


def test_a_faster_commit_is_never_confirmed(fake):
    assert decide(fake(0.7), threshold=0.05).status is Confirmation.NOISE


def test_an_undecided_first_look_gets_one_extension(fake):
    a = tuple(1.0 for _ in range(ROUNDS))
    mixed = tuple(x * (1.2 if i < 10 else 0.9) for i, x in enumerate(a))  # 5 blocks slower, 3 faster
    undecided = Remeasurement("a" * 40, "b" * 40, a, mixed, "AB" * ROUNDS)
    ratio_p = decide(undecided, 0.05)
    assert ratio_p.ratio > 1.05 and ALPHA <= ratio_p.p_value < 0.2
    more = extra_rounds(0.05)
    assert more(undecided) == ROUNDS
    longer = Remeasurement("a" * 40, "b" * 40, a + a, mixed + mixed, "AB" * 2 * ROUNDS)
    assert more(longer) == 0  # at most one extension
    assert more(fake(1.0)) == 0 and more(fake(1.5)) == 0


def test_the_record_carries_the_status_and_the_evidence(fake):
    record = decide(fake(1.5), threshold=0.05).to_dict()
    assert record["confirmation"] == "confirmed" and record["remeasured_rounds"] == ROUNDS
    assert math.isclose(record["remeasured_ratio"], 1.5, rel_tol=0.03) and record["remeasured_p"] < ALPHA


DATA = Path(__file__).resolve().parents[2] / "data" / "asv"


@pytest.fixture
def noisy(tmp_path, monkeypatch) -> Path:
    """A copy of the noisy fixture project (three timing suspects at its latest commit)."""
    root = tmp_path / "noisy"
    shutil.copytree(DATA / "noisy", root)
    monkeypatch.setattr(confirm_module, "machines_here", lambda: None)
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


def test_each_re_measurement_is_announced_as_it_starts_and_a_kept_outcome_is_not(noisy, remeasured_as):
    remeasured_as(default=2.0)
    said: list[str] = []
    report = confirm(analyse(noisy), noisy, progress=said.append).single
    suspects = sorted(_suspects(analyse(noisy).single), key=lambda f: -f.detail["rise"])
    assert len(said) == len(suspects) == 3
    for n, (line, finding) in enumerate(zip(said, suspects), 1):
        assert line.startswith(f"re-measuring timing suspect {n} of 3 on {report.machine}: {finding.series.label} "
                               f"at {finding.last_good[:8]} and ") and line.endswith(" s) ...")
    said.clear()
    confirm(analyse(noisy), noisy, progress=said.append)
    assert said == []  # every outcome kept from the first run: nothing is re-measured


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
    monkeypatch.setattr(confirm_module, "machines_here", lambda: {"some-other-host"})
    report = confirm(analyse(noisy), noisy).single
    assert measured == [] and report.exit == ExitCode.OK
    assert all("not defined on this host" in f.detail["confirmation_evidence"] for f in report.regressions)
    monkeypatch.setattr(confirm_module, "machines_here", lambda: None)
    orphan = analyse(noisy).single
    orphan = replace(orphan, regressions=tuple(replace(f, last_good=None) for f in orphan.regressions))
    assert all("no earlier commit" in f.detail["confirmation_evidence"]
               for f in confirm(judgement_of({orphan.machine: orphan}), noisy).single.regressions)


def test_a_failed_re_measurement_leaves_a_suspect_with_the_reason(noisy, monkeypatch):
    monkeypatch.setattr(confirm_module, "machines_here", lambda: None)

    def broken(root):
        def measure(target, a, b, threshold, deadline=None):
            raise RemeasureError(f"{target.label} did not run at {a[:8]}: boom")
        return measure

    monkeypatch.setattr(confirm_module, "default_measure", broken)
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
            given.append(deadline - confirm_module.time.monotonic())
            raise RemeasureError("the time given to re-measuring ran out after 3 rounds")  # as a compiled one would
        return measure
    monkeypatch.setattr(confirm_module, "default_measure", measure_factory)
    suspects = len(_suspects(analyse(noisy).single))
    report = confirm(analyse(noisy), noisy, budget_s=90.0).single
    assert len(given) == suspects >= 2  # the first one's running out did not stop the others
    # an equal share of what is left: these fakes spend nothing, so each later one gets the rest divided
    assert all(abs(share - 90.0 / (suspects - i)) < 1.0 for i, share in enumerate(given)), given
    assert all("its share of the 90 s re-measuring budget" in f.detail["confirmation_evidence"]
               for f in report.regressions)


def test_a_step_over_commits_that_run_the_same_package_is_noise_without_re_measuring(noisy, remeasured_as, monkeypatch):
    measured = remeasured_as(default=2.0)
    monkeypatch.setattr(confirm_module, "package_tree", lambda root, commit: "one tree")
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
    monkeypatch.setattr(confirm_module, "package_tree", lambda root, commit: "new" if commit == commits[-1] else "old")
    confirmed = confirm(judgement_of({earlier.machine: earlier}), noisy).single
    assert {(a, b) for _, a, b in measured} == {(commits[-3], commits[-1])}
    assert {f.first_bad for f in confirmed.regressions} == {commits[-1]} and confirmed.exit == ExitCode.REGRESSED


def test_a_step_whose_commits_git_does_not_know_is_re_measured_as_recorded(noisy, remeasured_as):
    measured = remeasured_as(default=1.0)
    report = analyse(noisy).single  # the fixture's commits are not in any repository here
    confirm(judgement_of({report.machine: report}), noisy).single
    assert {(a, b) for _, a, b in measured} == {(f.last_good, f.first_bad) for f in report.regressions}

"""Commit order: by git history where the commits are in it, else by date; where detection starts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from detsim.track.history.jsonc import ResultsError
from detsim.track.history.ordering import (
    checkout_head, first_commit_cut, order_files, resolve_first_commits, subjects,
)


def _repo(path: Path, subjects_: list[str]) -> list[str]:
    """A git repository with one empty commit per subject; their hashes, oldest first."""
    run = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path,
                                       check=True, capture_output=True, text=True).stdout
    run("init", "-q")
    for subject in subjects_:
        run("commit", "-q", "--allow-empty", "-m", subject)
    return run("rev-list", "--reverse", "HEAD").split()


def _file(commit: str, date: int, env: str = "env") -> dict:
    return {"commit_hash": commit, "date": date, "env_name": env}


def test_git_history_wins_over_dates(tmp_path):
    commits = _repo(tmp_path, ["one", "two", "three"])
    files = [_file(commits[2], 1), _file(commits[0], 3), _file(commits[1], 2, "b"), _file(commits[1], 2, "a"),
             _file("f" * 40, 0)]
    ordered, notes = order_files(tmp_path, files)
    assert [(f["commit_hash"], f["env_name"]) for f in ordered] == [
        (commits[0], "env"), (commits[1], "a"), (commits[1], "b"), (commits[2], "env")]
    assert notes == ["1 results of commits outside HEAD's history were ignored"]
    assert checkout_head(tmp_path) == commits[2]
    assert subjects(tmp_path, commits) == dict(zip(commits, ["one", "two", "three"]))


def test_outside_git_the_commit_dates_order_the_results(tmp_path):
    files = [_file("b" * 40, 20), _file("a" * 40, 10), _file("c" * 40, 30)]
    ordered, notes = order_files(tmp_path, files)
    assert [f["date"] for f in ordered] == [10, 20, 30] and notes == []
    assert checkout_head(tmp_path) is None and subjects(tmp_path, ["a" * 40]) == {}


def test_commits_unknown_to_the_repository_are_ordered_by_date_and_said_so(tmp_path):
    _repo(tmp_path, ["one"])
    ordered, notes = order_files(tmp_path, [_file("b" * 40, 20), _file("a" * 40, 10)])
    assert [f["date"] for f in ordered] == [10, 20]
    assert notes == ["no recorded commit is in HEAD's history; ordered by commit date"]


def test_first_commits_start_detection_after_the_named_commit():
    order = ["aaa1", "bbb2", "ccc3", "ddd4"]
    conf = {"regressions_first_commits": {r"bench_engine\.": "bbb", r"bench_engine\.Engine": "ccc3",
                                          r"bench_engine\.MachineReference\.": None,
                                          r"bench_engine\.Throughput\.": None}}
    assert first_commit_cut(conf, "bench_engine.EngineSweep.time_simulate", "timing", order) == 3  # the latest wins
    assert first_commit_cut(conf, "bench_engine.Other.time_x", "timing", order) == 2
    assert first_commit_cut(conf, "bench_cli.DetsimCommand.time_x", "timing", order) == 0
    assert first_commit_cut(conf, "bench_engine.MachineReference.time_reference", "reference", order) is None
    # null switches asv's own detection off; throughput is still checked here (the right way up)
    assert first_commit_cut(conf, "bench_engine.Throughput.track_x", "throughput", order) == 2
    assert first_commit_cut({}, "x", "timing", order) == 0


def test_only_a_checkout_of_its_own_has_a_head_to_judge(tmp_path):
    commits = _repo(tmp_path, ["one"])
    (tmp_path / "copied-results").mkdir()
    assert checkout_head(tmp_path) == commits[0]
    assert checkout_head(tmp_path / "copied-results") is None  # inside a checkout, not one
    assert checkout_head(tmp_path.parent) is None  # no git at all


def test_a_first_commit_git_knows_but_did_not_record_starts_detection_after_it(tmp_path):
    c = _repo(tmp_path, ["zero", "one", "two", "three"])
    order = [c[0], c[1], c[3]]  # c[2] was never recorded
    conf = {"regressions_first_commits": {"a": c[2][:8], "b": c[0][:8], "off": None}}
    resolved = resolve_first_commits(tmp_path, conf, order)
    assert resolved == {"a": c[1], "b": c[0][:8], "off": None}
    assert first_commit_cut({"regressions_first_commits": resolved}, "a.x", "timing", order) == 2
    early = resolve_first_commits(tmp_path, conf, [c[1], c[3]])["b"]  # named before anything recorded
    assert first_commit_cut({"regressions_first_commits": {"b": early}}, "b.x", "timing", [c[1], c[3]]) == 0


def test_an_unknown_first_commit_is_refused_naming_it(tmp_path):
    c = _repo(tmp_path, ["zero"])
    with pytest.raises(ResultsError, match=r"asv.conf.json: regressions_first_commits\['x'\] = 'deadbeef': no such"):
        resolve_first_commits(tmp_path, {"regressions_first_commits": {"x": "deadbeef"}}, c)

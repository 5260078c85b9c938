"""Which of detsim's commits a recording takes: a record is complete or absent."""

from __future__ import annotations

import json
import subprocess

import pytest

from detsim.track.base.files import RecordingError
from detsim.track.recorder.plan import plan

HEAD = {"commit_hash": "a" * 40, "env_name": "virtualenv-py3.11", "date": 1, "params": {"machine": "m"},
        "python": "3.11", "requirements": {}, "env_vars": {}, "result_columns": [], "version": 2}


def _recorded_commit(results, machine, commit, names):
    path = results / machine / f"{commit[:8]}-virtualenv-py3.11.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**HEAD, "commit_hash": commit, "results": dict.fromkeys(names, [1.0]),
                                "durations": {}}))
    return path


@pytest.fixture
def history(tmp_path):
    """A git history of 4 commits (newest first) and its results folder."""
    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                              cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    git("init", "-q")
    for n in range(4):
        git("commit", "-q", "--allow-empty", "-m", str(n))
    results = tmp_path / "results" / "asv"
    results.mkdir(parents=True)
    (results / "benchmarks.json").write_text(json.dumps({"a.x": {}, "b.y": {}, "version": 2}))
    return tmp_path, git("rev-list", "HEAD").split()


def test_the_plan_records_head_and_every_commit_without_a_complete_record(history):
    root, (head, partial, complete, absent) = history
    results = root / "results" / "asv"
    _recorded_commit(results, "m", head, ["a.x", "b.y"])
    _recorded_commit(results, "m", partial, ["a.x"])
    _recorded_commit(results, "m", complete, ["a.x", "b.y", "gone.z"])  # a benchmark since removed is fine
    commits, notes = plan(root, "m", 4)
    assert commits == [head, partial, absent]
    assert notes == [f"{partial[:8]} was recorded only in part (1 of the suite's benchmarks missing, b.y first); "
                     "recorded again"]
    assert plan(root, "m", 2)[0] == [head, partial]


def test_a_results_file_that_cannot_be_read_is_removed_and_its_commit_recorded(history):
    root, (head, cut, complete, _) = history
    results = root / "results" / "asv"
    path = _recorded_commit(results, "m", cut, ["a.x", "b.y"])
    path.write_text(path.read_text()[:30])
    _recorded_commit(results, "m", complete, ["a.x", "b.y"])
    commits, notes = plan(root, "m", 3)
    assert commits == [head, cut] and not path.exists()
    assert len(notes) == 1 and notes[0].startswith(f"{path}: corrupt JSON")


def test_without_the_suite_s_list_no_record_counts_as_complete(history):
    root, (head, older, *_) = history
    results = root / "results" / "asv"
    (results / "benchmarks.json").unlink()
    _recorded_commit(results, "m", older, ["a.x", "b.y"])
    assert plan(root, "m", 2)[0] == [head, older]



def test_a_range_records_its_commits_its_newest_always(history):
    root, (head, older, complete, oldest) = history
    _recorded_commit(root / "results" / "asv", "m", older, ["a.x", "b.y"])
    assert plan(root, "m", 1, f"{oldest}..{older}")[0] == [older, complete]
    with pytest.raises(RecordingError, match="no/such..range: not a range"):
        plan(root, "m", 1, "no/such..range")

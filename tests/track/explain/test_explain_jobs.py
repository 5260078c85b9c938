"""One explanation's flow on a tiny history with measurements faked: bisect, pick the pair, answer."""

from __future__ import annotations


import pytest

from detsim.track.base.commits import resolve
from detsim.track.explain import jobs
from detsim.track.explain.jobs import Job, explain_job
from detsim.track.explain.sides import Side

from explain_history import git


@pytest.fixture
def history(tmp_path, monkeypatch):
    """good, u1, u2 (the real first bad), u3 (the recorded first bad): counts 100, 100, 150, 150."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    shas = []
    for name in ("good", "u1", "u2 planted", "u3"):
        (repo / "f.txt").write_text(name)
        git(repo, "add", "f.txt")
        git(repo, "commit", "-q", "-m", name)
        shas.append(git(repo, "rev-parse", "HEAD"))
    values = dict(zip(shas, (100, 100, 150, 150)))
    measured = []

    def measure(job, side, golden, folder):
        measured.append(side.commit)
        return values[side.commit], {}

    monkeypatch.setattr(jobs, "prepare_side", lambda root, commit, dest: Side(resolve(root, commit), dest, "python"))
    monkeypatch.setattr(jobs, "_measure", measure)
    monkeypatch.setattr(jobs, "_explain_cost", lambda *a: ({"profile": ["x"]}, "+0.05 M Ir (100% of the change) in k"))
    return repo, shas, values, measured


def test_unrecorded_commits_are_bisected_and_the_pair_is_the_first_bad_and_its_parent(history, tmp_path):
    repo, shas, _, measured = history
    record = explain_job(Job("cost", shas[0], shas[3], "P1@64"), repo, tmp_path, tmp_path / "out")
    assert record["changed"] and record["bisection"]["first_bad"] == shas[2]
    assert record["pair"] == {"old": shas[1], "new": shas[2], "subject": "u2 planted"}
    assert sorted(measured) == sorted(shas)  # good, recorded bad, the probes; each once
    assert record["answer"].startswith(f"bisected over 3 commits in 2 measurement(s): the instruction count of "
                                       f"P1@64 changes at {shas[2][:8]} (\"u2 planted\", parent {shas[1][:8]}): "
                                       "100 -> 150 (+50.0%). +0.05 M Ir")


def test_without_bisection_the_given_pair_is_explained(history, tmp_path):
    repo, shas, _, _ = history
    record = explain_job(Job("cost", shas[1], shas[2], "P1@64"), repo, tmp_path, tmp_path / "out", bisecting=False)
    assert record["bisection"] is None and record["pair"]["new"] == shas[2]


def test_no_change_between_the_commits_is_said_and_not_explained(history, tmp_path):
    repo, shas, values, _ = history
    record = explain_job(Job("cost", shas[2], shas[3], "P1@64"), repo, tmp_path, tmp_path / "out")
    assert record["changed"] is False and "does not change" in record["answer"]

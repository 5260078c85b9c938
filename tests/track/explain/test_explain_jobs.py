"""Bisection over synthetic histories, and one explanation's flow on a tiny history with measurements faked:
bisect, pick the pair, answer."""

from __future__ import annotations

import pytest

from detsim.track.base.git import resolve
from detsim.track.explain import jobs
from detsim.track.explain.jobs import Job, bisect, explain_job, is_bad
from detsim.track.explain.sides import Side

from explain_history import git


@pytest.mark.parametrize("length, step", [(1, 0), (2, 0), (2, 1), (5, 3), (8, 0), (8, 7), (13, 6)])
def test_bisection_names_the_first_bad_commit(length, step):
    commits = [f"c{i}" for i in range(length)]
    counts = {c: 100 if i < step else 150 for i, c in enumerate(commits)}
    measured = []

    def measure(commit):
        measured.append(commit)
        return counts[commit]

    found = bisect(commits, measure, is_bad("cost", 100))
    assert found.first_bad == f"c{step}"
    assert commits[-1] not in measured  # known bad, never measured again
    assert len(measured) <= max(1, (length - 1).bit_length())
    assert [p["commit"] for p in found.probes] == measured


def test_two_unrecorded_commits_deep():
    history = {"a": 10, "b": 10, "c": 13}  # a, b unrecorded; c the recorded first bad; b still good
    assert bisect(["a", "b", "c"], history.__getitem__, is_bad("cost", 10)).first_bad == "c"
    history = {"a": 10, "b": 13, "c": 13}
    assert bisect(["a", "b", "c"], history.__getitem__, is_bad("cost", 10)).first_bad == "b"


def test_predicates_per_kind():
    assert not is_bad("cost", 1000)(1020) and is_bad("cost", 1000)(1021)  # 2 % threshold
    assert is_bad("parity", 1e-9)(2e-9) and not is_bad("parity", 1e-9)(1e-9)
    assert is_bad("hash", "aa")("ab") and not is_bad("hash", "aa")("aa")


def test_nothing_to_bisect_is_refused():
    with pytest.raises(ValueError):
        bisect([], lambda c: 0, is_bad("cost", 1))


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

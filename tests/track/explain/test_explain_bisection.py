"""Bisection over synthetic histories: the first bad commit, found with few measurements."""

from __future__ import annotations

import pytest

from detsim.track.explain.bisection import bisect, cost_is_bad, hash_is_bad, parity_is_bad


@pytest.mark.parametrize("length, step", [(1, 0), (2, 0), (2, 1), (5, 3), (8, 0), (8, 7), (13, 6)])
def test_bisection_names_the_first_bad_commit(length, step):
    commits = [f"c{i}" for i in range(length)]
    counts = {c: 100 if i < step else 150 for i, c in enumerate(commits)}
    measured = []

    def measure(commit):
        measured.append(commit)
        return counts[commit]

    found = bisect(commits, measure, cost_is_bad(100))
    assert found.first_bad == f"c{step}"
    assert commits[-1] not in measured  # known bad, never measured again
    assert len(measured) <= max(1, (length - 1).bit_length())
    assert [p["commit"] for p in found.probes] == measured


def test_two_unrecorded_commits_deep():
    history = {"a": 10, "b": 10, "c": 13}  # a, b unrecorded; c the recorded first bad; b still good
    found = bisect(["a", "b", "c"], history.__getitem__, cost_is_bad(10))
    assert found.first_bad == "c"
    history = {"a": 10, "b": 13, "c": 13}
    assert bisect(["a", "b", "c"], history.__getitem__, cost_is_bad(10)).first_bad == "b"


def test_predicates_per_kind():
    assert not cost_is_bad(1000)(1020) and cost_is_bad(1000)(1021)  # 2 % threshold
    assert parity_is_bad(1e-9)(2e-9) and not parity_is_bad(1e-9)(1e-9)
    assert hash_is_bad("aa")("ab") and not hash_is_bad("aa")("aa")


def test_nothing_to_bisect_is_refused():
    with pytest.raises(ValueError):
        bisect([], lambda c: 0, cost_is_bad(1))

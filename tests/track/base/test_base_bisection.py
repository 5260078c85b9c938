"""The one bisection: the first bad commit in about log2(N) probes, unjudgeable commits stepped around, ends
never probed."""

from __future__ import annotations

import math

import pytest

from detsim.track.base.bisection import bisect


def _probe(first_bad: int, unbuildable=(), seen=None):
    """A probe of commits named by their index: bad from ``first_bad`` on, None (not judgeable) where unbuildable."""
    def probe(commit: str) -> bool | None:
        i = int(commit)
        if seen is not None:
            seen.append(i)
        return None if i in unbuildable else i >= first_bad
    return probe


@pytest.mark.parametrize("n", [2, 3, 17, 1000, 4000])
def test_every_first_bad_commit_is_found_in_about_log2_n_probes(n):
    commits = [str(i) for i in range(n)]
    for first_bad in sorted({1, 2, n // 3, n // 2, n - 2, n - 1} - {0} & set(range(1, n))):
        seen = []
        found = bisect(commits, _probe(first_bad, seen=seen))
        assert (found.first_bad, found.last_good, found.exact) == (str(first_bad), str(first_bad - 1), True)
        assert len(seen) <= math.ceil(math.log2(n)) and len(set(seen)) == len(seen)
        assert 0 not in seen and n - 1 not in seen  # the ends are the caller's


def test_an_unbuildable_commit_is_stepped_around():
    commits = [str(i) for i in range(32)]
    found = bisect(commits, _probe(20, unbuildable={16, 20}))
    assert found.first_bad == "21" or found.candidates == ("20", "21")
    assert found.candidates == ("20", "21") and not found.exact  # 20 could not say whether it is the first
    assert [s.bad for s in found.steps].count(None) >= 1


def test_skips_away_from_the_turn_cost_one_probe_each_and_hide_nothing():
    commits = [str(i) for i in range(64)]
    found = bisect(commits, _probe(40, unbuildable={32, 8}))
    assert found.exact and found.first_bad == "40"
    assert len(found.steps) <= math.ceil(math.log2(64)) + 1


def test_each_step_is_told_with_what_is_left():
    told = []
    bisect([str(i) for i in range(9)], _probe(5), on_step=lambda step, left: told.append((step.position, left)))
    assert told[0] == (4, 3) and told[-1][1] == 0 and len(told) == 3


def test_two_commits_need_no_probe_and_fewer_are_refused():
    found = bisect(["a", "b"], _probe(1))
    assert (found.last_good, found.first_bad, found.steps) == ("a", "b", ())
    with pytest.raises(ValueError):
        bisect(["a"], _probe(1))


@pytest.mark.parametrize("length, step", [(1, 0), (2, 0), (2, 1), (5, 3), (8, 0), (8, 7), (13, 6)])
def test_exact_measures_name_the_first_bad_commit_without_measuring_the_ends(length, step):
    commits = ["good", *(f"c{i}" for i in range(length))]
    counts = {"good": 100, **{f"c{i}": 100 if i < step else 150 for i in range(length)}}
    measured = []

    def measure(commit):
        measured.append(commit)
        return counts[commit]

    found = bisect(commits, measure, lambda value: value > 100)
    assert found.first_bad == f"c{step}" and found.exact
    assert "good" not in measured and commits[-1] not in measured
    assert len(measured) <= max(1, (length - 1).bit_length())
    assert [(s.commit, s.answer) for s in found.steps] == [(c, counts[c]) for c in measured]

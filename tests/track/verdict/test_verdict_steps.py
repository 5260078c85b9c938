"""Step detection and the one-sided rank test on synthetic series."""

from __future__ import annotations

import math

import pytest

from detsim.track.verdict.steps import mann_whitney_greater, segments, u_counts

pytest.importorskip("asv", reason="segments uses asv's step detection (pip install -e '.[dev]')")


def test_one_sided_rank_test():
    assert mann_whitney_greater([1, 2, 3], [4, 5, 6]) == pytest.approx(1 / 20)
    assert mann_whitney_greater([4, 5, 6], [1, 2, 3]) == pytest.approx(1.0)
    assert mann_whitney_greater([1.0] * 6, [1.0] * 6) == pytest.approx(1.0)
    big = mann_whitney_greater(list(range(60)), [x + 100 for x in range(60)])
    assert big < 1e-10


def test_an_empty_side_proves_nothing():
    assert mann_whitney_greater([], [1.0, 2.0]) == 1.0 and mann_whitney_greater([1.0], []) == 1.0


def test_u_counts_are_the_orderings_of_m_plus_n_values():
    for m, n in ((1, 1), (2, 3), (4, 4), (5, 2)):
        counts = u_counts(m, n)
        assert len(counts) == m * n + 1 and sum(counts) == math.comb(m + n, m)
        assert counts == counts[::-1]  # U and m n - U are equally likely
    assert u_counts(2, 2) == [1, 1, 2, 1, 1]


def test_a_flat_series_is_one_segment():
    assert segments([1.0, 1.01, 0.99, 1.0], 0.5) == [(0, 4, pytest.approx(1.0, rel=0.02))]


def test_a_doubling_after_two_commits_is_a_step():
    y = [1.0, 1.02, 2.0, 2.03, 1.98]
    [(a0, a1, low), (b0, b1, high)] = segments(y, 0.5)
    assert (a0, a1, b0, b1) == (0, 2, 2, 5)
    assert low == pytest.approx(1.01, rel=0.01) and high == pytest.approx(2.0, rel=0.02)


def test_the_threshold_sets_the_penalty_of_a_step():
    """A lone latest commit splits off when it is off by more than half the threshold (in logs)."""
    assert len(segments([1.0, 1.0, 1.0, 1.08, 1.08], 0.5)) == 1
    assert len(segments([1.0, 1.0, 1.0, 1.08, 1.08], 0.05)) == 2
    assert len(segments([1.0, 1.0, 1.0, 1.0, 1.3], 0.5)) == 2  # log 1.3 > log 1.5 / 2
    assert len(segments([1.0, 1.0, 1.0, 1.0, 1.2], 0.5)) == 1  # log 1.2 < log 1.5 / 2
    assert len(segments([1.0, 1.0, 1.3, 1.0, 1.0], 0.5)) == 1  # one commit between two steps: twice the penalty

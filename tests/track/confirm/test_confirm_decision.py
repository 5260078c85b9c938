"""Deciding a re-measurement: the signed-rank test and the confirmed / noise rule."""

from __future__ import annotations

import math

import pytest

from detsim.track.confirm.decision import ALPHA, EXTRA_ROUNDS, Status, decide, extra_rounds, signed_rank_greater
from detsim.track.confirm.remeasure import ROUNDS, Remeasurement



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
    assert confirmed.status is Status.CONFIRMED and confirmed.p_value < ALPHA
    assert confirmed.ratio == pytest.approx(1.2, rel=0.03) and "slower by more than 5%" in confirmed.evidence
    noise = decide(fake(1.0), threshold=0.05)
    assert noise.status is Status.NOISE and "not significant" in noise.evidence


def test_a_real_but_small_difference_is_noise_against_the_threshold(fake):
    small = decide(fake(1.03), threshold=0.05)
    assert small.status is Status.NOISE and "within the 5% threshold" in small.evidence


def test_a_faster_commit_is_never_confirmed(fake):
    assert decide(fake(0.7), threshold=0.05).status is Status.NOISE


def test_an_undecided_first_look_gets_one_extension(fake):
    a = tuple(1.0 for _ in range(ROUNDS))
    mixed = tuple(x * (1.2 if i < 10 else 0.9) for i, x in enumerate(a))  # 5 blocks slower, 3 faster
    undecided = Remeasurement("a" * 40, "b" * 40, a, mixed, "AB" * ROUNDS)
    ratio_p = decide(undecided, 0.05)
    assert ratio_p.ratio > 1.05 and ALPHA <= ratio_p.p_value < 0.2
    more = extra_rounds(0.05)
    assert more(undecided) == EXTRA_ROUNDS
    longer = Remeasurement("a" * 40, "b" * 40, a + a, mixed + mixed, "AB" * 2 * ROUNDS)
    assert more(longer) == 0  # at most one extension
    assert more(fake(1.0)) == 0 and more(fake(1.5)) == 0


def test_the_record_carries_the_status_and_the_evidence(fake):
    record = decide(fake(1.5), threshold=0.05).record()
    assert record["confirmation"] == "confirmed" and record["remeasured_rounds"] == ROUNDS
    assert math.isclose(record["remeasured_ratio"], 1.5, rel_tol=0.03) and record["remeasured_p"] < ALPHA

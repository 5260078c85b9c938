"""A finding's verdict status, ratio and JSON record."""

import pytest

from detsim.track.judge.series import Series
from detsim.track.judge.finding import Finding, Confirmation


def _series(family: str, case: str | None = None) -> Series:
    return Series(env="env", name="bench.x", params="", family=family, unit="seconds", case=case)


@pytest.mark.parametrize("label, counts", [(Confirmation.SUSPECT, False), (Confirmation.NOISE, False), (Confirmation.CONFIRMED, True)])
def test_a_timing_step_is_a_regression_only_once_confirmed(label, counts):
    finding = Finding(_series("timing"), "a", "b", 1.0, 1.2, {"confirmation": label})
    assert finding.is_verdict is counts


def test_an_exact_family_is_a_regression_without_confirmation():
    assert Finding(_series("cost"), "a", "b", 100.0, 103.0).is_verdict


def test_ratio_is_none_without_an_old_value():
    assert Finding(_series("parity"), None, "b", None, 0.5).ratio is None
    assert Finding(_series("timing"), "a", "b", 2.0, 3.0).ratio == 1.5


def test_a_parity_record_carries_r_and_the_case():
    record = Finding(_series("parity", case="a01"), "a", "b", 0.0, 0.0063, {"note": "x"}).to_dict()
    assert record["case"] == "a01" and record["note"] == "x"
    assert record["old_r"] == 1.0 and record["new_r"] == pytest.approx(0.9937)
    assert (record["last_good"], record["first_bad"], record["ratio"]) == ("a", "b", None)

"""detsim.track.judge.series: the judge's points and series."""

from __future__ import annotations

import math

import pytest

from detsim.track.judge.family import Family
from detsim.track.judge.series import Point, Series


def test_a_point_is_measured_only_with_a_finite_value():
    assert Point("c", 1.0).measured
    assert not Point("c", None).measured and not Point("c", math.nan).measured
    series = Series(env="e", name="n", params="(a=1)", family="timing", unit="seconds")
    assert series.label == "n(a=1)" and series.points == ()
    with pytest.raises(AttributeError):
        series.points = ()  # frozen: a series is built once


def test_a_family_given_as_its_word_is_its_member_and_any_other_word_is_refused():
    series = Series(env="e", name="n", params="", family="determinism", unit="changed (0/1)")
    assert series.family is Family.IMAGE_CHANGED
    with pytest.raises(ValueError, match="'speed' is not a valid Family"):
        Series(env="e", name="n", params="", family="speed", unit="s")

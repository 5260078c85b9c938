"""detsim.track.base.metrics: Pearson r (None where undefined), the acceptance line and the other measures of
agreement."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from _tolerances import PARITY_MIN_R
from detsim.track.base.metrics import PARITY_MAX_ONE_MINUS_R, PARITY_MIN_R as MIN_R, image_metrics, passes_parity, \
    pearson_r


def test_the_acceptance_line_is_the_test_suites_on_both_scales():
    assert MIN_R == PARITY_MIN_R
    assert 1.0 - MIN_R == pytest.approx(PARITY_MAX_ONE_MINUS_R, rel=1e-12)


def test_pearson_r_is_numpys_in_float64_whatever_the_input_type():
    rng = np.random.default_rng(1)
    a = rng.random((5, 7))
    b = a + 0.3 * rng.random((5, 7))
    expected = np.corrcoef(a.ravel(), b.ravel())[0, 1]
    assert pearson_r(a, b) == pytest.approx(expected, rel=1e-14)
    assert pearson_r(torch.from_numpy(a), b.tolist()) == pytest.approx(expected, rel=1e-14)
    assert pearson_r(a, -b) == pytest.approx(-expected, rel=1e-14)
    assert isinstance(pearson_r(a, b), float)


@pytest.mark.parametrize(("a", "b", "expected"), [
    (np.zeros((2, 2)), np.zeros((2, 2)), 1.0),  # identical constants correlate perfectly
    (np.full((2, 2), 3.0), np.full((2, 2), 3.0), 1.0),
    (np.zeros((2, 2)), np.eye(2), None),  # a constant image that differs: undefined
    (np.eye(2), np.ones((2, 2)), None),
    (np.array([[np.nan, 1.0]]), np.array([[0.0, 1.0]]), None),
    (np.array([[0.0, 1.0]]), np.array([[np.inf, 1.0]]), None),
    (np.zeros((0, 3)), np.zeros((0, 3)), None),  # no pixels
])
def test_pearson_r_is_none_exactly_where_undefined(a, b, expected):
    assert pearson_r(a, b) == expected


def test_images_of_different_sizes_are_refused():
    with pytest.raises(ValueError, match="6 and 4 pixels"):
        pearson_r(np.zeros((2, 3)), np.zeros((2, 2)))


@pytest.mark.parametrize(("r", "passes"), [
    (1.0, True), (MIN_R, True), (np.nextafter(MIN_R, 0.0), False), (0.5, False), (None, False), (float("nan"), False),
])
def test_passes_parity_at_and_above_the_line_only(r, passes):
    assert passes_parity(r) is passes


def test_passes_parity_takes_another_line():
    assert passes_parity(0.99, min_r=0.98) and not passes_parity(0.99, min_r=0.995)


def test_image_metrics():
    reference = np.arange(12, dtype=np.float64).reshape(3, 4)
    ours = reference.copy()
    ours[2, 1] += 3.0
    m = image_metrics(ours, reference)
    assert m["worst"] == {"s": 2, "f": 1, "detsim": 12.0, "reference": 9.0}
    assert m["max_abs"] == 3.0 and m["max_rel"] == pytest.approx(3.0 / 12.0)
    assert m["sum_ratio"] == pytest.approx(69.0 / 66.0)
    assert m["r"] == pytest.approx(np.corrcoef(ours.ravel(), reference.ravel())[0, 1])
    same = image_metrics(np.zeros((2, 2)), np.zeros((2, 2)))
    assert same["r"] == 1.0 and same["sum_ratio"] == 1.0 and same["max_rel"] == 0.0
    broken = image_metrics(np.full((2, 2), np.nan), np.ones((2, 2)))
    assert broken["r"] is None and broken["max_abs"] is None and broken["worst"]["detsim"] is None


def test_a_non_finite_pixel_is_the_worst_and_a_constant_image_has_no_r():
    reference = np.ones((2, 3))
    ours = reference.copy()
    ours[1, 2] = np.inf
    m = image_metrics(ours, reference)
    assert (m["worst"]["s"], m["worst"]["f"]) == (1, 2) and m["worst"]["detsim"] is None
    assert m["sum_detsim"] is None and m["sum_ratio"] is None
    flat = image_metrics(np.zeros((2, 2)), np.eye(2))
    assert flat["r"] is None and flat["sum_ratio"] == 0.0 and flat["max_rel"] == 1.0

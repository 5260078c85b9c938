"""detsim.track.target.departure: where two images part (edges, ring, centre, everywhere), whether the
central region passes while the full frame fails, the worst pixels with both values, the map."""

from __future__ import annotations

import numpy as np
import pytest

from _tolerances import F64_ROUNDING, F64_ULPS
from detsim.track.target.departure import departure, map_lines


@pytest.fixture
def reference() -> np.ndarray:
    return np.random.default_rng(7).random((96, 96)) + 1.0


def _radius(shape):
    yy, xx = np.mgrid[0:shape[0], 0:shape[1]]
    return np.hypot(yy - (shape[0] - 1) / 2, xx - (shape[1] - 1) / 2)


def test_an_edge_change_is_at_the_edges_and_the_centre_still_passes(reference):
    image = reference.copy()
    image[:3, :] *= 3.0
    found = departure(image, reference)
    assert found["where"] == "edges" and found["regions"]["edges"]["share"] == 1.0
    assert found["central_passes_full_fails"] and found["central"]["r"] == pytest.approx(1.0, rel=F64_ROUNDING)
    assert not found["full"]["passes"]
    worst = found["worst"][0]
    assert worst["s"] < 3 and worst["target"] == pytest.approx(3 * worst["reference"], rel=F64_ULPS)
    assert worst["ratio"] == pytest.approx(3.0, rel=F64_ULPS)
    assert "at the edges" in found["sentence"] and "central region passes" in found["sentence"]


def test_a_ring_is_named_with_its_radii(reference):
    image = reference.copy()
    image[(_radius(image.shape) > 20) & (_radius(image.shape) < 25)] *= 1.01
    found = departure(image, reference)
    assert found["where"] == "ring" and 17 <= found["ring"]["from_px"] <= 21 and 24 <= found["ring"]["to_px"] <= 28


def test_a_central_change_is_in_the_centre(reference):
    image = reference.copy()
    image[40:56, 40:56] *= 1.01
    assert departure(image, reference)["where"] == "centre"


def test_a_change_spread_over_the_frame_is_everywhere_and_equal_images_part_nowhere(reference):
    noisy = reference * (1 + 1e-3 * np.random.default_rng(1).random(reference.shape))
    assert departure(noisy, reference)["where"] == "everywhere"
    same = departure(reference, reference)
    assert (same["where"], same["worst"], same["sentence"]) == ("nowhere", [], "the images are identical")


def test_the_map_marks_the_blocks_that_differ(reference):
    image = reference.copy()
    image[-1, -1] *= 2
    found = departure(image, reference)
    lines = map_lines(found)
    assert len(found["map"]) == 16 and lines[16][-2] == "#" and set(lines[1][1:-1]) == {" "}


def test_images_of_different_shapes_are_refused(reference):
    with pytest.raises(ValueError, match="different shapes"):
        departure(reference[:-1], reference)


def test_the_map_is_not_lit_by_rounding_of_a_faint_background():
    spots = np.zeros((64, 64))
    spots[::8, ::8] = 100.0
    ours = spots.copy()
    ours[1::8, 1::8] = 1e-6  # a background pixel nanoBragg.c leaves at 0: relative to itself, a difference of 1
    ours[::8, ::8] *= 1 + 1e-3
    marks = set("".join(map_lines(departure(ours, spots))[1:-2]))
    assert "#" not in marks and "+" in marks  # the spots' 1e-3 shows, the background's 1e-6 of nothing does not

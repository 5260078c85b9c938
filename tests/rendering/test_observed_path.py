"""The observed path: the intermediates of the GENERAL maths path, reported without changing a bit."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from _tolerances import F64_ROUNDING, F64_SAME_OPERATIONS
from detsim.rendering.observed_path import OBSERVED, observed_values
from detsim.model.geometry import pixel_positions
from detsim.rendering.engine import prepare, render, restrict_pixels
from detsim.rendering.interpolation import InterpolationState
from detsim.rendering.lane_blocks import Projections
from detsim.rendering.paths import Path, chunk_values, plan_chunk
from detsim.rendering.pixel_terms import pixel_terms
from helpers import TINY


def test_observer_sees_the_values_that_make_the_image():
    setup = prepare(TINY)
    image, _ = render(setup)
    seen = {}

    def observe(name, value, **where):
        seen.setdefault(name, []).append(value.detach().clone())

    traced = restrict_pixels(setup, [(2, 1)])
    value, _ = render(traced, observe=observe)
    assert set(seen) <= set(OBSERVED)
    assert {"hkl", "F_cell", "I_sum", "pixel_value", "solid_angle_used"} <= set(seen)
    assert float(seen["pixel_value"][0][0]) == pytest.approx(float(image[2, 1]), rel=F64_SAME_OPERATIONS)
    assert float(value[2, 1]) == pytest.approx(float(image[2, 1]), rel=F64_SAME_OPERATIONS)
    terms = torch.cat([t.reshape(-1) for t in seen["I_term"]]).sum() + setup.water_bg
    assert float(seen["I_sum"][-1][0]) == pytest.approx(float(terms), rel=F64_ROUNDING)


def _observed_chunk(config):
    setup = prepare(config)
    layers = torch.arange(setup.thickness.count, dtype=setup.dtype) * setup.thickness.step
    position = pixel_positions(setup.geometry, setup.pixels_s, setup.pixels_f, setup.oversample, layers, False,
                               setup.frame.beam)
    terms = pixel_terms(setup, position, full=True)
    block_lanes = 5  # fewer than the pixels: one lane per block
    return plan_chunk(setup, terms, 0, InterpolationState(enabled=False), Projections(setup), block_lanes, "eager",
                      True)


@pytest.mark.parametrize("flags", [{}, {"oversample_thick": True, "oversample_polar": True, "oversample_omega": True}],
                         ids=["plain", "running-products"])
def test_observing_changes_no_bit_of_the_general_path(flags):
    chunk = _observed_chunk(replace(TINY, sampling=replace(TINY.sampling, **flags)))
    assert chunk.path is Path.GENERAL
    names = []
    observed = observed_values(chunk, lambda name, value, **where: names.append(name))
    assert torch.equal(observed, chunk_values(chunk))
    assert set(names) == set(OBSERVED)  # a square crystal reports every name
    assert names[-1] == "pixel_value" and names.count("I_sum") == names.count("I_term")


def test_where_gives_each_block_its_place_in_the_loops():
    chunk = _observed_chunk(TINY)
    places = []

    def observe(name, value, **where):
        if name == "I_term":
            places.append((where["layer"], where["subpixel"], where["sources"], where["orientations"]))
            assert value.shape[1:] == (where["sources"].stop - where["sources"].start,
                                       where["orientations"].stop - where["orientations"].start)

    observed_values(chunk, observe)
    T, O, S, R = 2, 4, 2, 4
    covered = [(t, o, s, r) for t, o, s_sl, r_sl in places for s in range(s_sl.start, s_sl.stop)
               for r in range(r_sl.start, r_sl.stop)]
    assert covered == [(t, o, s, r) for t in range(T) for o in range(O) for s in range(S) for r in range(R)]

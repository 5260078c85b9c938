"""nanoBragg's global interpolation switch: off for good after the first out-of-box iteration (spec §5.7)."""

from __future__ import annotations

import numpy as np
import torch

from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.model.geometry import pixel_positions
from detsim.model.structure_factors import HKLTable
from detsim.rendering.engine import prepare, render
from detsim.rendering.interpolation import InterpolationState, allowed, scan_edge
from detsim.rendering.lane_blocks import Projections, iteration_index
from detsim.rendering.lattice_factor import lattice_sq
from detsim.rendering.pixel_terms import pixel_terms

# A small HKL box (interpolable for |h|, |k|, |l| <= 3) that pixels far from the beam (near pixel (0, 0))
# leave; N = 2 turns interpolation on.
VALUES = np.random.default_rng(2).uniform(10, 100, size=(11, 11, 11))
TABLE = HKLTable(h_min=-5, k_min=-5, l_min=-5, values=VALUES, count=VALUES.size, source="test")
CONFIG = SimulationConfig(
    crystal=CrystalConfig(cell=(20, 22, 24, 90, 90, 90), hkl=TABLE, Na=2, Nb=2, Nc=2, misset_deg=(5, 10, 15),
                          mosaic_spread_deg=1.0, mosaic_domains=2),
    beam=BeamConfig(hdivrange_mrad=4, hdivsteps=2),
    detector=DetectorConfig(fpixels=9, spixels=8, pixel_mm=3.0, distance_mm=40, xbeam_mm=1.5, ybeam_mm=1.5),
    sampling=SamplingConfig(oversample=2),
)


def _scan(setup, lanes):
    layers = torch.arange(setup.thickness.count, dtype=setup.dtype) * setup.thickness.step
    position = pixel_positions(setup.geometry, setup.pixels_s, setup.pixels_f, setup.oversample, layers, False,
                               setup.frame.beam)
    terms = pixel_terms(setup, position, full=False)
    state = InterpolationState(enabled=True)
    per_pixel = terms.airpath.shape[1] * terms.airpath.shape[2] * terms.n_sources * setup.orientations.shape[0]
    scan_edge(setup, terms, 0, per_pixel, lanes, state, Projections(setup))
    return state, terms, per_pixel


def _first_out_of_box(setup, terms, per_pixel) -> int:
    """Brute force over every iteration, in nanoBragg's order: the first reached one outside the box."""
    P, T, O = terms.airpath.shape
    S, R = terms.n_sources, setup.orientations.shape[0]
    everything = (slice(0, S), slice(0, R))
    best = None
    for t in range(T):
        for o in range(O):
            hkl = Projections(setup).miller(terms.diffracted[:, t, o], *everything, (0, 1, 2)).movedim(1, -1)  # (P, S, R, 3)
            reached = lattice_sq(setup, hkl, hkl - torch.ceil(hkl - 0.5)) != 0  # no water: F_latt == 0 skips
            out = reached & ~setup.structure.interpolable(*hkl.unbind(-1))
            index = torch.arange(P)[:, None, None] * per_pixel + iteration_index(T, O, S, R, t, o, *everything, P, "cpu")
            if bool(out.any()):
                first = int(index[out].min())
                best = first if best is None else min(best, first)
    return best


def test_the_switch_off_point_is_the_first_out_of_box_iteration_whatever_the_block_size():
    setup = prepare(CONFIG)
    assert setup.interpolate
    state, terms, per_pixel = _scan(setup, lanes=1)
    assert state.cutoff is not None and state.cutoff == _first_out_of_box(setup, terms, per_pixel)
    assert state.cutoff_pixel == state.cutoff // per_pixel and 0 < state.cutoff_pixel < setup.pixels_s.numel()
    for lanes in (3, 1000):
        other, _, _ = _scan(setup, lanes)
        assert (other.cutoff, other.cutoff_pixel) == (state.cutoff, state.cutoff_pixel)


def test_allowed_is_inside_the_box_and_before_the_cutoff():
    setup = prepare(CONFIG)
    hkl = torch.tensor([[[[0.5, 0.5, 0.5]]], [[[0.5, 0.5, 0.5]]], [[[3.5, 0.0, 0.0]]]], dtype=torch.float64)
    within = torch.zeros(3, 1, 1, dtype=torch.long)
    state = InterpolationState(enabled=True)
    assert allowed(setup, hkl, state, 0, 10, within).reshape(-1).tolist() == [True, True, False]
    state.cutoff = 10  # the second pixel's first iteration
    assert allowed(setup, hkl, state, 0, 10, within).reshape(-1).tolist() == [True, False, False]


def test_render_reports_the_same_switch_off_pixel_for_any_chunk_size():
    setup = prepare(CONFIG)
    state, _, _ = _scan(setup, lanes=1)
    expected = (int(setup.pixels_s[state.cutoff_pixel]), int(setup.pixels_f[state.cutoff_pixel]))
    for chunk in (None, 1, 7):
        _, info = render(setup, chunk_pixels=chunk)
        assert info.interpolation_switched_off_at == expected
    assert state.switched_off_at(setup) == expected

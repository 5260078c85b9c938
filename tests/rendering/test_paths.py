"""The four maths paths of a chunk compute the same sums; plan_chunk picks the one that applies."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from _tolerances import ALLCLOSE
from detsim.model.config import BeamConfig, CrystalConfig, CrystalShape, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.model.geometry import pixel_positions
from detsim.model.structure_factors import HKLTable
from detsim.rendering import lattice_factor
from detsim.rendering.engine import prepare
from detsim.rendering.interpolation import InterpolationState
from detsim.rendering.lane_blocks import Projections
from detsim.rendering.paths import Path, chunk_values, fusable, plan_chunk
from detsim.rendering.pixel_terms import pixel_terms

# 2 sources x 2 orientations x 2x2 subpixels, one crystal axis with N = 1 (left out of the grating paths).
CASE = SimulationConfig(
    crystal=CrystalConfig(cell=(60, 70, 80, 90, 90, 90), default_F=100, Na=4, Nb=1, Nc=6,
                          misset_deg=(10, 20, 30), mosaic_spread_deg=0.5, mosaic_domains=2, water_um=0.2),
    beam=BeamConfig(dispersion_pct=2, dispsteps=2),
    detector=DetectorConfig(fpixels=12, spixels=10, pixel_mm=0.8, distance_mm=80),
    sampling=SamplingConfig(oversample=2),
)
LANES = 3  # lanes per block: blocks split a source's orientations and cover several pixels at once


def _chunk(config, *, device="cpu", dtype=torch.float64, mode="eager", observed=False, full=False):
    setup = prepare(config, device=device, dtype=dtype)
    layers = torch.arange(setup.thickness.count, device=setup.device, dtype=dtype) * setup.thickness.step
    position = pixel_positions(setup.geometry, setup.pixels_s, setup.pixels_f, setup.oversample, layers,
                               config.detector.curved, setup.frame.beam)
    terms = pixel_terms(setup, position, full=full)
    P = setup.pixels_s.numel()
    return plan_chunk(setup, terms, 0, InterpolationState(enabled=setup.interpolate), Projections(setup),
                      LANES * P, mode, observed)


# One source, one orientation: each block has one lane per pixel (the GEMM is taken the other way round).
ONE_LANE = replace(CASE, beam=BeamConfig(), crystal=replace(CASE.crystal, mosaic_spread_deg=0, mosaic_domains=1))


@pytest.mark.parametrize("config", [CASE, ONE_LANE], ids=["lanes", "one-lane"])
def test_the_four_paths_give_the_same_pixel_values(device, dtype, config):
    grating_chunk = _chunk(config, device=device, dtype=dtype)
    assert grating_chunk.one_lane == (config is ONE_LANE)
    assert grating_chunk.path is Path.GRATING and grating_chunk.axes == (0, 2)
    general_chunk = _chunk(config, device=device, dtype=dtype, observed=True)
    assert general_chunk.path is Path.GENERAL and general_chunk.axes == (0, 1, 2)
    N_fused = torch.as_tensor(grating_chunk.N_axes, dtype=dtype, device=device)
    fused_chunk = replace(grating_chunk, path=Path.FUSED, kernel=lattice_factor.square_lattice_lane_sum, N_fused=N_fused)
    square_chunk = replace(grating_chunk, path=Path.SQUARE)
    reference = chunk_values(general_chunk)
    assert reference.shape == (10 * 12,) and bool((reference > 0).all())
    rtol = ALLCLOSE[dtype][0]  # every pixel is > 0 (water background): relative bounds suffice
    for chunk in (grating_chunk, fused_chunk, square_chunk):
        torch.testing.assert_close(chunk_values(chunk), reference, rtol=rtol, atol=0)


def _table(lo=-8, hi=8) -> HKLTable:
    values = np.random.default_rng(3).uniform(10, 100, size=(hi - lo + 1,) * 3)
    return HKLTable(h_min=lo, k_min=lo, l_min=lo, values=values, count=values.size, source="test")


@pytest.mark.parametrize("change,mode,path", [
    ({}, "eager", Path.GRATING),
    ({}, "compiled", Path.FUSED),
    ({"crystal": {"Na": 1, "Nc": 1}}, "compiled", Path.GRATING),  # no axis with N > 1: nothing to fuse
    ({"crystal": {"hkl": _table(), "interpolate": False}}, "compiled", Path.SQUARE),
    ({"crystal": {"dmin_A": 15.0}}, "compiled", Path.SQUARE),
    ({"sampling": {"oversample_omega": True}}, "compiled", Path.SQUARE),
    ({"crystal": {"shape": CrystalShape.ROUND}}, "compiled", Path.GENERAL),
    ({"crystal": {"hkl": _table(), "interpolate": True}}, "eager", Path.GENERAL),
], ids=["eager", "compiled", "no-axes", "table", "dmin", "oversample_omega", "round", "interpolate"])
def test_plan_chunk_picks_the_path_that_applies(change, mode, path):
    config = replace(CASE, **{group: replace(getattr(CASE, group), **fields) for group, fields in change.items()})
    chunk = _chunk(config, mode=mode)
    assert chunk.path is path
    assert (chunk.kernel is not None) == (path is Path.FUSED)
    assert fusable(chunk.setup) == (path in (Path.FUSED, Path.GRATING))  # what the memory plan assumes
    assert _chunk(config, mode=mode, observed=True).path is Path.GENERAL


def test_the_dmin_cut_chunk_says_it_cuts():
    cut = replace(CASE, crystal=replace(CASE.crystal, dmin_A=15.0))
    assert _chunk(cut).has_cut and not _chunk(CASE).has_cut

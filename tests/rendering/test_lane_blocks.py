"""Blocks of the source x orientation loop, and Miller indices from one GEMM (spec §5.6)."""

from __future__ import annotations

import pytest
import torch

from _tolerances import ALLCLOSE
from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.rendering.engine import prepare
from detsim.rendering.lane_blocks import Projections, blocks, iteration_index

CONFIG = SimulationConfig(
    crystal=CrystalConfig(cell=(30, 32, 34, 90, 90, 90), default_F=50, misset_deg=(10, 20, 30),
                          mosaic_spread_deg=1.0, mosaic_domains=3),
    beam=BeamConfig(hdivrange_mrad=4, hdivsteps=2, dispersion_pct=2, dispsteps=2),
    detector=DetectorConfig(fpixels=4, spixels=3, pixel_mm=4.0, distance_mm=40),
    sampling=SamplingConfig(oversample=1, osc_deg=2, phisteps=2),
)


@pytest.mark.parametrize("S,R,lanes", [(3, 5, 1), (3, 5, 4), (3, 5, 5), (3, 5, 11), (4, 2, 100), (1, 1, 1)])
def test_blocks_cover_the_loop_once_in_order_within_the_lane_budget(S, R, lanes):
    visited = []
    for s_sl, r_sl in blocks(S, R, lanes):
        size = (s_sl.stop - s_sl.start) * (r_sl.stop - r_sl.start)
        assert 1 <= size <= max(lanes, 1)
        assert r_sl == slice(0, R) or s_sl.stop - s_sl.start == 1  # whole sources, or part of one source
        visited += [(s, r) for s in range(s_sl.start, s_sl.stop) for r in range(r_sl.start, r_sl.stop)]
    assert visited == [(s, r) for s in range(S) for r in range(R)]


def test_iteration_index_counts_in_nanobraggs_loop_order():
    T, O, S, R, P = 2, 4, 3, 5, 2
    index = iteration_index(T, O, S, R, 1, 2, slice(1, 3), slice(2, 5), P, "cpu")
    assert index.shape == (P, 2, 3)
    expected = torch.tensor([[((1 * O + 2) * S + s) * R + r for r in range(2, 5)] for s in range(1, 3)])
    assert torch.equal(index[0], expected) and torch.equal(index[1], expected)


def test_miller_indices_are_the_axes_dotted_with_the_scattering_vector(dtype):
    setup = prepare(CONFIG, dtype=dtype)
    S, R = setup.sources.lambda_m.shape[0], setup.orientations.shape[0]
    assert (S, R) == (4, 6)
    d = torch.nn.functional.normalize(torch.tensor([[0.9, 0.1, -0.2], [1.0, -0.3, 0.25]], dtype=dtype), dim=-1)
    projections = Projections(setup)
    s_sl, r_sl = slice(1, 3), slice(2, 6)
    scattering = (d[:, None, :] - setup.sources.incident[s_sl]) / setup.sources.lambda_m[s_sl, None]  # (P, Sb, 3)
    expected = torch.einsum("rjx,psx->pjsr", setup.orientations[r_sl], scattering)  # (P, 3, Sb, Rb)
    rtol, atol = ALLCLOSE[dtype]
    torch.testing.assert_close(projections.miller(d, s_sl, r_sl, (0, 1, 2)), expected, rtol=rtol, atol=atol * 10)
    torch.testing.assert_close(projections.miller(d, s_sl, r_sl, (0, 2)), expected[:, [0, 2]], rtol=rtol, atol=atol * 10)
    B, C = projections.get(s_sl, r_sl, (0, 1, 2))  # the fused kernels' form d @ B - C
    torch.testing.assert_close((d @ B - C).view(2, 3, 2, 4), expected, rtol=rtol, atol=atol * 10)
    assert projections.axes(r_sl, (0, 1, 2)) is projections.axes(r_sl, (0, 1, 2))  # built once


def test_miller_indices_take_nanobraggs_scattering_vector_first_not_the_cancelling_form():
    # h = a . ((d - i) / lambda), as nanoBragg.c L2756-L2758 and L2809-L2811; the rearranged
    # d . (a / lambda) - (a . i) / lambda subtracts two numbers of about |a| / lambda = 88 to make h = 0.66,
    # some 1e-14 off: the rendering of one pixel of a random command line by one float32 unit.
    setup = prepare(CONFIG, dtype=torch.float64)
    d = torch.nn.functional.normalize(torch.tensor([[0.9, 0.1, -0.2], [1.0, -0.3, 0.25]], dtype=torch.float64), dim=-1)
    projections = Projections(setup)
    everything = (slice(0, 4), slice(0, 6))
    S = (d[:, None, :] - setup.sources.incident) / setup.sources.lambda_m[:, None]  # (P, S, 3), rounded as in C
    a = setup.orientations.permute(1, 0, 2)  # (3, R, 3)
    exact = (a[None, :, None, :, 0] * S[:, None, :, None, 0] + a[None, :, None, :, 1] * S[:, None, :, None, 1]) \
        + a[None, :, None, :, 2] * S[:, None, :, None, 2]  # (P, 3, S, R) nanoBragg's dot_product, unfused
    got = projections.miller(d, *everything, (0, 1, 2))
    B, C = projections.get(*everything, (0, 1, 2))
    rearranged = (d @ B - C).view(got.shape)
    ulp = torch.finfo(torch.float64).eps * exact.abs().clamp(min=1.0)
    assert ((got - exact).abs() <= 2 * ulp).all()  # a GEMM's sum of three products: a rounding or two
    assert ((rearranged - exact).abs() > 2 * ulp).any()  # what the fix is for

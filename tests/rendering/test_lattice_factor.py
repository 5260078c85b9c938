"""The lattice factor in each of its forms: the reference functions at known points, F_latt**2 by crystal shape
and F_cell for a block, and the eager path's in-place grating against the reference (spec §5.6, §5.7)."""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest
import torch

from _tolerances import F64_ROUNDING, F64_UNREDUCED_PHASE, GRATING_PEAK_REL, GRATING_ZERO_ABS
from detsim.model.config import CrystalConfig, CrystalShape, SimulationConfig
from detsim.model.structure_factors import HKLTable
from detsim.rendering import lattice_factor
from detsim.rendering.engine import prepare
from detsim.rendering.lattice_factor import cell, lattice_sq

VALUES = np.random.default_rng(1).uniform(10, 100, size=(9, 9, 9))
TABLE = HKLTable(h_min=-4, k_min=-4, l_min=-4, values=VALUES, count=VALUES.size, source="test")
CONFIG = SimulationConfig(crystal=CrystalConfig(cell=(40, 40, 40, 90, 90, 90), default_F=0, hkl=TABLE,
                                                Na=3, Nb=4, Nc=5, fudge=0.8))
HKL = torch.tensor([[[[0.1, -0.2, 0.3], [1.45, 2.05, -0.5]]]], dtype=torch.float64)  # (P=1, Sb=1, Rb=2, 3)
NEAREST = torch.ceil(HKL - 0.5)
T = dict(dtype=torch.float64)


@pytest.mark.parametrize("shape", list(CrystalShape))
def test_lattice_factor_is_the_shapes_own(shape):
    setup = prepare(replace(CONFIG, crystal=replace(CONFIG.crystal, shape=shape)))
    N, frac = setup.lattice.N, HKL - NEAREST
    rad_sq = lattice_factor.reciprocal_distance_sq(frac, setup.lattice.recip_A, N)
    expected = {
        CrystalShape.SQUARE: lambda: lattice_factor.lattice_square_sq(frac, N),
        CrystalShape.ROUND: lambda: lattice_factor.lattice_round_sq(frac, N, 0.8),
        CrystalShape.GAUSS: lambda: lattice_factor.lattice_gauss_sq(rad_sq, N, 0.8),
        CrystalShape.TOPHAT: lambda: lattice_factor.lattice_tophat_sq(rad_sq, N, 0.8),
    }[shape]()
    got = lattice_sq(setup, HKL, frac)
    assert got.shape == (1, 1, 2) and torch.equal(got, expected)


def test_cell_interpolates_only_where_the_mask_allows():
    setup = prepare(CONFIG)
    nearest = cell(setup, None, NEAREST, None)
    assert nearest.tolist() == [[[VALUES[4, 4, 4], VALUES[5, 6, 3]]]]
    mask = torch.tensor([[[False, True]]])
    mixed = cell(setup, HKL, NEAREST, mask)
    h, k, l = HKL[0, 0, 1]
    assert float(mixed[0, 0, 0]) == VALUES[4, 4, 4]
    assert float(mixed[0, 0, 1]) == float(setup.structure.tricubic(h, k, l)) != VALUES[5, 6, 3]
    assert torch.equal(cell(setup, HKL, NEAREST, torch.zeros_like(mask)), nearest)


# -- the reference functions

def test_sincg_squared_peak_zero_and_general_value():
    N = torch.tensor(5.0, **T)
    frac = torch.tensor([0.0, 0.2, 0.5, 1e-9], **T)
    got = lattice_factor.sincg_squared(frac, N)
    assert got[0] == 25.0
    assert float(got[1]) == pytest.approx(0.0, abs=GRATING_ZERO_ABS)  # sin(pi) for N*frac = 1
    assert float(got[2]) == pytest.approx(1.0)  # sin(5 pi/2)/sin(pi/2) = 1
    assert float(got[3]) == pytest.approx(25.0, rel=F64_ROUNDING)


def test_square_lattice_uses_only_axes_with_more_than_one_cell():
    N = torch.tensor([1.0, 4.0, 1.0], **T)
    frac = torch.tensor([[0.3, 0.0, 0.4]], **T)
    assert float(lattice_factor.lattice_square_sq(frac, N)) == 16.0


def test_reduced_index_gives_same_intensity_as_full_index():
    # The grating function squared is periodic in h for integer N: F(h) = F(h - round(h)).
    N = torch.tensor(7.0, **T)
    h = torch.tensor(12.137, **T)
    full = (torch.sin(N * math.pi * h) / torch.sin(math.pi * h)) ** 2
    assert float(lattice_factor.sincg_squared(h - torch.round(h), N)) == pytest.approx(float(full), rel=F64_UNREDUCED_PHASE)


def test_round_gauss_tophat_peak_heights():
    N = torch.tensor([3.0, 4.0, 5.0], **T)
    zero = torch.zeros(1, 3, **T)
    assert float(lattice_factor.lattice_round_sq(zero, N, 1.0)) == pytest.approx((60 * 0.723601254558268) ** 2)
    assert float(lattice_factor.lattice_gauss_sq(torch.zeros(1, **T), N, 1.0)) == 3600.0
    assert float(lattice_factor.lattice_tophat_sq(torch.tensor([0.3968], **T), N, 1.0)) == 3600.0
    assert float(lattice_factor.lattice_tophat_sq(torch.tensor([0.3970], **T), N, 1.0)) == 0.0


def test_reciprocal_distance_uses_all_three_N_squared():
    recip = torch.eye(3, **T) * 0.01
    N = torch.tensor([2.0, 3.0, 4.0], **T)
    frac = torch.tensor([[0.5, 0.0, 0.0]], **T)
    assert float(lattice_factor.reciprocal_distance_sq(frac, recip, N)) == pytest.approx(0.25e-4 * 576)


def test_sinc3():
    assert float(lattice_factor.sinc3(torch.tensor(0.0, **T))) == 1.0
    x = torch.tensor(1.3, **T)
    assert float(lattice_factor.sinc3(x)) == pytest.approx(3 * (math.sin(1.3) / 1.3 - math.cos(1.3)) / 1.69)


# -- the eager path's in-place grating

@pytest.mark.parametrize("n", range(0, lattice_factor.CHEBYSHEV_MAX_N))
def test_chebyshev_u_of_cosine_is_the_ratio_of_sines(n):
    x = torch.linspace(0.01, math.pi - 0.01, 997, dtype=torch.float64)  # avoids sin(x) == 0
    expected = torch.sin((n + 1) * x) / torch.sin(x)
    got = lattice_factor.chebyshev_u(torch.cos(x), n)
    torch.testing.assert_close(got, expected, rtol=0, atol=F64_ROUNDING * (n + 1))  # |U_n| <= n + 1


def _indices(dtype, device):
    """(P, 3, 2, 5) Miller indices: h == 0 exactly, half-integers, and a spread to |h| ~ 60."""
    generator = torch.Generator().manual_seed(5)
    h = (torch.rand(64, 3, 2, 5, generator=generator, dtype=torch.float64) - 0.5) * 120
    h[0] = 0.0
    h[2] = 0.5
    h[3, 0] = -12.5
    return h.to(dtype=dtype, device=device)


@pytest.mark.parametrize("N", [(5, 5, 5), (2, 5, 8), (1, 3, 4), (12, 12, 12), (5, 9, 3)],
                         ids=["equal", "unequal", "with-1", "sines", "mixed-sines"])
def test_squared_product_matches_the_differentiable_definition(N, dtype, device):
    h = _indices(dtype, device)
    N_t = torch.tensor(N, dtype=torch.float64, device=device)
    # the definition, in float64 on the same (possibly float32-rounded) indices
    h64 = h.double()
    expected = lattice_factor.lattice_square_sq((h64 - torch.round(h64)).movedim(1, -1), N_t)  # (P, 2, 5)
    got = lattice_factor.square_grating_product_inplace(h.clone(), [float(n) for n in N]).square()
    assert got.shape == expected.shape and got.dtype == dtype
    peak = math.prod(n * n for n in N)
    torch.testing.assert_close(got.double(), expected, rtol=0, atol=GRATING_PEAK_REL[dtype] * peak)
    assert torch.all(got[0] == peak)  # h == 0 exactly: the limit N per axis, not 0/0



def test_float64_takes_nanobraggs_ratio_of_sines_and_lower_precision_the_exact_polynomial():
    # sin(N pi h) / sin(pi h) is +-N at every integer h. nanoBragg's float64 ratio of sines is exact only
    # at h == 0 (both sines round to tiny, unrelated values elsewhere), and float64 renders its value, as
    # its images hold it; the polynomial form that lower precisions take is exact.
    values = [3.0, -7.0, 42.0]
    got = lattice_factor.square_grating_product_inplace(torch.tensor(values, dtype=torch.float64).reshape(1, 3, 1, 1),
                                                        [5.0, 5.0, 5.0]).square()
    nanobragg = math.prod((math.sin(math.pi * h * 5.0) / math.sin(math.pi * h)) ** 2 for h in values)
    assert float(got) == pytest.approx(nanobragg, rel=1e-12) and abs(float(got) - 5.0 ** 6) > 1e3
    assert not lattice_factor.polynomial_grating([5.0] * 3, torch.float64)
    got32 = lattice_factor.square_grating_product_inplace(torch.tensor(values).reshape(1, 3, 1, 1), [5.0] * 3).square()
    assert float(got32) == 5.0 ** 6

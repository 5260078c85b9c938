"""Per-pixel physics kernels at known points (spec §5.4-§5.6, §6.1)."""

from __future__ import annotations

import math

import pytest
import torch

from _tolerances import F64_ROUNDING, F64_ULPS, F64_UNREDUCED_PHASE, GRATING_ZERO_ABS
from detsim import physics
from detsim.units import R_E_SQ_M2

T = dict(dtype=torch.float64)


def test_sincg_squared_peak_zero_and_general_value():
    N = torch.tensor(5.0, **T)
    frac = torch.tensor([0.0, 0.2, 0.5, 1e-9], **T)
    got = physics.sincg_squared(frac, N)
    assert got[0] == 25.0
    assert float(got[1]) == pytest.approx(0.0, abs=GRATING_ZERO_ABS)  # sin(pi) for N*frac = 1
    assert float(got[2]) == pytest.approx(1.0)  # sin(5 pi/2)/sin(pi/2) = 1
    assert float(got[3]) == pytest.approx(25.0, rel=F64_ROUNDING)


def test_square_lattice_uses_only_axes_with_more_than_one_cell():
    N = torch.tensor([1.0, 4.0, 1.0], **T)
    frac = torch.tensor([[0.3, 0.0, 0.4]], **T)
    assert float(physics.lattice_square_sq(frac, N)) == 16.0


def test_reduced_index_gives_same_intensity_as_full_index():
    # The grating function squared is periodic in h for integer N: F(h) = F(h - round(h)).
    N = torch.tensor(7.0, **T)
    h = torch.tensor(12.137, **T)
    full = (torch.sin(N * math.pi * h) / torch.sin(math.pi * h)) ** 2
    assert float(physics.sincg_squared(h - torch.round(h), N)) == pytest.approx(float(full), rel=F64_UNREDUCED_PHASE)


def test_round_gauss_tophat_peak_heights():
    N = torch.tensor([3.0, 4.0, 5.0], **T)
    zero = torch.zeros(1, 3, **T)
    assert float(physics.lattice_round_sq(zero, N, 1.0)) == pytest.approx((60 * 0.723601254558268) ** 2)
    assert float(physics.lattice_gauss_sq(torch.zeros(1, **T), N, 1.0)) == 3600.0
    assert float(physics.lattice_tophat_sq(torch.tensor([0.3968], **T), N, 1.0)) == 3600.0
    assert float(physics.lattice_tophat_sq(torch.tensor([0.3970], **T), N, 1.0)) == 0.0


def test_reciprocal_distance_uses_all_three_N_squared():
    recip = torch.eye(3, **T) * 0.01
    N = torch.tensor([2.0, 3.0, 4.0], **T)
    frac = torch.tensor([[0.5, 0.0, 0.0]], **T)
    assert float(physics.reciprocal_distance_sq(frac, recip, N)) == pytest.approx(0.25e-4 * 576)


def test_sinc3():
    assert float(physics.sinc3(torch.tensor(0.0, **T))) == 1.0
    x = torch.tensor(1.3, **T)
    assert float(physics.sinc3(x)) == pytest.approx(3 * (math.sin(1.3) / 1.3 - math.cos(1.3)) / 1.69)


def test_polarization_unpolarized_and_kahn():
    incident = torch.tensor([[1.0, 0.0, 0.0]], **T)
    axis = torch.tensor([0.0, 0.0, 1.0], **T)
    along_e = torch.tensor([[0.0, 0.0, 1.0]], **T)  # 2theta = 90 deg in the polarization plane
    along_b = torch.tensor([[0.0, 1.0, 0.0]], **T)  # 2theta = 90 deg perpendicular to it
    assert float(physics.polarization_factor(incident, along_e, axis, 0.0)) == pytest.approx(0.5)
    assert float(physics.polarization_factor(incident, along_e, axis, 1.0)) == pytest.approx(0.0, abs=F64_ULPS)
    assert float(physics.polarization_factor(incident, along_b, axis, 1.0)) == pytest.approx(1.0)
    forward = torch.tensor([[1.0, 0.0, 0.0]], **T)
    assert float(physics.polarization_factor(incident, forward, axis, 0.9)) == pytest.approx(1.0)


def test_solid_angle_and_point_pixel():
    R = torch.tensor(0.2, **T)
    p = torch.tensor(1e-4, **T)
    assert float(physics.solid_angle(R, p, torch.tensor(0.1, **T), False)) == pytest.approx(1e-8 / 0.04 * 0.5)
    assert float(physics.solid_angle(R, p, torch.tensor(0.1, **T), True)) == pytest.approx(25.0)


def test_capture_fractions_of_all_layers_sum_to_total_absorption():
    cos_in = torch.tensor(0.8, **T)
    step, mu = 100e-6, 1 / 300e-6
    total = sum(physics.capture_fraction(cos_in, t, step, mu) for t in range(3))
    assert float(total) == pytest.approx(1 - math.exp(-300e-6 * mu / 0.8))


def test_water_background_scales_with_fluence_and_volume():
    one = physics.water_background(1e-6, 1.0 / R_E_SQ_M2)
    assert one == pytest.approx(2.57 ** 2 * 1e-18 * 1e6 * 6.02214179e23 / 18)
    assert physics.water_background(2e-6, 2.0 / R_E_SQ_M2) == pytest.approx(16 * one)

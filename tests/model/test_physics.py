"""Per-pixel physics kernels at known points (spec §5.4, §5.5, §6.1); the lattice factor's are tested with it."""

from __future__ import annotations

import math

import pytest
import torch

from _tolerances import F64_ULPS
from detsim.model import physics
from detsim.model.units import R_E_SQ_M2

T = dict(dtype=torch.float64)


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

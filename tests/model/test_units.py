"""Unit conversions: a typed value becomes the double nanoBragg.c computes from it."""

from __future__ import annotations

import math

import pytest
import torch

from detsim.model import units


@pytest.mark.parametrize("convert,typed,nanobragg", [
    (units.mm_to_m, 11.108, 11.108 / 1000.0),  # 11.108 * 1e-3 is the next double up
    (units.mm_to_m, 14.539, 14.539 / 1000.0),
    (units.deg_to_rad, -6.0, -6.0 / (180.0 * 0.318309886183790671537767526745028724)),  # -6 * pi / 180 differs
    (units.deg_to_rad, 12.0, 12.0 / (180.0 * 0.318309886183790671537767526745028724)),
    (units.mrad_to_rad, 2.701, 2.701 / 1000.0),
    (units.wavelength_m, 1.0908, 1.0908 / 1.0e10),
    (units.sensor_um_to_m, 450.0, 450.0 * 1e-6),
    (units.water_um_to_m, 7.3, 7.3 / 1e6),
])
def test_each_conversion_is_nanobraggs_operation(convert, typed, nanobragg):
    assert convert(typed) == nanobragg
    assert float(convert(torch.tensor(typed, dtype=torch.float64))) == nanobragg  # tensors round alike


def test_the_operation_matters_one_rounding_apart():
    assert units.mm_to_m(11.108) != 11.108 * 1e-3
    assert units.deg_to_rad(-6.0) != -6.0 * units.DEG  # DEG = pi / 180, as detsim multiplied before
    assert units.RTD == 180.0 * units.M_1_PI and units.M_1_PI == 1.0 / math.pi  # C's constant, here the same

"""Configuration checks (detsim.model.config): derived quantities that double precision cannot hold are refused."""

from __future__ import annotations

import math

import pytest

from detsim.model.config import ConfigError, CrystalConfig, derived


@pytest.mark.parametrize("compute", [
    lambda: 1e200 ** 2,  # Python raises OverflowError where C gives inf
    lambda: int(math.inf),
    lambda: 1.0 / (1e-320 * 1e-6),  # a divisor that underflowed to 0
    lambda: 1e300 * 1e300,  # inf without an exception
])
def test_derived_refuses_what_overflows_naming_it(compute):
    with pytest.raises(ConfigError, match="^the thing overflows double precision$"):
        derived("the thing", compute)


def test_derived_returns_what_fits():
    assert derived("the thing", lambda: 2.0 ** 1000) == 2.0 ** 1000
    assert derived("the thing", lambda: (1, 2)) == (1, 2)


def test_a_mosaic_spread_beyond_float32_is_refused():
    # nanoBragg computes the mosaic angle in float32: 1e300 degrees became inf, then NaN rotations
    with pytest.raises(ConfigError, match="^-mosaic 1e\\+300 degrees overflows the float32 of the mosaic angle$"):
        CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=1, mosaic_spread_deg=1e300, mosaic_domains=2)
    CrystalConfig(cell=(100, 100, 100, 90, 90, 90), default_F=1, mosaic_spread_deg=1e40, mosaic_domains=2)

"""F_latt**2 by crystal shape and F_cell with interpolation where allowed (spec §5.6, §5.7)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from detsim import physics
from detsim.config import CrystalConfig, CrystalShape, SimulationConfig
from detsim.engine import prepare
from detsim.factors import cell, lattice_sq
from detsim.structure import HKLTable

VALUES = np.random.default_rng(1).uniform(10, 100, size=(9, 9, 9))
TABLE = HKLTable(h_min=-4, k_min=-4, l_min=-4, values=VALUES, count=VALUES.size, source="test")
CONFIG = SimulationConfig(crystal=CrystalConfig(cell=(40, 40, 40, 90, 90, 90), default_F=0, hkl=TABLE,
                                                Na=3, Nb=4, Nc=5, fudge=0.8))
HKL = torch.tensor([[[[0.1, -0.2, 0.3], [1.45, 2.05, -0.5]]]], dtype=torch.float64)  # (P=1, Sb=1, Rb=2, 3)
NEAREST = torch.ceil(HKL - 0.5)


@pytest.mark.parametrize("shape", list(CrystalShape))
def test_lattice_factor_is_the_shapes_own(shape):
    setup = prepare(replace(CONFIG, crystal=replace(CONFIG.crystal, shape=shape)))
    N, frac = setup.lattice.N, HKL - NEAREST
    rad_sq = physics.reciprocal_distance_sq(frac, setup.lattice.recip_A, N)
    expected = {
        CrystalShape.SQUARE: lambda: physics.lattice_square_sq(frac, N),
        CrystalShape.ROUND: lambda: physics.lattice_round_sq(frac, N, 0.8),
        CrystalShape.GAUSS: lambda: physics.lattice_gauss_sq(rad_sq, N, 0.8),
        CrystalShape.TOPHAT: lambda: physics.lattice_tophat_sq(rad_sq, N, 0.8),
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

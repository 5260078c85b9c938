"""Lattice construction, misset, sizes, orientations (spec §4)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from _tolerances import (
    CELL_DUALITY_DIAGONAL_ABS, F64_ROUNDING, F64_SAME_OPERATIONS, F64_ULPS, MOSAIC_SPREAD_SLACK,
    PRINTED_4_DECIMALS_ABS, PRINTED_6_DIGITS_REL,
)
from detsim.model.config import ConfigError, CrystalConfig, SamplingConfig
from detsim.model.crystal import (
    auto_oversample, build_lattice, effective_phi_angles, mosaic_matrices, orientations, phi_angles, phi_steps,
)

F64 = dict(device="cpu", dtype=torch.float64)
AXIS_M = 1e-8  # the scale of a cell axis (100 Angstrom), m: absolute tolerances on axes are relative to it
RECIP_PER_A = 0.01  # the scale of a reciprocal axis, 1/Angstrom


def lattice(**kw):
    return build_lattice(CrystalConfig(default_F=1, **kw), 1.0, **F64)


def test_cubic_cell_axes():
    lat = lattice(cell=(100, 100, 100, 90, 90, 90))
    eye = torch.eye(3, dtype=torch.float64)
    assert torch.allclose(lat.real_m, 1e-8 * eye, atol=F64_SAME_OPERATIONS * AXIS_M)
    assert torch.allclose(lat.recip_A, 0.01 * eye, atol=F64_SAME_OPERATIONS * RECIP_PER_A)


def test_triclinic_cell_lengths_angles_and_duality():
    cell = (70, 80, 90, 75, 85, 95)
    lat = lattice(cell=cell)
    real_A = lat.real_m * 1e10
    lengths = torch.linalg.vector_norm(real_A, dim=-1)
    assert lengths.tolist() == pytest.approx([70, 80, 90], rel=F64_ROUNDING)
    a, b, c = real_A
    cosines = [(b @ c) / (80 * 90), (a @ c) / (70 * 90), (a @ b) / (70 * 80)]
    # nanoBragg's -cell construction does not return the input angles for a triclinic cell; its own
    # printout for this cell (golden e01 stdout.txt) is "Unit Cell: 70 80 90 75.0391 85.0136 95.0081".
    angles = [math.degrees(math.acos(float(x))) for x in cosines]
    assert angles == pytest.approx([75.0391, 85.0136, 95.0081], abs=PRINTED_4_DECIMALS_ABS)
    # a_i . b*_j is diagonal; with forced -cell lengths the diagonal is a common 1.0002, not exactly 1.
    dual = real_A @ lat.recip_A.T
    assert torch.allclose(dual, dual[0, 0] * torch.eye(3, dtype=torch.float64), atol=F64_ROUNDING)
    assert float(dual[0, 0]) == pytest.approx(1.0, abs=CELL_DUALITY_DIAGONAL_ABS)
    ca, cb, cg = (math.cos(math.radians(x)) for x in cell[3:])
    volume = 70 * 80 * 90 * math.sqrt(1 - ca * ca - cb * cb - cg * cg + 2 * ca * cb * cg)
    # nanoBragg prints "volume = 481811 A^3"
    assert float(lat.volume_A3) == pytest.approx(481811, rel=PRINTED_6_DIGITS_REL)
    assert float(lat.volume_A3) == pytest.approx(volume, rel=F64_ROUNDING)


def test_matrix_gives_same_lattice_as_cell_for_the_same_orientation():
    from_cell = lattice(cell=(60, 70, 80, 90, 90, 90))
    lam = 1.3
    a_matrix = tuple((from_cell.recip_A.T * lam).reshape(-1).tolist())  # rows x, y, z; lambda folded in
    from_mat = build_lattice(CrystalConfig(a_matrix=a_matrix, default_F=1), lam, **F64)
    assert torch.allclose(from_mat.real_m, from_cell.real_m, rtol=F64_ROUNDING, atol=F64_ULPS * AXIS_M)


def test_misset_rotates_reciprocal_axes_x_then_y_then_z():
    lat = lattice(cell=(100, 100, 100, 90, 90, 90), misset_deg=(90, 90, 0))
    # a* along x stays under Rx, then Ry(90) takes x to -z.
    assert (lat.recip_A[0] / 0.01).tolist() == pytest.approx([0, 0, -1], abs=F64_ROUNDING)


def test_size_sets_cell_counts_and_small_counts_become_one():
    lat = lattice(cell=(100, 100, 100, 90, 90, 90), Na=0, Nb=3, xtal_size_mm=(0, 0, 0.001041))
    assert lat.N.tolist() == [1.0, 3.0, 105.0]  # ceil(1.041e-6 m / 1e-8 m) = ceil(104.1)


def test_auto_oversample_example_from_spec():
    lat = lattice(cell=(100, 100, 100, 90, 90, 90), Na=5, Nb=5, Nc=5)
    assert auto_oversample(lat, 1.0, 0.1, 1e-4) == 2


@pytest.mark.parametrize("cell", [(100, 100, 100, 60, 60, 150), (100, 100, 100, 90, 90, 200),
                                  (0, 100, 100, 90, 90, 90), (100, 100, 100, 120, 120, 120)])
def test_cells_that_describe_no_lattice_are_rejected(cell):
    with pytest.raises(ConfigError, match="-cell"):
        CrystalConfig(cell=cell, default_F=1)


def test_phi_angles_start_of_each_step():
    sampling = SamplingConfig(phi0_deg=20, osc_deg=2, phisteps=4)
    phis = phi_angles(sampling, phi_steps(sampling))
    assert np.degrees(phis).tolist() == pytest.approx([20, 20.5, 21, 21.5])


def test_stale_phi_reuses_previous_orientation_at_zero():
    phis = [0.0, 0.1, 0.2]
    assert effective_phi_angles(phis, stale_phi=True) == [0.2, 0.1, 0.2]
    assert effective_phi_angles(phis, stale_phi=False) == phis
    assert effective_phi_angles([0.0], stale_phi=True) == [0.0]
    assert effective_phi_angles([0.1, 0.0, 0.3], stale_phi=True) == [0.1, 0.1, 0.3]


def test_orientations_are_phi_outer_mosaic_inner():
    lat = lattice(cell=(50, 50, 50, 90, 90, 90))
    spindle = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    umats = mosaic_matrices(CrystalConfig(cell=(50,) * 3 + (90,) * 3, default_F=1, mosaic_spread_deg=1,
                                          mosaic_domains=3), **F64)
    out = orientations(lat, spindle, [0.0, math.pi / 2], umats)
    assert out.shape == (6, 3, 3)
    assert torch.allclose(out[0], lat.real_m)  # phi 0, domain 0 (identity)
    a_rot = out[3, 0] / 5e-9  # phi 90 deg about z takes a from x to y
    assert a_rot.tolist() == pytest.approx([0, 1, 0], abs=F64_ROUNDING)
    assert torch.allclose(out[4], (umats[1] @ out[3].T).T)


def test_mosaic_domains_are_rotations_within_the_spread():
    umats = mosaic_matrices(CrystalConfig(cell=(50,) * 3 + (90,) * 3, default_F=1, mosaic_spread_deg=2,
                                          mosaic_domains=20, mosaic_seed=5), **F64)
    eye = torch.eye(3, dtype=torch.float64)
    assert torch.equal(umats[0], eye)
    assert torch.allclose(umats @ umats.transpose(1, 2), eye.expand(20, 3, 3), atol=F64_SAME_OPERATIONS)
    angles = torch.acos(((umats.diagonal(dim1=1, dim2=2).sum(-1) - 1) / 2).clamp(-1, 1))
    assert float(angles.max()) <= math.radians(2) + MOSAIC_SPREAD_SLACK


@pytest.mark.parametrize("field", ["mosaic_seed", "misset_seed"])
def test_seeds_outside_the_c_int_range_are_refused(field):
    from detsim.model.config import ConfigError, CrystalConfig
    CrystalConfig(cell=(70, 70, 70, 90, 90, 90), **{field: 2**31 - 1})
    with pytest.raises(ConfigError, match=field.replace("_", ".")):
        CrystalConfig(cell=(70, 70, 70, 90, 90, 90), **{field: 2**31})

"""Detector geometry: convention axes, beam centres, pivots, rotation order (spec §3)."""

from __future__ import annotations

import math

import pytest
import torch

from _tolerances import BEAM_SPOT_PX_ABS, F64_ROUNDING, F64_SAME_OPERATIONS, F64_ULPS
from detsim.model.config import BeamConfig, Convention, CrystalConfig, DetectorConfig, Pivot
from detsim.model.geometry import CONVENTION_AXES, detector_geometry, lab_frame, pixel_positions
from detsim.model.rotation import rotate_axis, rotate_xyz

CRYSTAL = CrystalConfig(cell=(50, 50, 50, 90, 90, 90), default_F=1)


def geometry(**kw):
    det = DetectorConfig(**kw)
    frame = lab_frame(det, BeamConfig(), CRYSTAL, device="cpu", dtype=torch.float64)
    return detector_geometry(det, frame, device="cpu", dtype=torch.float64), frame


def beam_spot_pixel(geom) -> tuple[float, float]:
    """0-based (slow, fast) pixel-centre index where the direct beam lands."""
    p = float(geom.pixel_m)
    return float(geom.sbeam_m) / p - 0.5, float(geom.fbeam_m) / p - 0.5


@pytest.mark.parametrize("convention,offset", [
    (Convention.MOSFLM, 0.5), (Convention.DENZO, 0.0), (Convention.ADXV, 0.0),
    (Convention.XDS, -0.5), (Convention.DIALS, -0.5),
])
def test_default_beam_centre_per_convention(convention, offset):
    # spec §3.1: MOSFLM hits (N/2+1/2, N/2+1/2), ADXV (N/2, N/2), XDS/DIALS the geometric centre.
    geom, _ = geometry(convention=convention, fpixels=64, spixels=64)
    s, f = beam_spot_pixel(geom)
    if convention is Convention.DENZO:
        offset = 0.0  # DENZO is MOSFLM without the half-pixel shift
    assert s == pytest.approx(32 + offset, abs=BEAM_SPOT_PX_ABS)
    assert f == pytest.approx(32 + offset, abs=BEAM_SPOT_PX_ABS)


def test_mosflm_xbeam_is_along_slow_axis():
    geom, _ = geometry(fpixels=100, spixels=100, xbeam_mm=3.0, ybeam_mm=7.0)
    assert float(geom.sbeam_m) == pytest.approx(3.0e-3 + 0.05e-3)
    assert float(geom.fbeam_m) == pytest.approx(7.0e-3 + 0.05e-3)


def test_adxv_ybeam_is_measured_from_far_edge():
    geom, _ = geometry(convention=Convention.ADXV, fpixels=100, spixels=100, xbeam_mm=3.0, ybeam_mm=7.0)
    assert float(geom.fbeam_m) == pytest.approx(3.0e-3)
    assert float(geom.sbeam_m) == pytest.approx(10.0e-3 - 7.0e-3)


def test_xds_ignores_xbeam_and_uses_orgx():
    a, _ = geometry(convention=Convention.XDS, fpixels=100, spixels=100, xbeam_mm=1.0, ybeam_mm=9.0)
    b, _ = geometry(convention=Convention.XDS, fpixels=100, spixels=100)
    assert torch.equal(a.pix0_m, b.pix0_m)
    c, _ = geometry(convention=Convention.XDS, fpixels=100, spixels=100, orgx_px=20.5, orgy_px=40.5)
    assert float(c.fclose_m) == pytest.approx(20.0e-4)
    assert float(c.sclose_m) == pytest.approx(40.0e-4)


def test_convention_forces_pivot_but_custom_takes_it_from_config():
    mosflm, _ = geometry(pivot=Pivot.SAMPLE, twotheta_deg=20)
    assert mosflm.pivot is Pivot.BEAM
    xds, _ = geometry(convention=Convention.XDS, pivot=Pivot.BEAM)
    assert xds.pivot is Pivot.SAMPLE
    custom, _ = geometry(convention=Convention.CUSTOM, pivot=Pivot.SAMPLE)
    assert custom.pivot is Pivot.SAMPLE


def test_beam_pivot_twotheta_keeps_beam_spot_fixed():
    flat, frame = geometry(fpixels=100, spixels=100)
    tilted, _ = geometry(fpixels=100, spixels=100, twotheta_deg=20)
    # The point distance*beam lies on the tilted detector at the untilted (Fbeam, Sbeam) (spec §3.3 step 5).
    spot = tilted.pix0_m + flat.fbeam_m * tilted.fdet + flat.sbeam_m * tilted.sdet
    assert torch.allclose(spot, 0.1 * frame.beam, atol=F64_ULPS)
    assert float(tilted.close_distance_m) == pytest.approx(0.1 * math.cos(math.radians(20)), rel=F64_ROUNDING)
    # nanoBragg's reported distance is close_distance/ratio, with a ratio that ignores two-theta.
    assert float(tilted.distance_m) == pytest.approx(0.1 * math.cos(math.radians(20)), rel=F64_ROUNDING)


def test_sample_pivot_twotheta_swings_detector_rigidly():
    flat, _ = geometry(convention=Convention.XDS, fpixels=100, spixels=100)
    swung, _ = geometry(convention=Convention.XDS, fpixels=100, spixels=100, twotheta_deg=30)
    assert float(swung.close_distance_m) == pytest.approx(float(flat.close_distance_m), rel=F64_ROUNDING)
    assert float(torch.linalg.vector_norm(swung.pix0_m)) == pytest.approx(
        float(torch.linalg.vector_norm(flat.pix0_m)), rel=F64_ROUNDING)
    # XDS two-theta axis is +x: the detector normal turns from +z towards -y.
    assert swung.odet.tolist() == pytest.approx([0, -math.sin(math.radians(30)), math.cos(math.radians(30))])


def test_detector_axes_are_orthonormal_after_rotations():
    geom, _ = geometry(rotx_deg=4, roty_deg=-6, rotz_deg=12, twotheta_deg=15)
    basis = torch.stack([geom.fdet, geom.sdet, geom.odet])
    assert torch.allclose(basis @ basis.T, torch.eye(3, dtype=torch.float64), atol=F64_SAME_OPERATIONS)


def test_non_unit_odet_is_replaced_by_f_cross_s():
    geom, _ = geometry(convention=Convention.CUSTOM, fdet_vector=(0, 0, 1), sdet_vector=(0, -1, 0),
                       odet_vector=(2, 0, 0))
    assert geom.odet.tolist() == pytest.approx([1.0, 0.0, 0.0])


def test_rotation_order_is_x_then_y_then_z():
    v = torch.tensor([0.0, 1.0, 0.0], dtype=torch.float64)
    quarter = torch.tensor(math.pi / 2, dtype=torch.float64)
    zero = torch.tensor(0.0, dtype=torch.float64)
    # Rx takes y to z, then Ry takes z to x; the reverse order would give z.
    assert rotate_xyz(v, quarter, quarter, zero).tolist() == pytest.approx([1, 0, 0], abs=F64_ULPS)


def test_rotate_axis_is_right_handed():
    x = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    z = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    assert rotate_axis(x, z, torch.tensor(math.pi / 2, dtype=torch.float64)).tolist() == pytest.approx(
        [0, 1, 0], abs=F64_ULPS)


def test_pixel_positions_centre_and_subpixels():
    geom, frame = geometry(fpixels=10, spixels=10)
    layers = torch.zeros(1, dtype=torch.float64)
    s, f = torch.tensor([3]), torch.tensor([5])
    centre = pixel_positions(geom, s, f, 1, layers, False, frame.beam)[0, 0, 0]
    expected = geom.pix0_m + 5.5 * geom.pixel_m * geom.fdet + 3.5 * geom.pixel_m * geom.sdet
    assert torch.allclose(centre, expected, atol=F64_ULPS)
    sub = pixel_positions(geom, s, f, 2, layers, False, frame.beam)[0, 0]  # (4, 3), slow outer
    assert torch.allclose(sub.mean(0), centre, atol=F64_ULPS)
    step = (sub[1] - sub[0]) / geom.pixel_m
    assert torch.allclose(step, 0.5 * geom.fdet, atol=F64_ROUNDING)  # second subpixel moves along fast


def test_curved_detector_keeps_every_pixel_at_distance():
    geom, frame = geometry(fpixels=20, spixels=20, curved=True)
    s = torch.arange(0, 20, 3)
    pos = pixel_positions(geom, s, s, 1, torch.zeros(1, dtype=torch.float64), True, frame.beam)
    radius = torch.linalg.vector_norm(pos, dim=-1)
    assert torch.allclose(radius, torch.full_like(radius, float(geom.distance_m)), rtol=F64_ROUNDING)


def test_convention_table_axes_are_right_handed_where_documented():
    for conv in (Convention.MOSFLM, Convention.XDS, Convention.DIALS):
        axes = CONVENTION_AXES[conv]
        f, s, o = (torch.tensor(v, dtype=torch.float64) for v in (axes.fdet, axes.sdet, axes.odet))
        assert torch.allclose(torch.linalg.cross(f, s, dim=-1), o)


# A random command line whose pixel (38, 47) moved by one float32 unit while detsim converted -Xbeam as
# 11.108 * 1e-3 and summed the position with fused multiply-adds. The doubles nanoBragg.c printed (%.17g)
# at its own statements (pix0 at nanoBragg.c L1740, the pixel position at L2700), OMP_NUM_THREADS=1.
TRACED_ARGS = ("-odet_vector 0 0 1 -spindle_axis 0 0 1 -fdet_vector 1 0 0 -polar_vector 1 0 0 -sdet_vector 0 1 0 "
               "-twotheta_axis 0 1 0 -beam_vector 0 0 1 -twotheta 26.76 -divergence 2.701 -N 8 -pixel 0.25 "
               "-lambda 1.0908 -Xbeam 11.108 -oversample 1 -Ybeam 14.539 -distance 112.7 -cell 96.07 96.07 96.07 "
               "90 90 90 -divsteps 4 -detpixels 88 -default_F 229.3 -polar 0.622 -pivot beam")
TRACED_PIX0 = [-0.0099183373412084341, -0.014539, 0.11770142463564037]
TRACED_POSITION_38_47 = [0.00068485458594768484, -0.004914, 0.11235465496079076]


def test_pix0_and_a_pixel_position_are_nanobraggs_doubles():
    from detsim.commandline.to_config import config_from_argv
    from detsim.rendering.engine import prepare
    setup = prepare(config_from_argv(TRACED_ARGS.split()), dtype=torch.float64)
    geom = setup.geometry
    assert geom.pix0_m.tolist() == TRACED_PIX0
    position = pixel_positions(geom, torch.tensor([38]), torch.tensor([47]), 1, torch.zeros(1, dtype=torch.float64),
                               False, setup.frame.beam)[0, 0, 0]
    assert position.tolist() == TRACED_POSITION_38_47

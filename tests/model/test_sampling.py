"""Step-count rules (spec §5.3) and source grids (spec §5.2)."""

from __future__ import annotations

import math

import pytest
import torch

from _tolerances import F64_ACOS_SMALL_ANGLE
from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SourcePoint
from detsim.model.geometry import lab_frame
from detsim.model.sampling import (
    Steps, resolve_dispersion, resolve_divergence, resolve_mosaic_domains, resolve_phi, resolve_thickness,
)
from detsim.model.sources import SourceFileError, build_sources, divergence_offsets, read_source_file, wavelengths_m

D = math.radians(1)


@pytest.mark.parametrize("osc,step,count,expected", [
    (None, None, None, Steps(0, 0, 1)),
    (None, 0.1 * D, None, Steps(0.1 * D, 0.1 * D, 2)),
    (2 * D, None, None, Steps(2 * D, D, 2)),
    (3 * D, 0.5 * D, None, Steps(3 * D, 0.5 * D, 6)),
    (None, None, 4, Steps(D, D / 4, 4)),
    (None, None, 0, Steps(D, D, 1)),
    (None, 0.2 * D, 7, Steps(0.2 * D, 0.2 * D, 2)),
    (2 * D, None, 10, Steps(2 * D, 0.2 * D, 10)),
    (2 * D, 0.5 * D, 3, Steps(2 * D, 0.5 * D, 3)),
])
def test_phi_step_rules(osc, step, count, expected):
    got = resolve_phi(osc, step, count)
    assert got.count == expected.count
    assert got.range == pytest.approx(expected.range)
    assert got.step == pytest.approx(expected.step)


def test_phi_ceil_adds_a_step_when_division_is_inexact():
    # spec §5.3 [QUIRK] (golden j05): 1.1/0.1 is 11.000000000000002 in floating point, so 12 steps.
    assert resolve_phi(math.radians(1.1), math.radians(0.1), None).count == 12


@pytest.mark.parametrize("rng,step,count,expected", [
    (None, None, None, Steps(0, 0, 1)),
    (2e-3, None, None, Steps(2e-3, 2e-3, 2)),
    (2e-3, 0.5e-3, None, Steps(2e-3, 0.5e-3, 4)),
    (None, None, 5, Steps(1.0, 0.2, 5)),  # a count alone implies a 1 rad range
    (2e-3, None, 5, Steps(2e-3, 0.5e-3, 5)),
    (2e-3, None, 1, Steps(2e-3, 2e-3, 2)),
    (0.0, None, 5, Steps(0, 0, 1)),
])
def test_divergence_step_rules(rng, step, count, expected):
    got = resolve_divergence(rng, step, count)
    assert (got.count, got.range, got.step) == (expected.count, pytest.approx(expected.range),
                                                 pytest.approx(expected.step))


def test_thickness_layers():
    assert resolve_thickness(0.0, 3) == Steps(0, 0, 1)
    assert resolve_thickness(200e-6, None) == Steps(200e-6, 100e-6, 2)  # R only: step T/2
    got = resolve_thickness(450e-6, 3)  # R and n: step T/(n-1), layers at 0..T
    assert (got.count, got.step) == (3, pytest.approx(225e-6))


def test_dispersion_and_mosaic_defaults():
    assert resolve_dispersion(0.0, 5).count == 1
    assert resolve_dispersion(0.03, None) == Steps(0.03, 0.03, 2)
    assert resolve_dispersion(0.03, 5).step == pytest.approx(0.0075)
    assert resolve_mosaic_domains(0.0, 7) == 1
    assert resolve_mosaic_domains(0.01, None) == 10
    assert resolve_mosaic_domains(0.01, 3) == 3


def test_round_divergence_keeps_13_of_25():
    beam = BeamConfig(hdivrange_mrad=2, vdivrange_mrad=2, hdivsteps=5, vdivsteps=5)
    assert len(divergence_offsets(beam)) == 13
    square = BeamConfig(hdivrange_mrad=2, vdivrange_mrad=2, hdivsteps=5, vdivsteps=5, round_div=False)
    assert len(divergence_offsets(square)) == 25


def test_zero_range_disables_the_round_cut():
    beam = BeamConfig(hdivrange_mrad=2, hdivsteps=5)
    assert len(divergence_offsets(beam)) == 5


def test_wavelength_grid_is_centred_on_lambda0():
    lams = wavelengths_m(BeamConfig(lambda_A=1.0, dispersion_pct=3, dispsteps=5))
    assert lams == pytest.approx([1e-10 * (1 + x) for x in (-0.015, -0.0075, 0, 0.0075, 0.015)])


def _frame():
    return lab_frame(DetectorConfig(), BeamConfig(), CrystalConfig(cell=(50,) * 3 + (90,) * 3, default_F=1),
                     device="cpu", dtype=torch.float64)


def test_default_source_travels_along_the_beam():
    src = build_sources(BeamConfig(), _frame())
    assert src.incident.tolist() == [pytest.approx([1.0, 0.0, 0.0])]
    assert src.lambda_m.tolist() == [pytest.approx(1e-10)]


def test_divergence_tilts_sources_by_the_grid_angles():
    src = build_sources(BeamConfig(hdivrange_mrad=2, hdivsteps=2), _frame())
    angles = torch.acos(src.incident[:, 0])
    assert angles.tolist() == pytest.approx([1e-3, 1e-3], rel=F64_ACOS_SMALL_ANGLE)


def test_source_file_defaults_units_and_ignored_intensity(tmp_path):
    path = tmp_path / "src.txt"
    path.write_text("-10 0 0 5 1.2e-10\n-10,0.1;0\n\n-10 0 0\n")
    points = read_source_file(path, (1.0, 0.0, 0.0), lambda_A=1.0)
    assert [p.lambda_A for p in points] == pytest.approx([1.2, 1.0, 1.0])
    assert points[1].position_m == (-10.0, 0.1, 0.0)


def test_source_file_last_line_without_newline_reads_missing_columns_as_zero(tmp_path):
    path = tmp_path / "src.txt"
    path.write_text("-10 0 0 1 1e-10\n-10 0 1")
    with pytest.raises(SourceFileError, match="line 2: wavelength must be > 0"):
        read_source_file(path, (1.0, 0.0, 0.0), lambda_A=1.0)


@pytest.mark.parametrize("text,message", [
    ("", "no sources"),
    ("\n\n", "no sources"),
    ("-10 0 0 1 1e-10 7\n", "line 1: expected at most 5 columns"),
    ("-10 x 0\n", "line 1: non-numeric"),
    ("0 0 0\n", "line 1: source position is the zero vector"),
])
def test_malformed_source_files(tmp_path, text, message):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(SourceFileError, match=message) as err:
        read_source_file(path, (1.0, 0.0, 0.0), lambda_A=1.0)
    assert "bad.txt" in str(err.value)


def test_empty_source_list_is_rejected_by_config():
    with pytest.raises(ValueError, match="empty"):
        BeamConfig(sources=())
    assert BeamConfig(sources=(SourcePoint((-1.0, 0.0, 0.0), 1.0),)).sources

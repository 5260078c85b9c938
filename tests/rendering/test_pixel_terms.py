"""Per-pixel terms of a chunk: directions, the factors nanoBragg evaluates once per pixel, the -dmin cut."""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from _tolerances import ALLCLOSE
from detsim.model import physics
from detsim.model.config import BeamConfig, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig
from detsim.model.geometry import pixel_positions
from detsim.rendering.engine import prepare
from detsim.rendering.pixel_terms import first_evaluation, pixel_terms

# 2 sensor layers x 2x2 subpixels x 2 sources, polarization, and a -dmin that cuts part of the detector.
CONFIG = SimulationConfig(
    crystal=CrystalConfig(cell=(30, 32, 34, 90, 90, 90), default_F=50, dmin_A=9.0),
    beam=BeamConfig(hdivrange_mrad=4, hdivsteps=2, polarization_kahn=0.9),
    detector=DetectorConfig(fpixels=4, spixels=3, pixel_mm=4.0, distance_mm=40, thick_um=200, thicksteps=2),
    sampling=SamplingConfig(oversample=2),
)


def _terms(config, full, device="cpu", dtype=torch.float64):
    setup = prepare(config, device=device, dtype=dtype)
    layers = torch.arange(setup.thickness.count, device=setup.device, dtype=dtype) * setup.thickness.step
    position = pixel_positions(setup.geometry, setup.pixels_s, setup.pixels_f, setup.oversample, layers,
                               config.detector.curved, setup.frame.beam)
    return setup, pixel_terms(setup, position, full=full)


def test_first_evaluation_takes_the_first_surviving_entry_or_zero():
    values = torch.arange(1.0, 1 + 2 * 2 * 1 * 3).reshape(2, 2, 1, 3)  # (P, T, O, S)
    survives = torch.zeros(2, 2, 1, 3, dtype=torch.bool)
    survives[0, 1, 0, 1] = survives[0, 1, 0, 2] = True
    assert first_evaluation(values, survives).tolist() == [5.0, 0.0]


def test_full_terms_agree_with_the_per_pixel_values(device, dtype):
    setup, lean = _terms(CONFIG, full=False, device=device, dtype=dtype)
    _, full = _terms(CONFIG, full=True, device=device, dtype=dtype)
    P, T, O, S = 12, 2, 4, 2
    assert full.omega.shape == full.capture.shape == (P, T, O) and full.scattering.shape == (P, T, O, S, 3)
    assert lean.omega is None and lean.capture is None and lean.survives is not None  # the cut needs them
    assert torch.equal(full.survives, lean.survives) and bool(lean.survives.any()) and not bool(lean.survives.all())
    rtol, atol = ALLCLOSE[dtype]
    torch.testing.assert_close(full.omega[:, 0, 0], lean.omega_first, rtol=rtol, atol=0)
    torch.testing.assert_close(full.capture[:, -1, 0], lean.capture_last, rtol=rtol, atol=atol)
    torch.testing.assert_close(first_evaluation(full.polar, full.survives), lean.polar_first, rtol=rtol, atol=0)
    torch.testing.assert_close(physics.norm(full.diffracted), torch.ones(P, T, O, dtype=dtype, device=device),
                               rtol=rtol, atol=0)


def test_a_cut_that_spares_the_chunk_is_dropped_unless_full():
    spared = replace(CONFIG, crystal=replace(CONFIG.crystal, dmin_A=0.5))
    _, lean = _terms(spared, full=False)
    _, full = _terms(spared, full=True)
    assert lean.survives is None and lean.polar is None
    assert full.survives is not None and bool(full.survives.all())


def test_without_a_sensor_the_capture_fraction_is_one_except_under_oversample_thick():
    bare = replace(CONFIG, detector=replace(CONFIG.detector, thick_um=0.0, thicksteps=None))
    _, terms = _terms(bare, full=True)
    assert torch.equal(terms.capture_last, torch.ones_like(terms.capture_last))
    thick = replace(bare, sampling=replace(bare.sampling, oversample_thick=True))
    _, terms = _terms(thick, full=True)
    assert float(terms.capture.abs().max()) == 0.0  # nanoBragg's exp(0) - exp(0)


def test_rows_of_a_chunk_are_the_terms_of_those_pixels_alone():
    uncut = replace(CONFIG, crystal=replace(CONFIG.crystal, dmin_A=0))
    setup, terms = _terms(uncut, full=False)
    layers = torch.arange(setup.thickness.count, dtype=torch.float64) * setup.thickness.step
    alone = pixel_terms(setup, pixel_positions(setup.geometry, setup.pixels_s[5:9], setup.pixels_f[5:9],
                                               setup.oversample, layers, False, setup.frame.beam), full=False)
    rows = terms.rows(slice(5, 9))
    for name, value in vars(alone).items():
        if isinstance(value, torch.Tensor):
            assert torch.equal(getattr(rows, name), value), name
        else:
            assert getattr(rows, name) == value, name


def test_a_chunk_that_dmin_cuts_is_not_split():
    _, terms = _terms(CONFIG, full=False)
    assert terms.survives is not None
    with pytest.raises(ValueError, match="-dmin cuts is rendered whole"):
        terms.rows(slice(0, 2))

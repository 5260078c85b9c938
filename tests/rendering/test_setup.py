"""A prepared simulation: rendered pixels, restriction to a few, step count, autograd detection, dtypes."""

from __future__ import annotations

import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from detsim.model.config import (
    BeamConfig, ConfigError, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig,
)
from detsim.model.structure_factors import read_hkl
from detsim.rendering.setup import needs_grad, prepare, restrict_pixels

CONFIG = SimulationConfig(
    crystal=CrystalConfig(cell=(30, 32, 34, 90, 90, 90), default_F=50, mosaic_spread_deg=1.0, mosaic_domains=3),
    beam=BeamConfig(hdivrange_mrad=4, hdivsteps=2),
    detector=DetectorConfig(fpixels=5, spixels=4, pixel_mm=4.0, distance_mm=40),
    sampling=SamplingConfig(oversample=2, osc_deg=2, phisteps=2),
)


def test_rendered_pixels_are_the_roi_minus_the_mask_in_raster_order():
    mask = np.ones((4, 5), dtype=np.uint16)
    mask[1, 2] = 0
    config = replace(CONFIG, detector=replace(CONFIG.detector, roi=(1, 3, 1, 2), mask=mask))  # fast 1..3, slow 1..2
    setup = prepare(config)
    pixels = list(zip(setup.pixels_s.tolist(), setup.pixels_f.tolist()))
    assert pixels == [(1, 1), (1, 3), (2, 1), (2, 2), (2, 3)]
    whole = prepare(CONFIG)
    assert whole.pixels_s.numel() == 20 and (int(whole.pixels_s[-1]), int(whole.pixels_f[-1])) == (3, 4)


def test_restrict_pixels_keeps_everything_else():
    setup = prepare(CONFIG)
    few = restrict_pixels(setup, [(3, 0), (0, 4)])
    assert few.pixels_s.tolist() == [3, 0] and few.pixels_f.tolist() == [0, 4]
    assert few.orientations is setup.orientations and few.config is setup.config


def test_steps_count_sources_orientations_and_subpixels():
    setup = prepare(CONFIG)
    assert setup.orientations.shape == (2 * 3, 3, 3)  # phi steps x mosaic domains
    assert setup.steps == 2 * 6 * 2 ** 2


def test_the_setup_is_cast_to_the_render_dtype(device, dtype):
    setup = prepare(CONFIG, device=device, dtype=dtype)
    for tensor in (setup.orientations, setup.sources.incident, setup.geometry.pix0_m, setup.lattice.recip_A,
                   setup.frame.beam):
        assert tensor.dtype == dtype and tensor.device.type == torch.device(device).type
    assert setup.pixels_s.dtype == torch.int32


def test_needs_grad_only_where_autograd_must_see_the_render():
    setup = prepare(CONFIG)
    assert not needs_grad(setup)
    tracked = replace(setup, orientations=setup.orientations.clone().requires_grad_(True))
    assert needs_grad(tracked)
    with torch.no_grad():
        assert not needs_grad(tracked)


@pytest.mark.parametrize("beam,counts", [
    (BeamConfig(dispersion_pct=10, dispsteps=2_000_000_000), "1 x 1 divergence steps x 2000000000 wavelengths"),
    (BeamConfig(hdivrange_mrad=1, vdivrange_mrad=1, hdivsteps=100_000, vdivsteps=100_000),
     "100000 x 100000 divergence steps x 1 wavelengths"),
    (BeamConfig(hdivrange_mrad=1, hdivstep_mrad=1e-9), "1000000000 x 1 divergence steps"),
])
def test_a_source_grid_larger_than_memory_is_refused_before_it_is_built(beam, counts, monkeypatch):
    # -dispsteps 2000000000 grew to 23 GB and was killed; -divsteps 100000 raised MemoryError
    monkeypatch.setattr("detsim.host.memory.available_bytes", lambda device=None: 256 << 20)
    built = []
    monkeypatch.setattr("detsim.rendering.setup.build_sources", lambda *args: built.append(1))
    with pytest.raises(ConfigError, match=f"^a source grid of {counts} .*-dispsteps, or a range over a step.* needs"):
        prepare(replace(CONFIG, beam=beam))
    assert built == []


@pytest.mark.parametrize("change,message", [
    (dict(crystal=replace(CONFIG.crystal, water_um=1e300)), "the water background of -water 1e+300 um"),
    (dict(crystal=replace(CONFIG.crystal, default_F=1e200)), "-default_F 1e+200 squared"),
    (dict(beam=replace(CONFIG.beam, flux_per_s=1e10, beamsize_mm=1e-300)),
     "the fluence -flux x -exposure / -beamsize squared"),
    (dict(sampling=replace(CONFIG.sampling, phisteps=None, phistep_deg=1e-320)),
     "the number of phi steps (-osc over -phistep)"),
    (dict(beam=replace(CONFIG.beam, hdivsteps=None, hdivstep_mrad=1e-320)), "the number of divergence steps"),
    (dict(detector=replace(CONFIG.detector, thick_um=1e-320)), "the attenuation 1 / -detector_thick"),
])
def test_a_derived_quantity_that_overflows_is_refused_naming_its_flag(change, message):
    # -water 1e300 and -default_F 1e200 ended in OverflowError: Numerical result out of range
    with pytest.raises(ConfigError, match=f"^{re.escape(message)}.* overflows double precision$"):
        prepare(replace(CONFIG, **change))


def test_an_hkl_f_whose_square_overflows_is_refused(tmp_path):
    path = tmp_path / "big.hkl"
    path.write_text("0 0 0 1\n1 1 1 -1e200\n")
    crystal = replace(CONFIG.crystal, hkl=read_hkl(path))
    with pytest.raises(ConfigError, match=r"^the largest F of .*big.hkl \(-hkl\), 1e\+200, squared overflows"):
        prepare(replace(CONFIG, crystal=crystal))

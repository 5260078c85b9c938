"""A prepared simulation: rendered pixels, restriction to a few, step count, autograd detection, dtypes."""

from __future__ import annotations

import dataclasses
import gc
import re
import weakref
from dataclasses import replace

import numpy as np
import pytest
import torch

from detsim.model.config import (
    BeamConfig, ConfigError, CrystalConfig, DetectorConfig, SamplingConfig, SimulationConfig,
)
from _tolerances import F64_ULPS
from detsim.model.structure_factors import HKLTable, StructureFactors, read_hkl
from detsim.rendering.engine import render
from detsim.rendering.setup import SETUPS, _prepare_on, needs_grad, prepare, restrict_pixels
from detsim.rendering.setup_transfer import tensors_of
from detsim.track.measure.launches import counting

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


# -- computed on the host, moved to the device in one copy, reused ------------------------------------------

def _table() -> HKLTable:
    values = np.arange(5 * 4 * 3, dtype=np.float64).reshape(5, 4, 3) + 10.0
    return HKLTable(h_min=-2, k_min=-2, l_min=-1, values=values, count=values.size, source="test")


def _every_field(mask: bool = True, **crystal) -> SimulationConfig:
    """CONFIG with an HKL table, a mask (unless not ``mask``), -dmin and a first sweep of its own: every
    tensor a setup can hold."""
    keep = np.ones((4, 5), dtype=np.uint16)
    keep[2, 3] = 0
    return replace(CONFIG, crystal=replace(CONFIG.crystal, hkl=_table(), dmin_A=0.5, **crystal),
                   detector=replace(CONFIG.detector, mask=keep if mask else None))


def _assert_same_setup(a, b, rel: float = 0.0) -> None:
    """Every field of two setups equal; tensors on the same device type, float ones within ``rel``."""
    for name, x, y in _fields(a, b):
        if isinstance(x, torch.Tensor):
            assert (x.device.type, x.dtype, x.shape) == (y.device.type, y.dtype, y.shape), name
            if rel and x.is_floating_point():
                torch.testing.assert_close(x.cpu(), y.cpu(), rtol=rel, atol=0, msg=name)
            else:
                assert torch.equal(x.cpu(), y.cpu()), name
        else:
            assert x == y, name


def _fields(a, b, prefix: str = ""):
    if isinstance(a, StructureFactors):
        pairs = [(k, v, vars(b)[k]) for k, v in vars(a).items()]
    elif dataclasses.is_dataclass(a):
        pairs = [(f.name, getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a)
                 if f.name != "config" and f.compare]  # not what is derived from the cache entry
    else:
        yield prefix, a, b
        return
    for name, x, y in pairs:
        if isinstance(x, StructureFactors) or (dataclasses.is_dataclass(x) and not isinstance(x, torch.Tensor)):
            yield from _fields(x, y, f"{prefix}{name}.")
        else:
            yield f"{prefix}{name}", x, y


@pytest.mark.parametrize("mask", [True, False], ids=["masked", "raster"])
def test_a_device_setup_is_the_one_computed_op_by_op_on_the_device(device, dtype, mask):
    config = _every_field(mask)
    moved = prepare(config, device=device, dtype=dtype, reuse=False)
    there = _prepare_on(config, torch.device(device), dtype)  # every op on the device, as before
    assert moved.first_sweep is not None and moved.structure.values is not None and moved.raster is not mask
    assert moved.device == torch.device(device) and moved.structure.device == torch.device(device)
    # the same ops on the CPU give the same bits; a GPU's own sines and square roots may differ by an ulp
    _assert_same_setup(moved, there, rel=0.0 if torch.device(device).type == "cpu" else 4 * F64_ULPS)


@pytest.mark.parametrize("mask", [True, False], ids=["masked", "raster"])
def test_a_setup_moved_to_a_device_is_the_cpu_setup_bit_for_bit(mask):
    # "meta" stands for an accelerator here: a tensor on it has a device, a dtype and a shape, no values
    config = _every_field(mask)
    host = prepare(config, reuse=False)
    moved = prepare(config, device="meta", reuse=False)
    assert moved.device == torch.device("meta")
    for a, b in zip(tensors_of(host), tensors_of(moved), strict=True):
        assert b.device.type == "meta" and (a.dtype, a.shape) == (b.dtype, b.shape)
    first, there = host.first_sweep, moved.first_sweep
    assert (there.pixels, there.positions) == (first.pixels, first.positions)


@pytest.mark.parametrize("mask", [True, False], ids=["masked", "raster"])
def test_preparing_for_a_device_asks_it_for_one_copy_a_few_kernels_and_no_sync(mask):
    # Counts the ops on tensors of the target device ("meta" standing for a GPU). Before the host route,
    # each of the setup's ~700 small ops ran there, with 18 syncs (which on "meta" even fail); now the
    # device gets the packed setup in one copy, and a raster pixel list is built there in four kernels.
    config = _every_field(mask)
    with counting("meta") as counts:
        prepare(config, device="meta", dtype=torch.float32, reuse=False)
    assert (counts.copies, counts.syncs) == (1, 0)
    assert counts.kernels == (0 if mask else 4), counts.by_op
    with counting("cpu") as on_the_cpu:  # the counter sees per-op work where it happens: all on the host
        prepare(config, dtype=torch.float32, reuse=False)
    assert on_the_cpu.kernels > 300 and on_the_cpu.syncs > 10


def test_a_configuration_of_the_same_content_is_prepared_once():
    SETUPS.clear()
    first = prepare(_every_field())
    again = _every_field()  # another object, arrays and all, with the same content
    with counting() as counts:
        reused = prepare(again)
    assert counts.kernels == 0 and counts.syncs == 0  # nothing computed, nothing read back
    assert reused.config is again
    _assert_same_setup(first, reused)
    with counting() as counts:
        other = prepare(_every_field(cell=(30, 32, 34.000000000000007, 90, 90, 90)))  # one ulp of c
    assert counts.kernels > 300
    assert not torch.equal(other.orientations, first.orientations)


@pytest.mark.parametrize("mode", ["eager", "compiled"])
def test_rendering_a_reused_setup_leaves_the_kept_one_as_computed(mode):
    SETUPS.clear()
    config = _every_field(mask=False)
    first, _ = render(prepare(config), mode=mode)
    again, _ = render(prepare(config), mode=mode)  # the kept setup, rendered a second time
    assert torch.equal(first, again)
    _assert_same_setup(prepare(config), prepare(config, reuse=False))


def test_a_reused_setup_is_not_changed_by_what_a_caller_does_to_its_tensors():
    SETUPS.clear()
    first = prepare(_every_field())
    first.structure.values.requires_grad_(True)  # as a caller differentiating with respect to F does
    again = prepare(_every_field())
    assert not again.structure.values.requires_grad and not needs_grad(again)
    kept = weakref.ref(first)
    del first
    gc.collect()
    assert kept() is None  # the caller's setup is its own: what is cached per setup object goes with it


def test_a_setup_keeps_the_gradient_of_a_configuration_tensor_on_its_device(device):
    a = torch.tensor(30.0, dtype=torch.float64, requires_grad=True)
    config = replace(CONFIG, crystal=replace(CONFIG.crystal, cell=(a, 32, 34, 90, 90, 90)))
    setup = prepare(config, device=device)
    assert setup.orientations.device.type == torch.device(device).type
    (setup.orientations[:, 0] ** 2).sum().backward()  # R |a|^2
    assert float(a.grad) == pytest.approx(2 * setup.orientations.shape[0] * 30e-20, rel=1e-9)
    moved = prepare(config, device="meta")  # one copy each where a tensor carries a graph: autograd sees it
    assert moved.orientations.requires_grad and moved.orientations.grad_fn is not None

"""Engine: accumulation rules against a scalar reference, chunking, determinism, ROI, gradients."""

from __future__ import annotations

import hashlib
from dataclasses import replace

import numpy as np
import pytest
import torch

from _tolerances import (
    ALLCLOSE, F64_ROUNDING, F64_SUMMATION, FLOAT32_JOB_SIZE_REL, FLOAT32_VS_FLOAT64_MAX_REL, GRADCHECK,
    VISIBLE_CHANGE_REL,
)
from detsim.host import memory, processes
from detsim.model import physics
from detsim.model.config import (
    BeamConfig, CrystalConfig, CrystalShape, DetectorConfig, SamplingConfig, SimulationConfig,
)
from detsim.model.geometry import pixel_positions
from detsim.model.units import ANGSTROM, R_E_SQ_M2
from detsim.rendering import lattice_factor
from detsim.rendering.engine import prepare, render, simulate
from helpers import TINY  # a tiny detector that still exercises every sampling axis: 2 layers, 2x2 subpixels,
# 2 sources, 2 phi steps x 2 mosaic domains, polarization, water (and the dmin some tests add cut part of it)


def reference_image(setup) -> np.ndarray:
    """nanoBragg's pixel loop written out with scalars, in its loop order (spec §5.1-§5.8)."""
    cfg, geom = setup.config, setup.geometry
    flags, det, crystal = cfg.sampling, cfg.detector, cfg.crystal
    O, T = setup.oversample, setup.thickness.count
    layers = torch.arange(T, dtype=torch.float64) * setup.thickness.step
    image = np.zeros(det.shape)
    for s, f in zip(setup.pixels_s.tolist(), setup.pixels_f.tolist()):
        pos_all = pixel_positions(geom, torch.tensor([s]), torch.tensor([f]), O, layers, det.curved,
                                  setup.frame.beam)[0]
        I = setup.water_bg
        polar = 1.0 if cfg.beam.nopolar else 0.0
        omega = 0.0
        cap = 1.0
        for t in range(T):
            cap = 0.0 if setup.thickness.range > 0 else 1.0
            for o in range(O * O):
                pos = pos_all[t, o]
                airpath = torch.linalg.vector_norm(pos)
                d = pos / airpath
                if omega == 0.0 or flags.oversample_omega:
                    omega = float(physics.solid_angle(airpath, geom.pixel_m, geom.close_distance_m, det.point_pixel))
                if cap == 0.0 or flags.oversample_thick:
                    cap = float(physics.capture_fraction(d @ geom.odet, t, setup.thickness.step, setup.mu_per_m))
                for src in range(setup.sources.lambda_m.shape[0]):
                    inc = setup.sources.incident[src]
                    scat = (d - inc) / setup.sources.lambda_m[src]
                    stol = 0.5 * float(torch.linalg.vector_norm(scat))
                    dmin = crystal.dmin_A * ANGSTROM
                    if dmin > 0 and stol > 0 and dmin > 0.5 / stol:
                        continue
                    if polar == 0.0 or flags.oversample_polar:
                        polar = float(physics.polarization_factor(inc[None], d[None], setup.frame.polar,
                                                                  cfg.beam.polarization_kahn)[0])
                    for orient in setup.orientations:
                        hkl = orient @ scat
                        frac = hkl - torch.ceil(hkl - 0.5)
                        latt = float(lattice_factor.lattice_square_sq(frac[None], setup.lattice.N)[0])
                        if latt == 0.0 and crystal.water_um == 0:
                            continue
                        I += crystal.default_F ** 2 * latt
                        if flags.oversample_thick:
                            I *= cap
                        if flags.oversample_polar:
                            I *= polar
                        if flags.oversample_omega:
                            I *= omega
        value = R_E_SQ_M2 * setup.fluence_per_m2 * I / setup.steps
        value *= 1.0 if flags.oversample_thick else cap
        value *= 1.0 if flags.oversample_polar else polar
        value *= 1.0 if flags.oversample_omega else omega
        image[s, f] = value
    return image


@pytest.mark.parametrize("flags", [
    {}, {"oversample_thick": True}, {"oversample_polar": True}, {"oversample_omega": True},
    {"oversample_thick": True, "oversample_polar": True, "oversample_omega": True},
], ids=["plain", "thick", "polar", "omega", "all"])
@pytest.mark.parametrize("dmin_A", [0.0, 9.0], ids=["nodmin", "dmin"])
def test_engine_matches_scalar_reference(flags, dmin_A):
    cfg = replace(TINY, sampling=replace(TINY.sampling, **flags), crystal=replace(TINY.crystal, dmin_A=dmin_A))
    _check_against_reference(cfg, dmin_A)


@pytest.mark.parametrize("cfg", [
    # nanoBragg still computes (and applies) polarization per source with -nopolar -oversample_polar
    replace(TINY, beam=replace(TINY.beam, nopolar=True), sampling=replace(TINY.sampling, oversample_polar=True)),
    # -oversample_thick without a sensor: capture = exp(0) - exp(0) = 0, so the image is all zeros
    replace(TINY, detector=replace(TINY.detector, thick_um=0.0, thicksteps=None),
            sampling=replace(TINY.sampling, oversample_thick=True)),
], ids=["nopolar+oversample_polar", "oversample_thick-without-sensor"])
def test_flag_combinations_match_scalar_reference(cfg):
    _check_against_reference(cfg, 0.0)


def _check_against_reference(cfg, dmin_A):
    setup = prepare(cfg)
    image, _ = render(setup)
    expected = reference_image(setup)
    if cfg.sampling.oversample_thick and cfg.detector.thick_um == 0:
        assert np.abs(expected).max() == 0
    else:
        assert np.abs(expected).max() > 0
    if dmin_A:  # the cut really removes part of the detector's signal
        uncut = reference_image(prepare(replace(cfg, crystal=replace(cfg.crystal, dmin_A=0.0))))
        assert not np.allclose(expected, uncut, rtol=VISIBLE_CHANGE_REL)
    np.testing.assert_allclose(image.numpy(), expected, rtol=F64_SUMMATION, atol=0)


def test_chunking_does_not_change_the_image(device, dtype):
    setup = prepare(TINY, device=device, dtype=dtype)
    whole, _ = render(setup)
    for chunk in (1, 5):
        parts, _ = render(setup, chunk_pixels=chunk)
        torch.testing.assert_close(parts, whole, rtol=ALLCLOSE[dtype][0], atol=0)


def _sha(image: torch.Tensor) -> str:
    return hashlib.sha256(image.to(torch.float32).numpy().tobytes()).hexdigest()


def test_bitwise_identical_across_repeats_and_thread_counts(dtype):
    cfg = replace(TINY, detector=replace(TINY.detector, fpixels=48, spixels=40, pixel_mm=0.5))
    before = torch.get_num_threads()
    try:
        hashes = set()
        for threads in (1, 2, 1):
            torch.set_num_threads(threads)
            hashes.add(_sha(simulate(cfg, dtype=dtype)))
    finally:
        torch.set_num_threads(before)
    assert len(hashes) == 1


@pytest.fixture(params=[True, False], ids=["processes", "threads"])
def workers_fork(request, monkeypatch):
    """Workers as forked processes (Linux, no CUDA) or as threads (where a process cannot fork)."""
    if not request.param:
        monkeypatch.setattr(processes, "available", lambda device: False)
    return request.param


@pytest.mark.parametrize("job_pixels", [1, 21, memory.JOB_PIXELS], ids=["chunk-a-job", "3x7-a-job", "default-jobs"])
@pytest.mark.parametrize("chunk", [1, 7, None])
def test_bitwise_identical_on_one_two_and_three_workers_for_each_chunk_and_job_size(dtype, chunk, job_pixels,
                                                                                    workers_fork, monkeypatch):
    # P = 64 pixels: 64 chunks of 1, 10 of 7 (the last one short), or one chunk (None: from memory); a job
    # computes the per-pixel terms of one chunk, of up to 21 pixels' chunks (4 jobs, the last short), or of
    # JOB_PIXELS' together
    cfg = replace(TINY, detector=replace(TINY.detector, fpixels=8, spixels=8, pixel_mm=2.0))
    setup = prepare(cfg, dtype=dtype)
    monkeypatch.setattr(memory, "JOB_PIXELS", 1)
    alone, info = render(setup, chunk_pixels=chunk, threads=1)
    monkeypatch.setattr(memory, "JOB_PIXELS", job_pixels)
    one, _ = render(setup, chunk_pixels=chunk, threads=1)
    two, _ = render(setup, chunk_pixels=chunk, threads=2)
    three, _ = render(setup, chunk_pixels=chunk, threads=3)
    assert info.chunk_pixels == (chunk or info.chunk_pixels)
    assert _sha(two) == _sha(one) and torch.equal(two, one) and torch.equal(three, one)
    # A chunk's terms computed among a job's other pixels: in float64 every op of the terms gives an element
    # the same bits wherever it sits in a tensor; float32's atan2 (the Kahn polarization) does not, in the
    # last element or few of a vectorised loop, so a job's size may move a float32 pixel by one unit.
    if dtype == torch.float64:
        assert torch.equal(one, alone)
    else:
        torch.testing.assert_close(one, alone, rtol=FLOAT32_JOB_SIZE_REL, atol=0)


@pytest.mark.parametrize("workers", [2, 3])
def test_an_roi_render_shares_its_pixels_as_the_same_bits_and_reports_progress(dtype, workers, workers_fork,
                                                                                  monkeypatch):
    # an ROI's pixels are not a slice of the image: each chunk's values go to their raster indices
    monkeypatch.setattr(memory, "JOB_PIXELS", 14)  # 99 pixels: 8 jobs of two 7-pixel chunks
    cfg = replace(TINY, detector=replace(TINY.detector, fpixels=16, spixels=15, pixel_mm=1.0, roi=(2, 12, 1, 9)))
    setup = prepare(cfg, dtype=dtype)
    one, _ = render(setup, chunk_pixels=7, threads=1)
    fractions = []
    shared, _ = render(setup, chunk_pixels=7, threads=workers, progress=fractions.append)
    assert torch.equal(shared, one)
    assert (one[0] == 0).all() and (one[1, 2:13] != 0).all()
    assert fractions == sorted(fractions) and fractions[-1] == 1.0
    # threads report after every job; forked workers only through the jobs the calling process ran itself,
    # which may be none when the children take every job first (seen under load)
    assert len(fractions) > 1 or workers_fork


def test_a_render_leaves_torch_thread_count_as_it_found_it():
    before = torch.get_num_threads()
    render(prepare(TINY), chunk_pixels=2, threads=2)
    render(prepare(TINY), threads=1)
    assert torch.get_num_threads() == before


def test_float32_agrees_with_float64(device):
    cfg = replace(TINY, detector=replace(TINY.detector, fpixels=32, spixels=32, pixel_mm=0.5))
    img64 = simulate(cfg, device=device, dtype=torch.float64)
    img32 = simulate(cfg, device=device, dtype=torch.float32)
    assert img32.dtype == torch.float32 and img32.device.type == torch.device(device).type
    rel = float((img32.double() - img64).abs().max() / img64.abs().max())
    assert rel < FLOAT32_VS_FLOAT64_MAX_REL


def test_roi_renders_only_inside(device):
    cfg = replace(TINY, detector=replace(TINY.detector, roi=(1, 2, 0, 1)))
    image = simulate(cfg, device=device)
    full = simulate(TINY, device=device)
    inside = torch.zeros_like(image, dtype=torch.bool)
    inside[0:2, 1:3] = True
    assert torch.equal(image[~inside], torch.zeros_like(image[~inside]))
    torch.testing.assert_close(image[inside], full[inside], rtol=F64_ROUNDING, atol=0)


def test_zero_attenuation_with_thickness_gives_an_all_zero_image(device, dtype):
    cfg = replace(TINY, detector=replace(TINY.detector, mu_per_m=0.0))
    assert float(simulate(cfg, device=device, dtype=dtype).abs().max()) == 0.0


def test_physical_phi_differs_from_nanobragg_stale_phi_only_at_zero():
    # No water here: the background is divided by the step count, which differs between the runs.
    base = replace(TINY, crystal=replace(TINY.crystal, water_um=0.0),
                   sampling=SamplingConfig(oversample=1, phi0_deg=0, osc_deg=1, phisteps=2))
    stale = simulate(base)
    physical = simulate(replace(base, sampling=replace(base.sampling, stale_phi=False)))
    assert not torch.equal(stale, physical)
    shifted = simulate(replace(base, sampling=SamplingConfig(oversample=1, phi0_deg=0.5, osc_deg=0.5, phisteps=1)))
    # both render phi = 0.5 twice, but at pixel (0, 0): it starts nanoBragg's thread, whose first sweep
    # renders phi = 0 (tests/rendering/test_thread_first_sweep.py)
    torch.testing.assert_close(stale.flatten()[1:], shifted.flatten()[1:], rtol=F64_ROUNDING, atol=0)


def test_shapes_other_than_square_use_their_own_peak(device, dtype):
    for shape in (CrystalShape.ROUND, CrystalShape.GAUSS, CrystalShape.TOPHAT):
        cfg = replace(TINY, crystal=replace(TINY.crystal, shape=shape))
        image = simulate(cfg, device=device, dtype=dtype)
        assert torch.isfinite(image).all() and float(image.max()) > 0


def _tiny_for_grad(**kw) -> SimulationConfig:
    crystal = dict(cell=(40, 40, 40, 90, 90, 90), default_F=10, Na=4, Nb=4, Nc=4, misset_deg=(5, 15, 25))
    detector = dict(fpixels=5, spixels=4, pixel_mm=1.0, distance_mm=60)
    beam = dict(lambda_A=1.0)
    for key, value in kw.items():
        group, name = key.split("__")
        {"crystal": crystal, "detector": detector, "beam": beam}[group][name] = value
    return SimulationConfig(crystal=CrystalConfig(**crystal), beam=BeamConfig(**beam),
                            detector=DetectorConfig(**detector), sampling=SamplingConfig(oversample=1))


def _cell_a(x):
    return _tiny_for_grad(crystal__cell=(x, 40, 40, 90, 90, 90))


def _cell_gamma(x):
    return _tiny_for_grad(crystal__cell=(40, 40, 40, 90, 90, x))


def _misset_x(x):
    return _tiny_for_grad(crystal__misset_deg=(x, 15, 25))


@pytest.mark.parametrize("build,value", [
    (_cell_a, 40.0), (_cell_gamma, 91.0), (_misset_x, 5.0),
    (lambda x: _tiny_for_grad(detector__distance_mm=x), 60.0),
    (lambda x: _tiny_for_grad(detector__xbeam_mm=x), 2.2),
    (lambda x: _tiny_for_grad(detector__ybeam_mm=x), 2.6),
    (lambda x: _tiny_for_grad(beam__lambda_A=x), 1.0),
    (lambda x: _tiny_for_grad(crystal__Na=x), 4.0),
], ids=["cell_a", "cell_gamma", "misset_x", "distance", "xbeam", "ybeam", "lambda", "N"])
def test_gradcheck(build, value):
    x = torch.tensor(value, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda t: simulate(build(t)), (x,), **GRADCHECK)
    grad, = torch.autograd.grad(simulate(build(x)).sum(), x)
    assert float(grad.abs()) > 0


def test_gradient_reaches_the_structure_factor_table():
    from detsim.model.structure_factors import HKLTable
    values = np.full((9, 9, 9), 20.0)
    table = HKLTable(h_min=-4, k_min=-4, l_min=-4, values=values, count=values.size, source="test")
    cfg = _tiny_for_grad()
    cfg = replace(cfg, crystal=replace(cfg.crystal, hkl=table, interpolate=True, Na=2))
    setup = prepare(cfg)
    setup.structure.values.requires_grad_(True)
    image, _ = render(setup)
    image.sum().backward()
    assert float(setup.structure.values.grad.abs().sum()) > 0

"""A prepared simulation: everything independent of the pixel, resolved once (spec §5.1).

:func:`prepare` resolves a :class:`~detsim.model.config.SimulationConfig` into a :class:`Setup`: lab frame,
detector geometry, sources, crystal orientations, step counts, structure factors and the list of pixels
to render. The setup is tiny: it is computed in float64 whatever the render's dtype, then cast, which
keeps float32 images close to float64 ones.

Units are SI (metres, radians) unless a field's name or comment says otherwise.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field, replace

import numpy as np
import torch
from torch import Tensor

from detsim.host import memory
from detsim.model import physics
from detsim.model.config import ConfigError, CrystalConfig, SimulationConfig, as_float, derived
from detsim.model.crystal import (
    Lattice, auto_oversample, build_lattice, clip_sizes_to_beam, effective_phi_angles, mosaic_matrices,
    orientations, phi_angles, phi_steps,
)
from detsim.model.geometry import DetectorGeometry, LabFrame, detector_geometry, lab_frame, pixel_positions
from detsim.model.sampling import Steps, resolve_mosaic_domains, resolve_thickness
from detsim.model.sources import SOURCE_BYTES, Sources, build_sources, grid_steps
from detsim.model.structure_factors import StructureFactors
from detsim.model.units import ANGSTROM, deg_to_rad, sensor_um_to_m, water_um_to_m
from detsim.rendering.setup_cache import Derived, SetupCache, config_key
from detsim.rendering.setup_transfer import map_tensors, moved, tensors_of
from detsim.rendering.thread_first_sweep import FirstSweep, first_swept, first_sweep_phi_angles, thread_first_pixels, thread_pixels


@dataclass(frozen=True)
class Setup:
    """Everything the pixel loop needs, resolved once (spec §5.1)."""

    config: SimulationConfig
    frame: LabFrame
    geometry: DetectorGeometry
    lattice: Lattice
    sources: Sources
    orientations: Tensor  # (R, 3, 3) rows a, b, c (m), R = phi steps x mosaic domains
    first_sweep: FirstSweep | None  # the thread-first pixels' first sweep, where it differs (spec §4.7)
    phi_steps: Steps
    phis_rad: list[float]
    mosaic_domains: int
    oversample: int
    oversample_auto: bool
    thickness: Steps  # sensor layers (m)
    mu_per_m: float
    structure: StructureFactors
    interpolate: bool
    fluence_per_m2: float
    water_bg: float  # I_bg (spec §6.1)
    pixels_s: Tensor  # (P_total,) slow index of every rendered pixel, raster order
    pixels_f: Tensor  # (P_total,) fast index
    device: torch.device
    dtype: torch.dtype
    raster: bool = False  # pixels_s, pixels_f are every pixel in raster order: pixel i is image element i
    # what is computed from the kept host setup this one was prepared from (detsim.rendering.setup_cache), shared
    # by every setup prepared from it; None when not prepared from the cache. Not an argument: a setup made by
    # ``replace`` (other tensors, other pixels) has none, so it never takes values computed for another
    derived: Derived | None = field(default=None, init=False, compare=False, repr=False)

    @functools.cached_property
    def cell_counts(self) -> tuple[float, float, float]:
        """(Na, Nb, Nc) as Python floats (``lattice.N`` may carry a gradient), read once per setup."""
        return tuple(as_float(n) for n in self.lattice.N)

    @property
    def steps(self) -> int:
        """nanoBragg's normaliser: sources x domains x phi steps x subpixels (spec §5.1)."""
        return self.sources.lambda_m.shape[0] * self.orientations.shape[0] * self.oversample ** 2


SETUPS: SetupCache[Setup] = SetupCache()  # host setups by (configuration digest, dtype)


def prepare(config: SimulationConfig, *, device: torch.device | str = "cpu",
            dtype: torch.dtype = torch.float64, reuse: bool = True) -> Setup:
    """Resolve the configuration into geometry, sources, orientations and step counts.

    Geometry and orientations are computed in float64 whatever ``dtype`` is, then cast: the setup is
    tiny and float64 keeps float32 images close to float64 ones. It is computed on the host whatever
    ``device`` is (the same code and bits as a CPU setup) and moved to ``device`` in one copy
    (:mod:`detsim.rendering.setup_transfer`); a configuration holding tensors on another device is
    prepared there instead. With ``reuse``, the host setup of a configuration prepared before with the
    same content and dtype is taken from :data:`SETUPS` (configurations holding tensors never are).
    """
    device = torch.device(device)
    det = config.detector
    memory.require(f"a {det.spixels}x{det.fpixels} image (-detpixels)",
                   det.spixels * det.fpixels * (dtype.itemsize + IMAGE_BYTES_PER_PIXEL), device)
    if device.type != "cpu" and any(t.device.type != "cpu" for t in _config_tensors(config)):
        setup = _prepare_on(config, device, dtype)
    else:
        setup = _host_setup(config, dtype, reuse)
    _require_pixel_memory(setup, device)
    if device.type == "cpu":
        return setup
    moved_setup = _with_derived(_on_device(setup, device), setup.derived)
    moved_setup.__dict__["cell_counts"] = setup.cell_counts  # read on the host: the device is not waited for
    return moved_setup


def _host_setup(config: SimulationConfig, dtype: torch.dtype, reuse: bool) -> Setup:
    """The setup computed on the host, or the one kept for a configuration of the same content."""
    key = config_key(config) if reuse else None
    kept = SETUPS.get((key, dtype)) if key is not None else None
    if kept is None:
        kept = _prepare_on(config, torch.device("cpu"), dtype)
        if key is None:
            return kept
        kept = _with_derived(kept, Derived())
        SETUPS.put((key, dtype), kept, sum(t.numel() * t.element_size() for t in tensors_of(kept)))
    # the caller's own setup and tensor objects over the kept storage: requires_grad_ on one, or whatever is
    # cached per setup object, stays with the caller's; what is derived from the kept one is shared
    return _with_derived(replace(map_tensors(kept, Tensor.detach), config=config), kept.derived)


def _with_derived(setup: Setup, derived: Derived | None) -> Setup:
    """``setup``, carrying ``derived`` (set once, on a setup just made)."""
    object.__setattr__(setup, "derived", derived)
    return setup


def _on_device(setup: Setup, device: torch.device) -> Setup:
    """``setup`` on ``device``: one copy of its tensors, except a raster pixel list, built there (a few
    kernels instead of copying 8 bytes a pixel)."""
    raster = setup.raster
    if raster:
        setup = replace(setup, pixels_s=setup.pixels_s[:0], pixels_f=setup.pixels_f[:0])
    setup = replace(moved(setup, device), device=device)
    if setup.structure.values is None:
        setup = replace(setup, structure=StructureFactors(None, setup.structure.default_F, device=device,
                                                          dtype=setup.dtype))
    if raster:
        det = setup.config.detector
        s_idx, f_idx = _rendered_pixels(det.spixels, det.fpixels, None, None, device)
        setup = replace(setup, pixels_s=s_idx, pixels_f=f_idx)
    return setup


def _config_tensors(value) -> list[Tensor]:
    """The tensors a configuration holds (a value to differentiate with respect to, say)."""
    if isinstance(value, Tensor):
        return [value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return [t for f in dataclasses.fields(value) for t in _config_tensors(getattr(value, f.name))]
    if isinstance(value, (tuple, list)):
        return [t for item in value for t in _config_tensors(item)]
    return []


def _prepare_on(config: SimulationConfig, device: torch.device, dtype: torch.dtype) -> Setup:
    """The setup computed with every tensor on ``device``."""
    setup_dtype = torch.float64
    beam, det, sampling = config.beam, config.detector, config.sampling
    crystal = clip_sizes_to_beam(config.crystal, beam.beamsize_mm)
    frame = lab_frame(det, beam, crystal, device=device, dtype=setup_dtype)
    geom = detector_geometry(det, frame, device=device, dtype=setup_dtype)
    _require_finite("the detector geometry (-distance, -pixel, -detsize, the beam centre, rotations)",
                    geom.pix0_m, geom.distance_m, geom.fbeam_m, geom.sbeam_m, geom.pixel_m)
    lattice = build_lattice(crystal, beam.lambda_A, device=device, dtype=setup_dtype)
    _require_finite("the lattice of the unit cell (-cell or -mat, with -lambda)",
                    lattice.real_m, lattice.recip_A, lattice.volume_A3)
    if beam.sources is None:
        h, v, d = derived("the number of divergence steps (-hdivrange, -vdivrange or -divergence over -hdivstep, "
                          "-vdivstep)", lambda: grid_steps(beam))
        memory.require(f"a source grid of {h.count} x {v.count} divergence steps x {d.count} wavelengths (-divsteps, "
                       "-hdivsteps, -vdivsteps, -dispsteps, or a range over a step)",
                       h.count * v.count * d.count * SOURCE_BYTES)
    sources = build_sources(beam, frame)

    steps = derived("the number of phi steps (-osc over -phistep)", lambda: phi_steps(sampling))
    domains = resolve_mosaic_domains(deg_to_rad(crystal.mosaic_spread_deg), crystal.mosaic_domains)
    memory.require(f"{steps.count} phi steps (-phisteps) x {domains} mosaic domains (-mosaic_dom)",
                   steps.count * PHI_STEP_BYTES + domains * DOMAIN_BYTES
                   + steps.count * domains * ORIENTATION_BYTES, device)
    phis = phi_angles(sampling, steps)
    umats = mosaic_matrices(crystal, device=device, dtype=setup_dtype)  # (D, 3, 3) mosaic rotations
    effective = effective_phi_angles(phis, sampling.stale_phi)
    orient = orientations(lattice, frame.spindle, effective, umats)  # (R, 3, 3) m

    recommended = auto_oversample(lattice, as_float(beam.lambda_A), as_float(geom.distance_m), as_float(geom.pixel_m))
    oversample = sampling.oversample if sampling.oversample else recommended

    thickness = resolve_thickness(sensor_um_to_m(det.thick_um), det.thicksteps)  # sensor layers, m
    _require_pixel_memory_of(oversample, not sampling.oversample, thickness.count, sources.lambda_m.shape[0],
                             dtype, device)
    if det.mu_per_m is not None:  # attenuation coefficient mu, 1/m
        mu = det.mu_per_m
    elif det.thick_um > 0:
        mu = derived(f"the attenuation 1 / -detector_thick {det.thick_um:g} um", lambda: 1.0 / sensor_um_to_m(det.thick_um))
    else:
        mu = 0.0

    has_table = crystal.hkl is not None
    if crystal.interpolate is None:
        interpolate = min(crystal.Na, crystal.Nb, crystal.Nc) <= 2  # as parsed, before -xtalsize (spec §2.1)
    else:
        interpolate = crystal.interpolate
    interpolate = interpolate and has_table

    fluence = derived("the fluence -flux x -exposure / -beamsize squared", lambda: beam.effective_fluence_per_m2)
    water_bg = derived(f"the water background of -water {crystal.water_um:g} um",
                       lambda: physics.water_background(water_um_to_m(crystal.water_um), fluence))
    _require_finite_squares(crystal)
    s_idx, f_idx = _rendered_pixels(det.spixels, det.fpixels, det.roi, det.mask, device)
    first_sweep = None
    first_phis = first_sweep_phi_angles(phis)
    if sampling.stale_phi and first_phis != effective:  # a zero step before any non-zero one (spec §4.7)
        positions = thread_first_pixels(s_idx, f_idx, det.spixels, sampling.nanobragg_threads)
        first_sweep = FirstSweep(
            orientations=orientations(lattice, frame.spindle, first_phis, umats).to(dtype),  # (R, 3, 3) m
            pixels=tuple((int(s_idx[i]), int(f_idx[i])) for i in positions), positions=positions)
    cast = dict(dtype=dtype)
    setup = Setup(
        config=config, frame=_cast_frame(frame, dtype), geometry=_cast_geometry(geom, dtype),
        lattice=Lattice(real_m=lattice.real_m.to(**cast), recip_A=lattice.recip_A.to(**cast),
                        N=lattice.N.to(**cast), volume_A3=lattice.volume_A3, misset_rad=lattice.misset_rad),
        sources=Sources(incident=sources.incident.to(**cast), lambda_m=sources.lambda_m.to(**cast)),
        orientations=orient.to(**cast), first_sweep=first_sweep, phi_steps=steps, phis_rad=phis, mosaic_domains=umats.shape[0],
        oversample=oversample, oversample_auto=not sampling.oversample,
        thickness=thickness, mu_per_m=mu,
        structure=StructureFactors(crystal.hkl, crystal.default_F, device=device, dtype=dtype),
        interpolate=interpolate, fluence_per_m2=fluence,
        water_bg=water_bg,
        pixels_s=s_idx, pixels_f=f_idx, device=device, dtype=dtype,
        raster=s_idx.numel() == det.spixels * det.fpixels,
    )
    return _first_sweep_past_the_cut(setup, sampling.nanobragg_threads)


# Bytes a rendered pixel needs besides the image itself: its int32 (slow, fast) indices and the command's
# float32 copy, uint16 images and float64 statistics temporaries.
IMAGE_BYTES_PER_PIXEL = 8 + 4 + 2 + 2 + 1 + 16
PHI_STEP_BYTES = 2 * 32  # two Python float lists (angles, effective angles)
DOMAIN_BYTES = 9 * 8 + 400  # a float64 rotation, and its Python rows while the random stream draws them
ORIENTATION_BYTES = 4 * 9 * 8  # a (3, 3) float64 orientation: rotated, oriented, cast, and one spare
SCAN_LANES = 1 << 18  # (pixel, layer, subpixel, source) lanes whose -dmin cut is tested at once


def _require_pixel_memory(setup: Setup, device: torch.device) -> None:
    """A pixel's per-pixel terms fit in ``device``'s memory (checked again for each device a setup goes to)."""
    _require_pixel_memory_of(setup.oversample, setup.oversample_auto, setup.thickness.count,
                             setup.sources.lambda_m.shape[0], setup.dtype, device)


def _require_pixel_memory_of(oversample: int, auto: bool, layers: int, n_sources: int, dtype: torch.dtype,
                             device: torch.device) -> None:
    what = (f"automatic -oversample {oversample:.4g} (from -cell/-mat, -N, -lambda, -distance and -pixel)"
            if auto else f"-oversample {oversample}")
    memory.require(f"one pixel's {what} x {layers} sensor layers (-thicksteps) x {n_sources} sources",
                   memory.bytes_per_pixel(layers, oversample ** 2, n_sources, dtype.itemsize), device)


def _require_finite_squares(crystal: CrystalConfig) -> None:
    """The image sums F squared: -default_F and the largest F of the -hkl file must have a finite square."""
    default_F = as_float(crystal.default_F)
    derived(f"-default_F {default_F:g} squared", lambda: default_F ** 2)
    table = crystal.hkl
    if table is not None and table.values.size:
        largest = float(np.abs(table.values).max())
        derived(f"the largest F of {table.source} (-hkl), {largest:g}, squared", lambda: largest ** 2)


def _require_finite(what: str, *values) -> None:
    for value in values:
        tensor = torch.as_tensor(value, dtype=torch.float64) if not isinstance(value, Tensor) else value
        if not bool(torch.isfinite(tensor.detach()).all()):
            raise ConfigError(f"{what} is not finite in double precision: a value is too large or too small")


def _cast_frame(frame: LabFrame, dtype: torch.dtype) -> LabFrame:
    return LabFrame(beam=frame.beam.to(dtype), polar=frame.polar.to(dtype), vert=frame.vert.to(dtype),
                    spindle=frame.spindle.to(dtype))


def _cast_geometry(geom: DetectorGeometry, dtype: torch.dtype) -> DetectorGeometry:
    fields = {k: (v.to(dtype) if isinstance(v, Tensor) else v) for k, v in vars(geom).items()}
    return DetectorGeometry(**fields)


def _rendered_pixels(spixels: int, fpixels: int, roi, mask, device) -> tuple[Tensor, Tensor]:
    """Slow and fast indices of the pixels inside the ROI and not masked (mask == 0), raster order."""
    xmin, xmax, ymin, ymax = roi if roi is not None else (0, fpixels - 1, 0, spixels - 1)
    s = torch.arange(ymin, ymax + 1, device=device, dtype=torch.int32)  # int32: 4 bytes per pixel
    f = torch.arange(xmin, xmax + 1, device=device, dtype=torch.int32)
    s, f = s.repeat_interleave(f.numel()), f.repeat(s.numel())
    if mask is not None:
        keep = torch.as_tensor(np.asarray(mask) != 0, device=device)[s, f]
        s, f = s[keep], f[keep]
    return s, f


def layer_offsets(setup: Setup) -> Tensor:
    """(T,) depth of each sensor layer below the front face, m (spec §3.4)."""
    depth = torch.arange(setup.thickness.count, device=setup.device, dtype=setup.dtype)  # (T,) layer index
    return depth * setup.thickness.step


def _first_sweep_past_the_cut(setup: Setup, threads: int) -> Setup:
    """``setup`` whose thread-first pixels are the first of each thread's share that -dmin leaves a source:
    nanoBragg skips a pixel it cuts whole before the phi loop, and the thread's first sweep falls to the next
    (spec §4.7)."""
    first, dmin_m = setup.first_sweep, setup.config.crystal.dmin_A * ANGSTROM
    if first is None or dmin_m <= 0:
        return setup
    incident, lambda_m = setup.sources.incident, setup.sources.lambda_m

    def swept(start: int, stop: int) -> Tensor:  # (P,) whether -dmin spares any layer, subpixel and source
        position = pixel_positions(setup.geometry, setup.pixels_s[start:stop], setup.pixels_f[start:stop],
                                   setup.oversample, layer_offsets(setup), setup.config.detector.curved,
                                   setup.frame.beam)  # (P, T, O, 3) m
        diffracted = position / physics.norm(position)[..., None]
        return physics.survives_dmin(physics.scattering_vectors(diffracted, incident, lambda_m), dmin_m).flatten(1).any(1)

    batch = max(1, SCAN_LANES // (setup.thickness.count * setup.oversample ** 2 * lambda_m.shape[0]))
    shares = thread_pixels(setup.pixels_s, setup.config.detector.spixels, threads)
    positions = tuple(p for p in (first_swept(share, swept, batch) for share in shares) if p is not None)
    pixels = tuple((int(setup.pixels_s[i]), int(setup.pixels_f[i])) for i in positions)
    return replace(setup, first_sweep=replace(first, pixels=pixels, positions=positions))


def restrict_pixels(setup: Setup, pixels: list[tuple[int, int]]) -> Setup:
    """The same setup rendering only the given (slow, fast) pixels, e.g. for tracing them."""
    s = torch.as_tensor([p[0] for p in pixels], device=setup.device)
    f = torch.as_tensor([p[1] for p in pixels], device=setup.device)
    first_sweep = setup.first_sweep.restricted(pixels) if setup.first_sweep is not None else None
    return replace(setup, pixels_s=s, pixels_f=f, first_sweep=first_sweep, raster=False)


def needs_grad(setup: Setup) -> bool:
    """Whether autograd must see a render of this setup (then no in-place shortcuts are taken)."""
    if not torch.is_grad_enabled():
        return False
    tensors = (setup.orientations, setup.sources.lambda_m, setup.sources.incident, setup.geometry.pix0_m,
               setup.geometry.fdet, setup.lattice.N, setup.lattice.recip_A)
    values = setup.structure.values
    return any(t.requires_grad for t in tensors) or (values is not None and values.requires_grad)


__all__ = ["Setup", "layer_offsets", "needs_grad", "prepare", "restrict_pixels"]

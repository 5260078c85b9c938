"""The simulation engine: everything independent of the pixel once, then pixels in chunks (spec §5).

``prepare`` resolves a :class:`~detsim.config.SimulationConfig` into a :class:`Setup` (geometry,
sources, crystal orientations, step counts); ``render`` accumulates the image. Inside ``render`` the
work for a chunk of P pixels is laid out as tensors over nanoBragg's sampling axes:

    (P, T, O, 3)      subpixel positions: T sensor layers, O = N_os**2 subpixels      (spec §3.4)
    (P, Sb, Rb, 3)    Miller indices for a block of Sb sources x Rb orientations      (spec §5.6)

where the R axis enumerates (phi step, mosaic domain) pairs, phi outer. Python loops run only over
layers, subpixels and blocks of the sampling axes, never over pixels. Sums are accumulated in a fixed
order (chunk by chunk, block by block), so an image is bit-for-bit reproducible for a given chunk size,
dtype and device, whatever the thread count.

The engine never prints: progress goes to an optional callback.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import numpy as np
import torch
from torch import Tensor

from detsim import fused as fused_kernels
from detsim import grating, memory
from detsim import physics
from detsim.config import CrystalShape, SimulationConfig, as_float
from detsim.crystal import (
    Lattice, auto_oversample, build_lattice, clip_sizes_to_beam, effective_phi_angles, mosaic_matrices,
    orientations, phi_angles, phi_steps,
)
from detsim.geometry import DetectorGeometry, LabFrame, detector_geometry, lab_frame, pixel_positions
from detsim.sampling import Steps, resolve_thickness
from detsim.sources import Sources, build_sources
from detsim.structure import StructureFactors
from detsim.units import ANGSTROM, R_E_SQ_M2, UM

# Execution paths of render(); each is parity-tested against the golden cases. "compiled" runs the
# fused inner loop of detsim.fused through torch.compile where it applies, "triton" through the Triton
# kernel of detsim.triton_kernels (CUDA, or Triton's interpreter on a CPU); eager code does the rest.
MODES = ("eager", "compiled", "triton")

Observer = Callable[..., None]
"""``observe(name, tensor, **where)``: receives named intermediate tensors of a chunk (diagnosis hook).

Called only when given to :func:`render`; the names and shapes are listed in :data:`OBSERVED`. ``where``
holds the block's position in the sampling loops: ``layer``, ``subpixel``, ``sources`` and
``orientations`` (slices).
"""

OBSERVED = {
    "pixel_pos": "(P, T, O, 3) subpixel position, m",
    "diffracted": "(P, T, O, 3) unit vector from sample to subpixel",
    "airpath": "(P, T, O) sample-subpixel distance, m",
    "solid_angle": "(P, T, O) subpixel solid angle, sr",
    "capture_fraction": "(P, T, O) fraction absorbed in the subpixel's layer",
    "polarization": "(P, T, O, S) polarization factor",
    "scattering": "(P, T, O, S, 3) scattering vector, 1/m",
    "source_cut": "(P, T, O, S) True where -dmin skips the source",
    "hkl": "(P, Sb, Rb, 3) fractional Miller indices of a block",
    "hkl0": "(P, Sb, Rb, 3) nearest integer indices",
    "F_latt_axes_sq": "(P, Sb, Rb, 3) squared lattice factor per axis (square crystals)",
    "F_latt_sq": "(P, Sb, Rb) squared lattice factor",
    "F_cell": "(P, Sb, Rb) structure factor amplitude",
    "I_term": "(P, Sb, Rb) F_cell^2 F_latt^2 added by each iteration (0 where skipped)",
    "I_sum": "(P,) running sum after the block (starts at the water background)",
    "scale": "() r_e^2 * fluence / steps",
    "capture_last": "(P,) capture fraction applied at the end (last layer)",
    "polarization_used": "(P,) polarization applied at the end",
    "solid_angle_used": "(P,) solid angle applied at the end",
    "pixel_value": "(P,) final pixel value, photons",
}


@dataclass(frozen=True)
class Setup:
    """Everything the pixel loop needs, resolved once (spec §5.1)."""

    config: SimulationConfig
    frame: LabFrame
    geometry: DetectorGeometry
    lattice: Lattice
    sources: Sources
    orientations: Tensor  # (R, 3, 3) rows a, b, c (m), R = phi steps x mosaic domains
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

    @property
    def steps(self) -> int:
        """nanoBragg's normaliser: sources x domains x phi steps x subpixels (spec §5.1)."""
        return self.sources.lambda_m.shape[0] * self.orientations.shape[0] * self.oversample ** 2


@dataclass(frozen=True)
class RenderInfo:
    """Facts about a finished render that a caller may report."""

    interpolation_switched_off_at: tuple[int, int] | None  # (slow, fast) of the first out-of-range point
    chunk_pixels: int  # pixels per chunk, as given or as chosen from the available memory
    block_lanes: int  # pixel x source x orientation lanes per block


def prepare(config: SimulationConfig, *, device: torch.device | str = "cpu",
            dtype: torch.dtype = torch.float64) -> Setup:
    """Resolve the configuration into geometry, sources, orientations and step counts.

    Geometry and orientations are computed in float64 whatever ``dtype`` is, then cast: the setup is
    tiny and float64 keeps float32 images close to float64 ones.
    """
    device = torch.device(device)
    setup_dtype = torch.float64
    beam, det, sampling = config.beam, config.detector, config.sampling
    crystal = clip_sizes_to_beam(config.crystal, beam.beamsize_mm)
    frame = lab_frame(det, beam, crystal, device=device, dtype=setup_dtype)
    geom = detector_geometry(det, frame, device=device, dtype=setup_dtype)
    lattice = build_lattice(crystal, beam.lambda_A, device=device, dtype=setup_dtype)
    sources = build_sources(beam, frame)

    steps = phi_steps(sampling)
    phis = phi_angles(sampling, steps)
    umats = mosaic_matrices(crystal, device=device, dtype=setup_dtype)
    orient = orientations(lattice, frame.spindle, effective_phi_angles(phis, sampling.stale_phi), umats)

    recommended = auto_oversample(lattice, as_float(beam.lambda_A), as_float(geom.distance_m), as_float(geom.pixel_m))
    oversample = sampling.oversample if sampling.oversample else recommended

    thickness = resolve_thickness(det.thick_um * UM, det.thicksteps)
    if det.mu_per_m is not None:
        mu = det.mu_per_m
    else:
        mu = 1.0 / (det.thick_um * UM) if det.thick_um > 0 else 0.0

    has_table = crystal.hkl is not None
    if crystal.interpolate is None:
        interpolate = min(crystal.Na, crystal.Nb, crystal.Nc) <= 2  # as parsed, before -xtalsize (spec §2.1)
    else:
        interpolate = crystal.interpolate
    interpolate = interpolate and has_table

    fluence = beam.effective_fluence_per_m2
    s_idx, f_idx = _rendered_pixels(det.spixels, det.fpixels, det.roi, det.mask, device)
    cast = dict(dtype=dtype)
    return Setup(
        config=config, frame=_cast_frame(frame, dtype), geometry=_cast_geometry(geom, dtype),
        lattice=Lattice(real_m=lattice.real_m.to(**cast), recip_A=lattice.recip_A.to(**cast),
                        N=lattice.N.to(**cast), volume_A3=lattice.volume_A3, misset_rad=lattice.misset_rad),
        sources=Sources(incident=sources.incident.to(**cast), lambda_m=sources.lambda_m.to(**cast)),
        orientations=orient.to(**cast), phi_steps=steps, phis_rad=phis, mosaic_domains=umats.shape[0],
        oversample=oversample, oversample_auto=not sampling.oversample,
        thickness=thickness, mu_per_m=mu,
        structure=StructureFactors(crystal.hkl, crystal.default_F, device=device, dtype=dtype),
        interpolate=interpolate, fluence_per_m2=fluence,
        water_bg=physics.water_background(crystal.water_um * UM, fluence),
        pixels_s=s_idx, pixels_f=f_idx, device=device, dtype=dtype,
    )


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


def render(setup: Setup, *, chunk_pixels: int | None = None,
           progress: Callable[[float], None] | None = None,
           observe: Observer | None = None, mode: str = "eager") -> tuple[Tensor, RenderInfo]:
    """Accumulate the image of a prepared simulation.

    Args:
        chunk_pixels: pixels per chunk; None picks one from the memory available on the device
            (:func:`detsim.memory.plan`).
        progress: called with the fraction done after each chunk.
        observe: diagnosis hook receiving named intermediates (see :data:`Observer`); for tracing a few
            pixels, render a setup restricted to them (``restrict_pixels``).
        mode: execution path, one of :data:`MODES`.

    Returns:
        (image, info): image of shape (slow, fast) in ``setup.dtype`` on ``setup.device``, photons per
        pixel; pixels outside the ROI are 0.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "triton":
        check_triton(setup.device)
    n_sources = setup.sources.lambda_m.shape[0]
    sizes = memory.plan(device=setup.device, itemsize=setup.dtype.itemsize,
                        fused=mode != "eager" and _fusable(setup), layers=setup.thickness.count,
                        subpixels=setup.oversample ** 2, sources=n_sources,
                        lanes_per_pixel=n_sources * setup.orientations.shape[0], chunk_pixels=chunk_pixels)
    chunk_pixels = sizes.chunk_pixels
    det = setup.config.detector
    total = setup.pixels_s.numel()
    state = _InterpolationState(enabled=setup.interpolate)
    projections = _Projections(setup)
    image = torch.zeros(det.spixels * det.fpixels, dtype=setup.dtype, device=setup.device)
    grad = _needs_grad(setup)
    for start in range(0, total, chunk_pixels):
        stop = min(start + chunk_pixels, total)
        s_idx, f_idx = setup.pixels_s[start:stop], setup.pixels_f[start:stop]
        values = _render_chunk(setup, s_idx, f_idx, start, state, projections, sizes.block_lanes, observe, mode)
        flat = (s_idx.long() * det.fpixels + f_idx,)
        image = image.index_put(flat, values) if grad else image.index_put_(flat, values)
        if progress is not None:
            progress(stop / total)
    info = RenderInfo(interpolation_switched_off_at=state.switched_off_at(setup),
                      chunk_pixels=chunk_pixels, block_lanes=sizes.block_lanes)
    return image.reshape(det.spixels, det.fpixels), info


@dataclass
class _InterpolationState:
    """nanoBragg's global interpolation switch: off for good after the first out-of-range point (spec §5.7).

    ``cutoff`` is the global iteration index (pixel-major, loop order within a pixel) of that point;
    iterations before it interpolate.
    """

    enabled: bool
    cutoff: int | None = None
    cutoff_pixel: int | None = None

    def switched_off_at(self, setup: Setup) -> tuple[int, int] | None:
        if self.cutoff_pixel is None:
            return None
        return int(setup.pixels_s[self.cutoff_pixel]), int(setup.pixels_f[self.cutoff_pixel])


@dataclass(frozen=True)
class _PixelTerms:
    """Per-pixel quantities of one chunk of P pixels.

    nanoBragg evaluates the solid angle, polarization and capture fraction once per pixel (spec §5.4,
    §5.5, §5.8); the ``*_first``/``*_last`` fields hold those values. The full per-subpixel tensors
    are only built when an ``-oversample_*`` flag, a ``-dmin`` cut or an observer needs them.
    """

    position: Tensor  # (P, T, O, 3) subpixel positions, m
    airpath: Tensor  # (P, T, O) distance from the sample, m
    diffracted: Tensor  # (P, T, O, 3) unit vectors
    omega_first: Tensor  # (P,) solid angle at the first subpixel of layer 0
    capture_last: Tensor  # (P,) capture fraction of the last layer at its first subpixel
    polar_first: Tensor  # (P,) polarization at the first surviving source
    n_sources: int
    omega: Tensor | None = None  # (P, T, O)
    capture: Tensor | None = None  # (P, T, O)
    polar: Tensor | None = None  # (P, T, O, S)
    survives: Tensor | None = None  # (P, T, O, S); None when -dmin cuts nothing in this chunk
    scattering: Tensor | None = None  # (P, T, O, S, 3) scattering vectors, 1/m


def _pixel_terms(setup: Setup, s_idx: Tensor, f_idx: Tensor, full: bool) -> _PixelTerms:
    """Positions and per-pixel factors of a chunk; ``full`` builds every per-subpixel tensor."""
    geom, det, flags = setup.geometry, setup.config.detector, setup.config.sampling
    beam = setup.config.beam
    dtype, device = setup.dtype, setup.device
    layers = torch.arange(setup.thickness.count, device=device, dtype=dtype) * setup.thickness.step
    pos = pixel_positions(geom, s_idx, f_idx, setup.oversample, layers, det.curved, setup.frame.beam)
    airpath = physics.norm(pos)  # (P, T, O)
    diffracted = pos / airpath[..., None]
    incident = setup.sources.incident  # (S, 3)

    def omega_of(r: Tensor) -> Tensor:
        return physics.solid_angle(r, geom.pixel_m, geom.close_distance_m, det.point_pixel)

    def capture_of(d: Tensor, layer: Tensor | int, per_subpixel: bool = False) -> Tensor:
        # Without a sensor nanoBragg starts from 1 and never recomputes, except under
        # -oversample_thick, where it evaluates exp(0) - exp(0) = 0 (spec §5.4, §5.8).
        if setup.thickness.range <= 0 and not (per_subpixel and flags.oversample_thick):
            return torch.ones(d.shape[:-1], dtype=dtype, device=device)
        return physics.capture_fraction(physics.dot(d, geom.odet), layer, setup.thickness.step, setup.mu_per_m)

    def polar_of(d: Tensor, inc: Tensor) -> Tensor:
        # -nopolar only sets the starting value 1, which nanoBragg then keeps; under
        # -oversample_polar it recomputes the factor at every source anyway (spec §5.5).
        if beam.nopolar and not flags.oversample_polar:
            return torch.ones(torch.broadcast_shapes(d.shape, inc.shape)[:-1], dtype=dtype, device=device)
        d, inc = torch.broadcast_tensors(d, inc)
        return physics.polarization_factor(inc, d, setup.frame.polar, beam.polarization_kahn)

    scattering = survives = None
    dmin_m = setup.config.crystal.dmin_A * ANGSTROM
    if full or dmin_m > 0:
        scattering = (diffracted[..., None, :] - incident) / setup.sources.lambda_m[:, None]  # (P, T, O, S, 3)
    if dmin_m > 0:
        stol = 0.5 * physics.norm(scattering)
        survives = ~((stol > 0) & (dmin_m > 0.5 / stol))
        if bool(survives.all()) and not full:
            survives = None

    omega = omega_of(airpath) if (full or flags.oversample_omega) else None
    layer_index = torch.arange(setup.thickness.count, device=device, dtype=dtype)[None, :, None]
    capture = capture_of(diffracted, layer_index, per_subpixel=True) if (full or flags.oversample_thick) else None
    polar = None
    if full or flags.oversample_polar or survives is not None:
        polar = polar_of(diffracted[..., None, :], incident)  # (P, T, O, S)
        polar_first = _first_evaluation(polar, survives if survives is not None else torch.ones_like(polar, dtype=torch.bool))
    else:
        polar_first = polar_of(diffracted[:, 0, 0], incident[0])
    return _PixelTerms(
        position=pos, airpath=airpath, diffracted=diffracted,
        omega_first=omega_of(airpath[:, 0, 0]),
        capture_last=capture_of(diffracted[:, -1, 0], setup.thickness.count - 1),
        polar_first=polar_first, n_sources=incident.shape[0],
        omega=omega, capture=capture, polar=polar, survives=survives, scattering=scattering,
    )


def available_modes(device: torch.device | str = "cpu") -> tuple[str, ...]:
    """The execution paths that can run on ``device`` here."""
    modes = ["eager", "compiled"]
    try:
        check_triton(torch.device(device))
        modes.append("triton")
    except ValueError:
        pass
    return tuple(modes)


def check_triton(device: torch.device) -> None:
    """Raise ValueError saying why the Triton path cannot run on ``device``."""
    import os
    try:
        import triton  # noqa: F401
    except ImportError:
        raise ValueError("mode 'triton' needs the triton package (pip install 'detsim[triton]')") from None
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("mode 'triton' runs on a CUDA device (or on a CPU under TRITON_INTERPRET=1, for testing)")


def _needs_grad(setup: Setup) -> bool:
    """Whether autograd must see this render (then no in-place shortcuts are taken)."""
    if not torch.is_grad_enabled():
        return False
    tensors = (setup.orientations, setup.sources.lambda_m, setup.sources.incident, setup.geometry.pix0_m,
               setup.geometry.fdet, setup.lattice.N, setup.lattice.recip_A)
    values = setup.structure.values
    return any(t.requires_grad for t in tensors) or (values is not None and values.requires_grad)


def _fusable(setup: Setup) -> bool:
    """Whether the fused inner loop (detsim.fused) can take every chunk of a render."""
    cfg, flags = setup.config, setup.config.sampling
    sequential = flags.oversample_thick or flags.oversample_polar or flags.oversample_omega
    return (cfg.crystal.shape is CrystalShape.SQUARE and not setup.interpolate and not _needs_grad(setup)
            and setup.structure.values is None and cfg.crystal.dmin_A == 0 and not sequential)


def _first_evaluation(values: Tensor, survives: Tensor) -> Tensor:
    """Value at the first surviving (layer, subpixel, source) of each pixel, 0 if none (spec §5.5).

    Args:
        values, survives: (P, T, O, S).
    """
    flat_ok = survives.reshape(survives.shape[0], -1)
    first = flat_ok.to(torch.uint8).argmax(dim=1)  # first True (0 when none)
    picked = values.reshape(values.shape[0], -1).gather(1, first[:, None])[:, 0]
    return torch.where(flat_ok.any(dim=1), picked, torch.zeros_like(picked))


def _blocks(n_sources: int, n_orient: int, lanes: int) -> Iterator[tuple[slice, slice]]:
    """(source slice, orientation slice) blocks of at most ``lanes`` lanes, in loop order.

    Each block is a contiguous range of the flattened (source, orientation) iteration: either whole
    sources with every orientation, or part of one source's orientations.
    """
    if n_orient <= lanes:
        per = max(1, lanes // n_orient)
        for s in range(0, n_sources, per):
            yield slice(s, min(s + per, n_sources)), slice(0, n_orient)
    else:
        for s in range(n_sources):
            for r in range(0, n_orient, lanes):
                yield slice(s, s + 1), slice(r, min(r + lanes, n_orient))


class _Projections:
    """Per-block matrices turning a diffracted direction into Miller indices with one GEMM.

    h = a . (d - i) / lambda = d . (a / lambda) - (a . i) / lambda, so for a block of Sb sources and Rb
    orientations ``hkl = d @ B - C`` with B of shape (3, J*Sb*Rb) and C of shape (1, J*Sb*Rb), J the
    crystal axes needed. Built once per block and reused for every chunk, layer and subpixel.
    """

    def __init__(self, setup: Setup):
        self.setup = setup
        self._cache: dict[tuple, tuple[Tensor, Tensor]] = {}
        self._augmented: dict[tuple, Tensor] = {}

    def get(self, s_sl: slice, r_sl: slice, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
        """(B, C) for a block."""
        key = (s_sl.start, s_sl.stop, r_sl.start, r_sl.stop, axes)
        if key not in self._cache:
            orient = self.setup.orientations[r_sl][:, list(axes), :]  # (Rb, J, 3) axes a, b, c in m
            inv_lambda = 1.0 / self.setup.sources.lambda_m[s_sl]  # (Sb,)
            incident = self.setup.sources.incident[s_sl]  # (Sb, 3)
            B = orient.permute(2, 1, 0)[:, :, None, :] * inv_lambda[None, None, :, None]  # (3, J, Sb, Rb)
            C = torch.einsum("rjx,sx->jsr", orient, incident) * inv_lambda[None, :, None]  # (J, Sb, Rb)
            self._cache[key] = (B.reshape(3, -1), C.reshape(1, -1))
        return self._cache[key]

    def augmented(self, s_sl: slice, r_sl: slice, axes: tuple[int, ...]) -> Tensor:
        """(4, J*Sb*Rb) the rows of B over the row -C, so that ``[d, 1] @ A = d @ B - C`` in one GEMM."""
        key = (s_sl.start, s_sl.stop, r_sl.start, r_sl.stop, axes)
        if key not in self._augmented:
            B, C = self.get(s_sl, r_sl, axes)
            self._augmented[key] = torch.cat([B, -C])
        return self._augmented[key]


def _miller(diffracted: Tensor, projection: tuple[Tensor, Tensor], shape: tuple[int, int, int]) -> Tensor:
    """Fractional Miller indices of a block (spec §5.6): one GEMM, deterministic across threads.

    Args:
        diffracted: (P, 3) unit vectors of one layer and subpixel.
        projection: (B, C) from :class:`_Projections`.
        shape: (J, Sb, Rb) crystal axes, sources and orientations of the block.

    Returns:
        (P, J, Sb, Rb) indices along the requested crystal axes.
    """
    B, C = projection
    return torch.addmm(C, diffracted, B, beta=-1).view(diffracted.shape[0], *shape)  # d @ B - C


def _lattice_sq(setup: Setup, hkl: Tensor, frac: Tensor) -> Tensor:
    """F_latt**2 for the configured crystal shape (spec §5.6); (P, Sb, Rb)."""
    crystal = setup.config.crystal
    N = setup.lattice.N
    if crystal.shape is CrystalShape.SQUARE:
        return physics.lattice_square_sq(frac, N)
    if crystal.shape is CrystalShape.ROUND:
        return physics.lattice_round_sq(frac, N, crystal.fudge)
    rad_sq = physics.reciprocal_distance_sq(frac, setup.lattice.recip_A, N)
    if crystal.shape is CrystalShape.GAUSS:
        return physics.lattice_gauss_sq(rad_sq, N, crystal.fudge)
    return physics.lattice_tophat_sq(rad_sq, N, crystal.fudge)


def _cell(setup: Setup, hkl: Tensor, nearest: Tensor, interp_mask: Tensor | None) -> Tensor:
    """F_cell (spec §5.7); interpolated where ``interp_mask`` is True."""
    h0, k0, l0 = nearest.unbind(-1)
    F = setup.structure.nearest(h0, k0, l0)
    if interp_mask is not None and bool(interp_mask.any()):
        h, k, l = hkl.unbind(-1)
        F = torch.where(interp_mask, setup.structure.tricubic(h, k, l), F)
    return F


def _render_chunk(setup: Setup, s_idx: Tensor, f_idx: Tensor, first_pixel: int,
                  interp: _InterpolationState, projections: _Projections, block_lanes: int,
                  observe: Observer | None = None, mode: str = "eager") -> Tensor:
    """Pixel values of one chunk, (P,)."""
    cfg = setup.config
    terms = _pixel_terms(setup, s_idx, f_idx, full=observe is not None)
    if observe is not None:
        _observe_pixel_terms(observe, terms)
    P, T, O = terms.airpath.shape
    S = terms.n_sources
    R = setup.orientations.shape[0]
    per_pixel = T * O * S * R  # iterations per pixel, in loop order t, o, s, r
    water = cfg.crystal.water_um != 0
    flags = cfg.sampling
    sequential = flags.oversample_thick or flags.oversample_polar or flags.oversample_omega
    lanes = max(1, block_lanes // max(P, 1))
    has_cut = terms.survives is not None and not bool(terms.survives.all())

    if interp.enabled and interp.cutoff is None:
        _scan_interpolation_edge(setup, terms, first_pixel, per_pixel, lanes, interp, projections)

    crystal = cfg.crystal
    fast = (observe is None and crystal.shape is CrystalShape.SQUARE and not interp.enabled
            and not _needs_grad(setup))
    table = setup.structure.values is not None
    N = setup.lattice.N
    # Axes whose grating factor is not identically 1; without an F table only those need indices.
    axes = (0, 1, 2) if (table or not fast) else tuple(j for j in range(3) if as_float(N[j]) > 1)
    N_axes = [as_float(N[j]) for j in axes]
    F_const_sq = None if table else float(crystal.default_F) ** 2
    fused = None
    if mode != "eager" and fast and F_const_sq is not None and not has_cut and not sequential and axes:
        if mode == "compiled":
            fused = fused_kernels.compiled_square_lattice_lane_sum()
        else:
            from detsim import triton_kernels
            fused = triton_kernels.square_lattice_lane_sum
        N_fused = torch.as_tensor(N_axes, dtype=setup.dtype, device=setup.device)

    total = torch.full((P,), setup.water_bg, dtype=setup.dtype, device=setup.device)
    for t in range(T):
        for o in range(O):
            d = terms.diffracted[:, t, o]  # (P, 3)
            if fast and not table:
                d_aug = torch.cat([d, torch.ones_like(d[:, :1])], 1)  # (P, 4): [d, 1]
            for s_sl, r_sl in _blocks(S, R, lanes):
                Sb, Rb = s_sl.stop - s_sl.start, r_sl.stop - r_sl.start
                where = dict(layer=t, subpixel=o, sources=s_sl, orientations=r_sl)
                if fused is not None:
                    B, C = projections.get(s_sl, r_sl, axes)
                    J = len(axes)
                    total = total + fused(d, B.view(3, J, -1), C.view(J, -1), N_fused) * F_const_sq
                    continue
                if fast:
                    hkl = None
                    nearest = None
                    if table:  # nanoBragg's rounding, ties down (spec §5.6)
                        hkl_c = _miller(d, projections.get(s_sl, r_sl, axes), (len(axes), Sb, Rb))
                        nearest = torch.ceil(hkl_c - 0.5).movedim(1, -1)
                    elif axes:
                        hkl_c = torch.mm(d_aug, projections.augmented(s_sl, r_sl, axes)).view(P, len(axes), Sb, Rb)
                    latt_sq = (grating.square_grating_product_inplace(hkl_c, N_axes).square_() if axes
                               else torch.ones((P, Sb, Rb), dtype=setup.dtype, device=setup.device))
                    if F_const_sq is not None and not has_cut and not sequential:
                        total = total + latt_sq.reshape(P, -1).sum(-1) * F_const_sq
                        continue
                else:
                    hkl = _miller(d, projections.get(s_sl, r_sl, axes), (len(axes), Sb, Rb)).movedim(1, -1)  # (P, Sb, Rb, 3)
                    nearest = torch.ceil(hkl - 0.5)  # ties round down (spec §5.6)
                    latt_sq = _lattice_sq(setup, hkl, hkl - nearest)
                if F_const_sq is not None and not interp.enabled:
                    contrib = latt_sq * F_const_sq
                    F_cell = None
                else:
                    mask = None
                    if interp.enabled:
                        mask = _interp_allowed(setup, hkl, interp, first_pixel, per_pixel,
                                               _iteration_index(T, O, S, R, t, o, s_sl, r_sl, P, setup.device))
                    F_cell = _cell(setup, hkl, nearest, mask)
                    contrib = F_cell * F_cell * latt_sq
                alive = None
                if has_cut:
                    alive = terms.survives[:, t, o, s_sl, None].expand_as(contrib)
                    contrib = torch.where(alive, contrib, torch.zeros_like(contrib))
                if observe is not None:
                    F_obs = F_cell if F_cell is not None else torch.full_like(latt_sq, float(crystal.default_F))
                    _observe_block(observe, setup, hkl, nearest, latt_sq, F_obs, contrib, where)
                if not sequential:
                    total = total + contrib.reshape(P, -1).sum(-1)
                    if observe is not None:
                        observe("I_sum", total, **where)
                    continue
                # spec §5.8 [QUIRK]: each iteration multiplies the whole running sum by the enabled
                # factors. Skipped iterations (cut source, or F_latt == 0 without water) multiply by 1.
                factor = torch.ones_like(contrib)
                if flags.oversample_thick:
                    factor = factor * terms.capture[:, t, o, None, None]
                if flags.oversample_polar:
                    factor = factor * terms.polar[:, t, o, s_sl, None]
                if flags.oversample_omega:
                    factor = factor * terms.omega[:, t, o, None, None]
                counted = latt_sq != 0 if not water else torch.ones_like(latt_sq, dtype=torch.bool)
                if alive is not None:
                    counted = counted & alive
                factor = torch.where(counted, factor, torch.ones_like(factor)).reshape(P, -1)
                suffix = torch.flip(torch.cumprod(torch.flip(factor, (1,)), 1), (1,))
                total = total * suffix[:, 0] + (contrib.reshape(P, -1) * suffix).sum(-1)
                if observe is not None:
                    observe("I_sum", total, **where)

    scale = R_E_SQ_M2 * setup.fluence_per_m2 / setup.steps
    value = total * scale
    capture_last = terms.capture_last  # last layer, first subpixel (spec §5.8)
    polar_first = terms.polar_first  # first surviving source (spec §5.5)
    omega_first = terms.omega_first  # first subpixel of layer 0 (spec §5.4)
    if not flags.oversample_thick:
        value = value * capture_last
    if not flags.oversample_polar:
        value = value * polar_first
    if not flags.oversample_omega:
        value = value * omega_first
    if observe is not None:
        observe("scale", torch.as_tensor(scale, dtype=setup.dtype))
        observe("capture_last", capture_last)
        observe("polarization_used", polar_first)
        observe("solid_angle_used", omega_first)
        observe("pixel_value", value)
    return value


def _observe_pixel_terms(observe: Observer, terms: _PixelTerms) -> None:
    observe("pixel_pos", terms.position)
    observe("diffracted", terms.diffracted)
    observe("airpath", terms.airpath)
    observe("solid_angle", terms.omega)
    observe("capture_fraction", terms.capture)
    observe("polarization", terms.polar)
    observe("scattering", terms.scattering)
    observe("source_cut", ~terms.survives if terms.survives is not None
            else torch.zeros(terms.polar.shape, dtype=torch.bool, device=terms.polar.device))


def _observe_block(observe: Observer, setup: Setup, hkl: Tensor, nearest: Tensor, latt_sq: Tensor,
                   F_cell: Tensor, contrib: Tensor, where: dict) -> None:
    observe("hkl", hkl, **where)
    observe("hkl0", nearest, **where)
    if setup.config.crystal.shape is CrystalShape.SQUARE:
        observe("F_latt_axes_sq", physics.sincg_squared(hkl - nearest, setup.lattice.N), **where)
    observe("F_latt_sq", latt_sq, **where)
    observe("F_cell", F_cell.expand_as(latt_sq), **where)
    observe("I_term", contrib, **where)


def restrict_pixels(setup: Setup, pixels: list[tuple[int, int]]) -> Setup:
    """The same setup rendering only the given (slow, fast) pixels, e.g. for tracing them."""
    from dataclasses import replace
    s = torch.as_tensor([p[0] for p in pixels], device=setup.device)
    f = torch.as_tensor([p[1] for p in pixels], device=setup.device)
    return replace(setup, pixels_s=s, pixels_f=f)


def _iteration_index(T: int, O: int, S: int, R: int, t: int, o: int, s_sl: slice, r_sl: slice,
                     P: int, device) -> Tensor:
    """(P, Sb, Rb) iteration index within each pixel, in nanoBragg's loop order (spec §5.1)."""
    s = torch.arange(s_sl.start, s_sl.stop, device=device)[:, None]
    r = torch.arange(r_sl.start, r_sl.stop, device=device)[None, :]
    within = ((t * O + o) * S + s) * R + r  # (Sb, Rb)
    return within.expand(P, -1, -1)


def _interp_allowed(setup: Setup, hkl: Tensor, interp: _InterpolationState, first_pixel: int,
                    per_pixel: int, within: Tensor) -> Tensor:
    """Where tricubic interpolation applies: inside the edge guard and before the global switch-off."""
    h, k, l = hkl.unbind(-1)
    ok = setup.structure.interpolable(h, k, l)
    if interp.cutoff is not None:
        pixel = torch.arange(within.shape[0], device=within.device)[:, None, None] + first_pixel
        ok = ok & (pixel * per_pixel + within < interp.cutoff)
    return ok


def _scan_interpolation_edge(setup: Setup, terms: _PixelTerms, first_pixel: int, per_pixel: int,
                             lanes: int, interp: _InterpolationState, projections: _Projections) -> None:
    """Find the first iteration of this chunk whose indices leave the interpolation box (spec §5.7)."""
    P, T, O = terms.airpath.shape
    S = terms.n_sources
    R = setup.orientations.shape[0]
    best = None
    for t in range(T):
        for o in range(O):
            for s_sl, r_sl in _blocks(S, R, lanes):
                shape = (3, s_sl.stop - s_sl.start, r_sl.stop - r_sl.start)
                hkl = _miller(terms.diffracted[:, t, o], projections.get(s_sl, r_sl, (0, 1, 2)), shape).movedim(1, -1)
                latt_sq = _lattice_sq(setup, hkl, hkl - torch.ceil(hkl - 0.5))
                reached = (terms.survives[:, t, o, s_sl, None].expand_as(latt_sq) if terms.survives is not None
                           else torch.ones_like(latt_sq, dtype=torch.bool))
                if setup.config.crystal.water_um == 0:
                    reached = reached & (latt_sq != 0)  # skipped iterations never look up F
                bad = reached & ~setup.structure.interpolable(*hkl.unbind(-1))
                if not bool(bad.any()):
                    continue
                within = _iteration_index(T, O, S, R, t, o, s_sl, r_sl, P, setup.device)
                pixel = torch.arange(P, device=setup.device)[:, None, None] + first_pixel
                index = torch.where(bad, pixel * per_pixel + within, torch.full_like(within, 2**62))
                candidate = int(index.min())
                best = candidate if best is None else min(best, candidate)
    if best is not None:
        interp.cutoff = best
        interp.cutoff_pixel = best // per_pixel


def simulate(config: SimulationConfig, *, device: torch.device | str = "cpu",
             dtype: torch.dtype = torch.float64, chunk_pixels: int | None = None,
             mode: str = "eager") -> Tensor:
    """Render the image nanoBragg would produce for ``config``.

    Args:
        config: the simulation.
        device: torch device for the computation (``"cpu"``, ``"cuda"``...).
        dtype: ``torch.float64`` (default, as nanoBragg) or ``torch.float32``.
        chunk_pixels: pixels per chunk (memory bound); None chooses automatically.
        mode: execution path, one of :data:`MODES`.

    Returns:
        (slow, fast) tensor of photons per pixel.
    """
    image, _ = render(prepare(config, device=device, dtype=dtype), chunk_pixels=chunk_pixels, mode=mode)
    return image


__all__ = ["MODES", "available_modes", "OBSERVED", "Observer", "RenderInfo", "Setup", "prepare", "render", "restrict_pixels", "simulate"]

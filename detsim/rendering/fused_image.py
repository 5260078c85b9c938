"""The fused whole-image path's plan: whether a setup fuses, and its packed parameters (spec §3.4, §5).

The fused path renders every pixel of an image in one kernel launch (:mod:`detsim.rendering.fused_kernel`):
each program owns a block of pixels and runs nanoBragg's loops (layer > subpixel > source > orientation)
in registers. Everything the kernel reads besides the pixel list is packed here, once per
:class:`~detsim.rendering.setup.Setup` (a setup is frozen), into four small device tensors:

    geometry   (GEOMETRY_FIELDS,)  detector, crystal counts and the finish factors' constants
    sources    (S, SOURCE_FIELDS)  incident direction, wavelength and the Kahn polarization frame per source
    axes       (R, 9)              crystal axes a, b, c (m) of every (phi step, mosaic domain) orientation
    table      (H*K*L,)            the HKL table, flattened (one 0 without a table)

and, where a setup has thread-first pixels (spec §4.7), their first sweep's orientations (R, 9) and their
positions in the pixel list (F,).

The pack is built with device ops from the setup's own tensors (no host read), so building it does not
wait for the device; a second render of the same setup reuses it and copies nothing, and so does the render of
a setup prepared again from the same cached host setup (:class:`detsim.rendering.setup_cache.Derived`). This module does
not import Triton.
"""

from __future__ import annotations

import math
import weakref
from dataclasses import dataclass

import torch
from torch import Tensor

from detsim.model.config import CrystalShape
from detsim.model.units import ANGSTROM
from detsim.rendering.paths import scale, sequential_flags
from detsim.rendering.setup import Setup, needs_grad

# Crystal shapes the kernel evaluates, as its SHAPE constant (spec §5.6); ROUND needs the sine and cosine
# of an unbounded argument (an out-of-line call in float64) and stays on today's path.
KERNEL_SHAPES = {CrystalShape.SQUARE: 0, CrystalShape.GAUSS: 2, CrystalShape.TOPHAT: 3}

# Where each value sits in the geometry vector.
PIX0, FDET, SDET, ODET = 0, 3, 6, 9  # (3,) each, m and unit vectors
PIXEL, SUBPIXEL, CLOSE_DISTANCE, LAYER_STEP = 12, 13, 14, 15  # m
CAPTURE_NEAR, CAPTURE_FAR = 16, 17  # -t dt mu and -(t+1) dt mu of the last layer t (spec §5.4)
CELLS = 18  # (3,) Na, Nb, Nc
DEFAULT_F, WATER_BG, SCALE, DMIN = 21, 22, 23, 24  # electrons, I_bg, r_e^2 Phi / steps, m
KAHN, FUDGE, CELLS_PRODUCT = 25, 26, 27  # polarization factor K, -fudge, Na Nb Nc
RECIPROCAL = 28  # (9,) rows a*, b*, c*, 1/A (spec §5.6)
DISTANCE, BEAM = 37, 38  # m, and the (3,) beam direction: the curved detector's (spec §3.4)
GEOMETRY_FIELDS = 41
SOURCE_FIELDS = 10  # incident (3), lambda (m), B_in (3), E_in (3) (spec §5.5)


@dataclass(frozen=True)
class FusedParams:
    """What the fused kernel reads besides the pixel list, on the setup's device, in its dtype."""

    geometry: Tensor  # (GEOMETRY_FIELDS,)
    sources: Tensor  # (S, SOURCE_FIELDS)
    axes: Tensor  # (R, 9)
    table: Tensor  # (H*K*L,) or (1,)
    table_box: tuple[int, int, int, int, int, int]  # h_min, k_min, l_min, h_range, k_range, l_range
    shape: int  # the kernel's SHAPE constant
    has_table: bool
    has_dmin: bool
    polar: int  # 0: the factor is 1 (-nopolar), 1: unpolarized, 2: with a Kahn factor
    sensor: bool  # a sensor model: the capture fraction is computed (else 1)
    point_pixel: bool
    curved: bool  # every subpixel at the sample distance (spec §3.4)
    first_axes: Tensor | None = None  # (R, 9) the thread-first pixels' first-sweep orientations (spec §4.7)
    first_positions: Tensor | None = None  # (F,) int32: where those pixels are in the setup's list; None: none


def unfused_reason(setup: Setup, observed: bool = False) -> str | None:
    """Why the fused whole-image kernel cannot render ``setup``, in a few words; None when it can."""
    cfg = setup.config
    if observed:
        return "observer"
    if needs_grad(setup):
        return "autograd"
    if setup.interpolate:
        return "interpolation"
    if sequential_flags(setup):
        return "-oversample_thick/_polar/_omega"
    if cfg.crystal.shape not in KERNEL_SHAPES:
        return f"crystal shape {cfg.crystal.shape.name}"
    if any(n != math.floor(n) or n < 1 for n in setup.cell_counts):
        return "non-integer cell count"
    return None


_CACHE: dict[int, tuple[weakref.ref, FusedParams]] = {}


def fused_params(setup: Setup) -> FusedParams:
    """The setup's packed parameters, built on its device at the first call and kept while it lives; for a
    setup prepared from the setup cache, kept with the cache entry (``setup.derived``) for every setup prepared
    from it on the same device: a configuration prepared again packs and copies nothing."""
    if setup.derived is not None:
        return setup.derived.get_or_make(("fused_params", setup.device), lambda: _pack(setup))
    key = id(setup)
    kept = _CACHE.get(key)
    if kept is not None and kept[0]() is setup:
        return kept[1]
    params = _pack(setup)
    _CACHE[key] = (weakref.ref(setup, lambda _, key=key: _CACHE.pop(key, None)), params)
    return params


def _pack(setup: Setup) -> FusedParams:
    cfg, geom = setup.config, setup.geometry
    dev, dtype = setup.device, setup.dtype
    T = setup.thickness.count
    N = setup.cell_counts
    constants = [  # Python floats, float64 on the host (the eager path's scalars)
        -(T - 1) * setup.thickness.step * setup.mu_per_m, -T * setup.thickness.step * setup.mu_per_m,
        *N, float(cfg.crystal.default_F), float(setup.water_bg), scale(setup), cfg.crystal.dmin_A * ANGSTROM,
        float(cfg.beam.polarization_kahn), float(cfg.crystal.fudge), N[0] * N[1] * N[2],
    ]
    scalars = torch.stack([geom.pixel_m, geom.pixel_m / setup.oversample, geom.close_distance_m,
                           torch.as_tensor(setup.thickness.step, dtype=dtype, device=dev)])
    geometry = torch.cat([geom.pix0_m, geom.fdet, geom.sdet, geom.odet, scalars.to(dtype),
                          torch.tensor(constants, dtype=torch.float64, device=dev).to(dtype),
                          setup.lattice.recip_A.reshape(9).to(dtype), geom.distance_m.reshape(1).to(dtype),
                          setup.frame.beam.to(dtype)]).detach()  # (GEOMETRY_FIELDS,)
    incident, lambda_m = setup.sources.incident, setup.sources.lambda_m
    b_in, e_in = _kahn_frame(setup.frame.polar.double(), incident.double())
    sources = torch.cat([incident, lambda_m[:, None], b_in.to(dtype), e_in.to(dtype)], dim=1).detach()  # (S, 10)
    axes = setup.orientations.reshape(-1, 9).detach().contiguous()  # (R, 9) rows a, b, c
    values = setup.structure.values
    structure = setup.structure
    table = values.detach().reshape(-1).contiguous() if values is not None else torch.zeros(1, dtype=dtype, device=dev)
    box = ((structure.h_min, structure.k_min, structure.l_min, *values.shape) if values is not None
           else (0, 0, 0, 0, 0, 0))
    first = setup.first_sweep
    first_axes = first_positions = None
    if first is not None and first.positions:
        first_axes = first.orientations.reshape(-1, 9).detach().to(dtype).contiguous()  # (R, 9) rows a, b, c
        first_positions = torch.tensor(first.positions, dtype=torch.int32, device=dev)  # (F,)
    beam = cfg.beam
    polar = 0 if beam.nopolar else (2 if beam.polarization_kahn != 0.0 else 1)
    return FusedParams(geometry=geometry, sources=sources, axes=axes, table=table, table_box=box,
                       shape=KERNEL_SHAPES[cfg.crystal.shape], has_table=values is not None,
                       has_dmin=cfg.crystal.dmin_A > 0, polar=polar, sensor=setup.thickness.range > 0,
                       point_pixel=cfg.detector.point_pixel, curved=cfg.detector.curved,
                       first_axes=first_axes, first_positions=first_positions)


def _kahn_frame(polar_axis: Tensor, incident: Tensor) -> tuple[Tensor, Tensor]:
    """(S, 3) B_in = unit(polar x i) and E_in = unit(i x B_in) of each source, float64 (spec §5.5)."""
    b_in = torch.linalg.cross(polar_axis.expand_as(incident), incident, dim=-1)
    b_in = b_in / torch.linalg.vector_norm(b_in, dim=-1, keepdim=True)
    e_in = torch.linalg.cross(incident, b_in, dim=-1)
    return b_in, e_in / torch.linalg.vector_norm(e_in, dim=-1, keepdim=True)


__all__ = ["FusedParams", "GEOMETRY_FIELDS", "KERNEL_SHAPES", "SOURCE_FIELDS", "fused_params", "unfused_reason"]

"""Per-pixel terms of a chunk: directions, solid angle, capture fraction, polarization, ``-dmin`` cut.

A chunk holds P pixels; each has T sensor layers of O = N_os**2 subpixels, lit by S sources. nanoBragg
evaluates the solid angle, polarization and capture fraction once per pixel (spec §5.4, §5.5, §5.8):
:class:`PixelTerms` holds those values in its ``*_first``/``*_last`` fields, and builds the full
per-subpixel tensors only where an ``-oversample_*`` flag, a ``-dmin`` cut or an observer needs them.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from detsim.model import physics
from detsim.model.units import ANGSTROM
from detsim.rendering.setup import Setup


@dataclass(frozen=True)
class PixelTerms:
    """Per-pixel quantities of one chunk of P pixels."""

    position: Tensor  # (P, T, O, 3) subpixel positions, m
    airpath: Tensor  # (P, T, O) distance from the sample, m
    diffracted: Tensor  # (P, T, O, 3) unit vectors
    omega_first: Tensor  # (P,) solid angle at the first subpixel of layer 0, sr
    capture_last: Tensor  # (P,) capture fraction of the last layer at its first subpixel
    polar_first: Tensor  # (P,) polarization at the first surviving source
    n_sources: int
    omega: Tensor | None = None  # (P, T, O) solid angle, sr
    capture: Tensor | None = None  # (P, T, O)
    polar: Tensor | None = None  # (P, T, O, S)
    survives: Tensor | None = None  # (P, T, O, S); None when -dmin cuts nothing in this chunk
    scattering: Tensor | None = None  # (P, T, O, S, 3) scattering vectors, 1/m

    def rows(self, pixels: slice) -> PixelTerms:
        """The terms of the pixels ``pixels`` of this chunk (views).

        The same values as :func:`pixel_terms` of those pixels alone, where ``survives`` is None (a
        -dmin cut is decided per chunk, so a cut chunk's pixels are not split).
        """
        if self.survives is not None:
            raise ValueError("a chunk that -dmin cuts is rendered whole")
        return PixelTerms(**{name: value[pixels] if isinstance(value, Tensor) else value
                             for name, value in vars(self).items()})


def pixel_terms(setup: Setup, position: Tensor, full: bool) -> PixelTerms:
    """Directions and per-pixel factors of a chunk; ``full`` builds every per-subpixel tensor.

    Args:
        position: (P, T, O, 3) subpixel positions, m (:func:`detsim.model.geometry.pixel_positions`).
    """
    flags = setup.config.sampling
    airpath = physics.norm(position)  # (P, T, O), m
    diffracted = position / airpath[..., None]  # (P, T, O, 3) unit vectors
    incident = setup.sources.incident  # (S, 3)
    scattering, survives = _source_cut(setup, diffracted, full)

    omega = _solid_angle(setup, airpath) if (full or flags.oversample_omega) else None
    capture = None
    if full or flags.oversample_thick:
        layer_index = torch.arange(setup.thickness.count, device=setup.device, dtype=setup.dtype)[None, :, None]  # (1,T,1)
        capture = _capture(setup, diffracted, layer_index, per_subpixel=True)
    polar = None
    if full or flags.oversample_polar or survives is not None:
        polar = _polarization(setup, diffracted[..., None, :], incident)  # (P, T, O, S)
        reached = survives if survives is not None else torch.ones_like(polar, dtype=torch.bool)  # (P, T, O, S)
        polar_first = first_evaluation(polar, reached)
    else:
        polar_first = _polarization(setup, diffracted[:, 0, 0], incident[0])
    return PixelTerms(
        position=position, airpath=airpath, diffracted=diffracted,
        omega_first=_solid_angle(setup, airpath[:, 0, 0]),
        capture_last=_capture(setup, diffracted[:, -1, 0], setup.thickness.count - 1),
        polar_first=polar_first, n_sources=incident.shape[0],
        omega=omega, capture=capture, polar=polar, survives=survives, scattering=scattering,
    )


def _source_cut(setup: Setup, diffracted: Tensor, full: bool) -> tuple[Tensor | None, Tensor | None]:
    """(scattering (P, T, O, S, 3) in 1/m, survives (P, T, O, S)) where ``-dmin`` or ``full`` needs them.

    ``survives`` is None without a cut, and when the cut spares the whole chunk (unless ``full``).
    """
    scattering = survives = None
    dmin_m = setup.config.crystal.dmin_A * ANGSTROM
    if full or dmin_m > 0:
        scattering = physics.scattering_vectors(diffracted, setup.sources.incident, setup.sources.lambda_m)
    if dmin_m > 0:
        survives = physics.survives_dmin(scattering, dmin_m)
        if bool(survives.all()) and not full:
            survives = None
    return scattering, survives


def _solid_angle(setup: Setup, airpath: Tensor) -> Tensor:
    """Solid angle of a (sub)pixel at distance ``airpath`` (m), sr (spec §5.4)."""
    geom = setup.geometry
    return physics.solid_angle(airpath, geom.pixel_m, geom.close_distance_m, setup.config.detector.point_pixel)


def _capture(setup: Setup, diffracted: Tensor, layer: Tensor | int, per_subpixel: bool = False) -> Tensor:
    """Fraction of the photons along ``diffracted`` absorbed in sensor ``layer`` (spec §5.8).

    Without a sensor nanoBragg starts from 1 and never recomputes, except under -oversample_thick,
    where it evaluates exp(0) - exp(0) = 0 (spec §5.4, §5.8).
    """
    if setup.thickness.range <= 0 and not (per_subpixel and setup.config.sampling.oversample_thick):
        return torch.ones(diffracted.shape[:-1], dtype=setup.dtype, device=setup.device)
    return physics.capture_fraction(physics.dot(diffracted, setup.geometry.odet), layer, setup.thickness.step,
                                    setup.mu_per_m)


def _polarization(setup: Setup, diffracted: Tensor, incident: Tensor) -> Tensor:
    """Polarization factor of the broadcast directions (spec §5.5).

    -nopolar only sets the starting value 1, which nanoBragg then keeps; under -oversample_polar it
    recomputes the factor at every source anyway.
    """
    beam = setup.config.beam
    if beam.nopolar and not setup.config.sampling.oversample_polar:
        shape = torch.broadcast_shapes(diffracted.shape, incident.shape)[:-1]
        return torch.ones(shape, dtype=setup.dtype, device=setup.device)
    diffracted, incident = torch.broadcast_tensors(diffracted, incident)
    return physics.polarization_factor(incident, diffracted, setup.frame.polar, beam.polarization_kahn)


def first_evaluation(values: Tensor, survives: Tensor) -> Tensor:
    """Value at the first surviving (layer, subpixel, source) of each pixel, 0 if none (spec §5.5).

    Args:
        values, survives: (P, T, O, S).
    """
    flat_ok = survives.reshape(survives.shape[0], -1)
    first = flat_ok.to(torch.uint8).argmax(dim=1)  # first True (0 when none)
    picked = values.reshape(values.shape[0], -1).gather(1, first[:, None])[:, 0]
    return torch.where(flat_ok.any(dim=1), picked, torch.zeros_like(picked))


__all__ = ["PixelTerms", "first_evaluation", "pixel_terms"]

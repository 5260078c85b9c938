"""Pure tensor kernels of the per-pixel physics (spec §5.4, §5.5, §6.1).

The lattice factor, every form of it, is :mod:`detsim.rendering.lattice_factor`.

Every function takes tensors and returns tensors, broadcasts over leading axes, keeps device and
dtype, and is differentiable. Nothing here knows about pixels, chunks or configuration.
"""

from __future__ import annotations

import torch
from torch import Tensor

from detsim.model.units import AVOGADRO, R_E_SQ_M2, WATER_F, WATER_MW_G_PER_MOL

def dot(a: Tensor, b: Tensor) -> Tensor:
    """Dot product over the last axis, broadcasting the others: (*, 3) . (*, 3) -> (*).

    Written as a matrix product: PyTorch's reduction over a last axis of 3 values is about 10x
    slower than BLAS on these shapes. Each result is a fixed-order sum of 3 products, so it does not
    depend on the thread count.
    """
    if b.dim() == 1:
        return a @ b
    if a.dim() == 1:
        return b @ a
    return (a * b) @ torch.ones(a.shape[-1], dtype=a.dtype, device=a.device)


def norm(v: Tensor) -> Tensor:
    """Euclidean length over the last axis, (*, 3) -> (*)."""
    return torch.sqrt(dot(v, v))


def scattering_vectors(diffracted: Tensor, incident: Tensor, lambda_m: Tensor) -> Tensor:
    """S = (d - i) / lambda, 1/m (spec §5.5): (*, 3) diffracted unit vectors against (S, 3) incident ones
    and their (S,) wavelengths, m -> (*, S, 3)."""
    return (diffracted[..., None, :] - incident) / lambda_m[:, None]


def survives_dmin(scattering: Tensor, dmin_m: float) -> Tensor:
    """(*) whether ``-dmin`` spares a source whose scattering vector is ``scattering`` (*, 3), 1/m: nanoBragg
    skips it when stol = |S| / 2 > 0 and dmin > 0.5 / stol (spec §5.5)."""
    stol = 0.5 * norm(scattering)  # sin(theta) / lambda, 1/m
    return ~((stol > 0) & (dmin_m > 0.5 / stol))


def polarization_factor(incident: Tensor, diffracted: Tensor, polar_axis: Tensor, kahn: float) -> Tensor:
    """Kahn polarization factor P = (1 + cos^2 2θ - K cos 2ψ sin^2 2θ) / 2 (spec §5.5).

    Args:
        incident: (*, 3) unit incident directions; diffracted: (*, 3) unit diffracted directions;
        polar_axis: (3,) unit polarization axis; kahn: K (0 for an unpolarized beam).
    """
    cos2t = dot(diffracted, incident)
    cos2t_sq = cos2t * cos2t
    factor = 1.0 + cos2t_sq
    if kahn != 0.0:
        b_in = torch.linalg.cross(polar_axis.expand_as(incident), incident, dim=-1)
        b_in = b_in / norm(b_in)[..., None]
        e_in = torch.linalg.cross(incident, b_in, dim=-1)
        e_in = e_in / norm(e_in)[..., None]
        psi = -torch.atan2(dot(diffracted, b_in), dot(diffracted, e_in))
        factor = factor - kahn * torch.cos(2.0 * psi) * (1.0 - cos2t_sq)
    return 0.5 * factor


def solid_angle(airpath_m: Tensor, pixel_m: Tensor, close_distance_m: Tensor, point_pixel: bool) -> Tensor:
    """Pixel solid angle: p^2/R^2 * close_distance/R, or 1/R^2 for a point pixel (spec §5.4)."""
    if point_pixel:
        return 1.0 / (airpath_m * airpath_m)
    return pixel_m * pixel_m / airpath_m / airpath_m * close_distance_m / airpath_m  # nanoBragg.c L2724's order


def capture_fraction(cos_incidence: Tensor, layer: int | Tensor, thickstep_m: float, mu_per_m: float) -> Tensor:
    """Fraction of photons absorbed in sensor layer ``layer`` (spec §5.4).

    Args:
        cos_incidence: (*) d . odet, the inverse path-length factor through the sensor.
        layer: layer index t (an int, or a tensor broadcastable with ``cos_incidence``).
    """
    return (torch.exp(-layer * thickstep_m * mu_per_m / cos_incidence)
            - torch.exp(-(layer + 1) * thickstep_m * mu_per_m / cos_incidence))


def water_background(water_m: float, fluence_per_m2: float) -> float:
    """I_bg, the starting value of every pixel's sum (spec §6.1): a water cube of side ``water_m``."""
    return (WATER_F * WATER_F * R_E_SQ_M2 * fluence_per_m2 * water_m ** 3 * 1e6 * AVOGADRO
            / WATER_MW_G_PER_MOL)

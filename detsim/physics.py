"""Pure tensor kernels of the per-pixel physics (spec §5.4-§5.6, §6.1).

Every function takes tensors and returns tensors, broadcasts over leading axes, keeps device and
dtype, and is differentiable. Nothing here knows about pixels, chunks or configuration.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor

from detsim.units import AVOGADRO, R_E_SQ_M2, WATER_F, WATER_MW_G_PER_MOL

ROUND_SCALE = 0.723601254558268  # sqrt of the cube/sphere volume ratio used by nanoBragg (spec §5.6)
GAUSS_WIDTH = 0.63
TOPHAT_RADIUS_SQ = 0.3969


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


def _safe(x: Tensor, is_zero: Tensor) -> Tensor:
    """``x`` with exact zeros replaced by 1, so a masked division has finite gradients."""
    return torch.where(is_zero, torch.ones_like(x), x)


def sincg_squared(frac: Tensor, N: Tensor) -> Tensor:
    """Squared grating function ``(sin(N pi h) / sin(pi h))**2`` of a fractional index (spec §5.6).

    Args:
        frac: (*) ``h - round(h)``; because N is an integer count, the square of the grating function
            at ``h`` equals its value at the reduced index, which keeps float32 accurate far from h=0.
        N: (*) or () number of cells.

    Returns:
        (*) N**2 where ``frac == 0`` exactly (nanoBragg's only special case), else the ratio squared.
    """
    x = math.pi * frac
    zero = x == 0
    ratio = torch.sin(N * x) / torch.sin(_safe(x, zero))
    return torch.where(zero, N * N * torch.ones_like(x), ratio * ratio)


def sinc3(x: Tensor) -> Tensor:
    """Sphere transform ``3 (sin x / x - cos x) / x**2``, 1 at x == 0 (spec §5.6)."""
    zero = x == 0
    xs = _safe(x, zero)
    return torch.where(zero, torch.ones_like(x), 3.0 * (torch.sin(xs) / xs - torch.cos(xs)) / (xs * xs))


def lattice_square_sq(frac_hkl: Tensor, N: Tensor) -> Tensor:
    """F_latt**2 of a parallelepiped crystal: product over the axes with N > 1 (spec §5.6).

    Args:
        frac_hkl: (*, 3) fractional distance of h, k, l from the nearest integers.
        N: (3,) cells along a, b, c.
    """
    factors = sincg_squared(frac_hkl, N)
    return torch.where(N > 1, factors, torch.ones_like(factors)).prod(-1)


def lattice_round_sq(frac_hkl: Tensor, N: Tensor, fudge: float) -> Tensor:
    """F_latt**2 of an ellipsoidal crystal (spec §5.6)."""
    hrad_sq = (frac_hkl * frac_hkl * N * N).sum(-1)
    zero = hrad_sq == 0
    arg = math.pi * torch.sqrt(_safe(hrad_sq * fudge, zero))
    value = N.prod() * ROUND_SCALE * torch.where(zero, torch.ones_like(arg), sinc3(arg))
    return value * value


def reciprocal_distance_sq(frac_hkl: Tensor, recip_A: Tensor, N: Tensor) -> Tensor:
    """nanoBragg's rad* = |frac . (a*, b*, c*)|**2 * Na^2 Nb^2 Nc^2, in 1/A**2 (spec §5.6 [QUIRK]).

    Args:
        frac_hkl: (*, 3); recip_A: (3, 3) rows a*, b*, c* (1/A); N: (3,).
    """
    delta = frac_hkl @ recip_A  # (*, 3)
    return (delta * delta).sum(-1) * (N * N).prod()


def lattice_gauss_sq(rad_star_sq: Tensor, N: Tensor, fudge: float) -> Tensor:
    """F_latt**2 of the Gaussian spot model (spec §5.6)."""
    value = N.prod() * torch.exp(-rad_star_sq / GAUSS_WIDTH * fudge)
    return value * value


def lattice_tophat_sq(rad_star_sq: Tensor, N: Tensor, fudge: float) -> Tensor:
    """F_latt**2 of the flat-top spot model (spec §5.6)."""
    inside = (rad_star_sq * fudge < TOPHAT_RADIUS_SQ).to(rad_star_sq.dtype)
    value = N.prod() * inside
    return value * value


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

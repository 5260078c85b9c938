"""Crystal lattice: cell or MOSFLM matrix, misset, size, and per-step orientations (spec §4).

Convention:
    Real-space axes ``a, b, c`` are lab-frame vectors in metres; reciprocal axes ``a*, b*, c*`` stay in
    inverse Angstrom (spec §4.4). Matrices hold one axis per row: ``real_m[0] = a``. Orientations are
    stacked in nanoBragg's loop order, phi step outer and mosaic domain inner, so index
    ``i_phi * M + i_mosaic`` is one orientation (spec §4.7).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import torch
from torch import Tensor

from detsim.model import rng
from detsim.model.config import ConfigError, CrystalConfig, SamplingConfig
from detsim.model.rotation import cross3, dot3, norm3, rotate_axis, rotate_umat, rotate_xyz
from detsim.model.sampling import Steps, resolve_mosaic_domains, resolve_phi
from detsim.model.units import ANGSTROM, deg_to_rad, mm_to_m, wavelength_m


@dataclass(frozen=True)
class Lattice:
    """Crystal at phi = 0 without mosaicity (spec §4.4, §4.5)."""

    real_m: Tensor  # (3, 3) rows a, b, c in metres, after misset
    recip_A: Tensor  # (3, 3) rows a*, b*, c* in 1/Angstrom, after misset
    N: Tensor  # (3,) cells along a, b, c (>= 1)
    volume_A3: Tensor  # ()
    misset_rad: tuple[float, float, float]  # the misset applied (random misset resolved)


_cross, _norm = cross3, norm3


def _cell_reciprocal(cell, device, dtype) -> tuple[Tensor, Tensor, Tensor]:
    """Default-orientation reciprocal vectors (1/A), cell lengths (A) and volume from a cell (spec §4.1)."""
    t = [torch.as_tensor(v, dtype=dtype, device=device) for v in cell]
    a, b, c = t[:3]
    alpha, beta, gamma = (deg_to_rad(x) for x in t[3:])
    s = (alpha + beta + gamma) / 2
    skew = torch.abs(torch.sin(s) * torch.sin(s - alpha) * torch.sin(s - beta) * torch.sin(s - gamma))
    volume = 2.0 * a * b * c * torch.sqrt(skew)
    v_star = 1.0 / volume
    a_s, b_s, c_s = b * c * torch.sin(alpha) * v_star, c * a * torch.sin(beta) * v_star, a * b * torch.sin(gamma) * v_star
    cos_alpha_s = (torch.cos(beta) * torch.cos(gamma) - torch.cos(alpha)) / (torch.sin(beta) * torch.sin(gamma))
    cos_beta_s = (torch.cos(gamma) * torch.cos(alpha) - torch.cos(beta)) / (torch.sin(gamma) * torch.sin(alpha))
    cos_gamma_s = (torch.cos(alpha) * torch.cos(beta) - torch.cos(gamma)) / (torch.sin(alpha) * torch.sin(beta))
    sin_gamma_s = torch.clamp(c * v_star / a_s / b_s, max=1.0)
    zero = torch.zeros_like(a_s)
    recip = torch.stack([
        torch.stack([a_s, zero, zero]),
        torch.stack([b_s * cos_gamma_s, b_s * sin_gamma_s, zero]),
        torch.stack([c_s * cos_beta_s, c_s * (cos_alpha_s - cos_beta_s * cos_gamma_s) / sin_gamma_s,
                     c_s * volume / (a * b * c * sin_gamma_s)]),
    ])  # (3, 3) rows a*, b*, c*
    return recip, torch.stack([a, b, c]), volume


def build_lattice(crystal: CrystalConfig, lambda_A: float, *, device, dtype) -> Lattice:
    """Real and reciprocal axes after misset, and the cell counts N (spec §4.1-§4.5)."""
    lengths = volume = None
    if crystal.cell is not None:
        recip, lengths, volume = _cell_reciprocal(crystal.cell, device, dtype)
    if crystal.a_matrix is not None:
        # spec §4.2: rows of the file are x, y, z; columns a*, b*, c*; scaled by 1e-10 / lambda (m), as nanoBragg
        mat = torch.as_tensor(crystal.a_matrix, dtype=dtype, device=device).reshape(3, 3)
        recip = mat.T * (ANGSTROM / wavelength_m(torch.as_tensor(lambda_A, dtype=dtype, device=device)))  # L1892

    if crystal.misset_random:
        misset_t = [torch.as_tensor(v, dtype=dtype, device=device) for v in rng.random_misset_angles(crystal.misset_seed)]
    else:
        misset_t = [deg_to_rad(torch.as_tensor(v, dtype=dtype, device=device)) for v in crystal.misset_deg]
    misset = tuple(float(v.detach()) for v in misset_t)
    recip = rotate_xyz(recip, *misset_t)

    # spec §4.4: real axes from cross products of the reciprocal ones; -cell forces its own lengths.
    a_s, b_s, c_s = recip.unbind(0)
    bxc, cxa, axb = _cross(b_s, c_s), _cross(c_s, a_s), _cross(a_s, b_s)
    if lengths is not None:
        bxc = (lengths[0] / volume / _norm(bxc)) * bxc  # nanoBragg's vector_rescale
        cxa = (lengths[1] / volume / _norm(cxa)) * cxa
        axb = (lengths[2] / volume / _norm(axb)) * axb
        v_star = 1.0 / volume
    else:
        v_star = dot3(a_s, bxc)
    v_cell = 1.0 / v_star
    real_A = torch.stack([bxc, cxa, axb]) * v_cell  # (3, 3) rows a, b, c in Angstrom
    a, b, c = real_A.unbind(0)
    recip = torch.stack([_cross(b, c), _cross(c, a), _cross(a, b)]) * v_star
    real_m = real_A * ANGSTROM

    N = torch.stack([torch.as_tensor(n, dtype=dtype, device=device) for n in (crystal.Na, crystal.Nb, crystal.Nc)])
    sizes = mm_to_m(torch.as_tensor([float(x) for x in crystal.xtal_size_mm], dtype=dtype, device=device))
    axis_len = _norm(real_m)
    from_size = torch.ceil(sizes / axis_len)
    N = torch.where(sizes > 0, from_size, N)
    N = torch.clamp(N, min=1.0)
    return Lattice(real_m=real_m, recip_A=recip, N=N, volume_A3=v_cell, misset_rad=tuple(misset))


def clip_sizes_to_beam(crystal: CrystalConfig, beamsize_mm: float) -> CrystalConfig:
    """The beam clips the sample's y and z sizes (spec §1); returns an updated config."""
    x, y, z = crystal.xtal_size_mm
    if y <= beamsize_mm and z <= beamsize_mm:
        return crystal
    return replace(crystal, xtal_size_mm=(x, min(y, beamsize_mm), min(z, beamsize_mm)))


def phi_steps(sampling: SamplingConfig) -> Steps:
    """Resolved spindle sweep in radians (spec §5.3)."""
    osc = None if sampling.osc_deg is None else deg_to_rad(sampling.osc_deg)
    step = None if sampling.phistep_deg is None else deg_to_rad(sampling.phistep_deg)
    return resolve_phi(osc, step, sampling.phisteps)


def phi_angles(sampling: SamplingConfig, steps: Steps) -> list[float]:
    """Phi of each step, radians: phi0 + i*step, the start of each step (spec §5.3)."""
    phi0 = deg_to_rad(sampling.phi0_deg)
    return [phi0 + i * steps.step for i in range(steps.count)]


def effective_phi_angles(phis: list[float], stale_phi: bool) -> list[float]:
    """The rotation nanoBragg actually applies at each step (spec §4.7).

    At a step where phi == 0 exactly, nanoBragg keeps the previous step's rotated axes; at step 0 that is
    the last step of the previous sweep (for all but each thread's first pixel). With ``stale_phi``
    False the physically meant phi is used.
    """
    if not stale_phi:
        return list(phis)
    effective = list(phis)
    last = 0.0
    for phi in phis:  # orientation left over from the previous sweep
        if phi != 0.0:
            last = phi
    for i, phi in enumerate(phis):
        if phi == 0.0:
            effective[i] = last
        last = effective[i]
    return effective


def mosaic_matrices(crystal: CrystalConfig, *, device, dtype) -> Tensor:
    """(M, 3, 3) domain rotations; domain 0 is the identity (spec §4.6)."""
    spread = deg_to_rad(crystal.mosaic_spread_deg)
    domains = resolve_mosaic_domains(spread, crystal.mosaic_domains)
    if spread <= 0:
        return torch.eye(3, dtype=dtype, device=device)[None]
    umats = rng.mosaic_umats(spread, domains, crystal.mosaic_seed)
    return torch.as_tensor(umats, dtype=dtype, device=device)


def orientations(lattice: Lattice, spindle: Tensor, phis_rad: list[float], umats: Tensor) -> Tensor:
    """Real axes for every (phi step, mosaic domain), phi first then mosaic (spec §4.7).

    Returns:
        (R, 3, 3) with R = n_phi * M; entry ``[i_phi * M + m]`` holds rows a, b, c in metres.
    """
    real = lattice.real_m
    phi = torch.as_tensor(phis_rad, dtype=real.dtype, device=real.device)  # (Φ,)
    rotated = rotate_axis(real[None, :, :], spindle.expand(len(phis_rad), 3, 3),
                          phi[:, None].expand(len(phis_rad), 3))  # (Φ, 3, 3)
    rotated = torch.where((phi == 0)[:, None, None], real[None], rotated)
    oriented = rotate_umat(umats[None, :, None], rotated[:, None])  # (Φ, M, 3, 3): U_m applied to each axis
    return oriented.reshape(-1, 3, 3)


def auto_oversample(lattice: Lattice, lambda_A: float, distance_m: float, pixel_m: float) -> int:
    """Recommended subpixels per axis: ceil(3 * crystal size / reciprocal pixel size) (spec §4.5)."""
    size_max = float((torch.linalg.vector_norm(lattice.real_m, dim=-1) * lattice.N).max().detach())
    reciprocal_pixel = wavelength_m(lambda_A) * distance_m / pixel_m
    ratio = 3.0 * size_max / reciprocal_pixel if reciprocal_pixel > 0 else math.inf
    if not math.isfinite(ratio):
        raise ConfigError(
            f"automatic oversampling is not finite (crystal size {size_max:g} m over reciprocal pixel "
            f"{reciprocal_pixel:g}): check -cell/-mat, -N, -lambda, -distance and -pixel, or give -oversample"
        )
    return max(math.ceil(ratio), 1)

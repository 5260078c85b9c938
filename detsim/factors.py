"""The two factors of an iteration's intensity F_cell² F_latt², for a block of lanes (spec §5.6, §5.7).

Shapes: ``hkl`` and ``nearest`` are (P, Sb, Rb, 3) fractional and nearest-integer Miller indices of a
block; the factors are (P, Sb, Rb).
"""

from __future__ import annotations

import torch
from torch import Tensor

from detsim import physics
from detsim.config import CrystalShape
from detsim.prepared import Setup


def lattice_sq(setup: Setup, hkl: Tensor, frac: Tensor) -> Tensor:
    """F_latt**2 for the configured crystal shape (spec §5.6); (P, Sb, Rb).

    Args:
        frac: (P, Sb, Rb, 3) ``hkl - nearest``, the offset from the nearest reflection.
    """
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


def cell(setup: Setup, hkl: Tensor | None, nearest: Tensor, interp_mask: Tensor | None) -> Tensor:
    """F_cell (spec §5.7), (P, Sb, Rb); interpolated where ``interp_mask`` is True.

    ``hkl`` is needed only with an ``interp_mask``.
    """
    h0, k0, l0 = nearest.unbind(-1)
    F = setup.structure.nearest(h0, k0, l0)
    if interp_mask is not None and bool(interp_mask.any()):
        h, k, l = hkl.unbind(-1)
        F = torch.where(interp_mask, setup.structure.tricubic(h, k, l), F)
    return F


__all__ = ["cell", "lattice_sq"]

"""Fused inner loop of the common case, written once for ``torch.compile`` (and Triton) to fuse.

The common case is a parallelepiped crystal with a constant structure factor (``-default_F``, no HKL
table), no ``-dmin`` cut and no ``-oversample_*`` flag. Then a pixel's sum over sources and
orientations needs only the Miller indices and the grating function (spec §5.6), and the whole
computation fuses into one pass with no temporaries.

Convention:
    ``d`` holds unit diffracted directions (P, 3); ``B`` (3, J, L) and ``C`` (J, L) project them to
    Miller indices ``h[p, j, l] = d[p] . B[:, j, l] - C[j, l]`` for J crystal axes and L lanes
    (source x orientation pairs); see :class:`detsim.lanes.Projections`.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def square_lattice_lane_sum(d: Tensor, B: Tensor, C: Tensor, N: Tensor) -> Tensor:
    """Sum over lanes of F_latt**2 for a parallelepiped crystal (spec §5.6).

    Args:
        d: (P, 3) unit diffracted directions.
        B: (3, J, L) and C: (J, L) the block's projection to Miller indices.
        N: (J,) cells along each axis used.

    Returns:
        (P,) sum over the L lanes of the product over axes of sin^2(N pi h) / sin^2(pi h).
    """
    h = d[:, 0, None, None] * B[0] + d[:, 1, None, None] * B[1] + d[:, 2, None, None] * B[2] - C  # (P, J, L)
    x = (h - torch.round(h)) * math.pi  # reduced index: the squared grating is periodic in h
    den = torch.sin(x)
    ratio = torch.sin(x * N[:, None]) / den
    squared = torch.where(den == 0, (N * N)[:, None], ratio * ratio)
    return squared.prod(1).sum(-1)


_COMPILED: dict[str, object] = {}


def compiled_square_lattice_lane_sum():
    """The ``torch.compile``d :func:`square_lattice_lane_sum` (built on first use, then cached)."""
    if "square" not in _COMPILED:
        _COMPILED["square"] = torch.compile(square_lattice_lane_sum, dynamic=True)
    return _COMPILED["square"]

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
from typing import Callable

import torch
from torch import Tensor

from detsim.grating import chebyshev_u_coefficients, uses_chebyshev


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


def chebyshev_lane_sum(counts: tuple[int, ...]) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """:func:`square_lattice_lane_sum` for integer cell counts known in advance, each in 1..8.

    sin(N x) / sin(x) = U_{N-1}(cos x) (:mod:`detsim.grating`): one cosine and a few multiply-adds per
    axis instead of two sines, a division and the 0/0 case (the polynomial gives N at x == 0). The
    returned function takes the same arguments; its ``N`` must hold ``counts``.
    """
    polynomials = tuple((n - 1, tuple(chebyshev_u_coefficients(n - 1))) for n in counts)  # (degree, coefficients)

    def lane_sum(d: Tensor, B: Tensor, C: Tensor, N: Tensor) -> Tensor:
        product = None
        for j, (degree, coefficients) in enumerate(polynomials):  # each axis's index alone: nothing to store
            h = d[:, 0, None] * B[0, j] + d[:, 1, None] * B[1, j] + d[:, 2, None] * B[2, j] - C[j]  # (P, L)
            c = torch.cos((h - torch.round(h)) * math.pi)  # reduced index: the squared grating is periodic in h
            u = _chebyshev_u(c, degree, coefficients)
            product = u if product is None else product * u
        return (product * product).sum(-1)
    return lane_sum


def _chebyshev_u(c: Tensor, n: int, coefficients: tuple[float, ...]) -> Tensor:
    """U_n(c) by Horner's rule in c**2 (``coefficients``: :func:`chebyshev_u_coefficients`), out of place."""
    if n == 0:
        return torch.ones_like(c)
    c_sq = c * c
    u = torch.full_like(c, coefficients[0])
    for a in coefficients[1:]:
        u = u * c_sq + a
    return c * u if n % 2 else u


_COMPILED: dict[object, object] = {}


def compiled_square_lattice_lane_sum(N: list[float]):
    """The ``torch.compile``d lane sum for cell counts ``N`` (built on first use, then cached): the
    Chebyshev form (:func:`chebyshev_lane_sum`) where the counts allow it, else
    :func:`square_lattice_lane_sum`."""
    if uses_chebyshev(N):
        counts = tuple(int(n) for n in N)
        if counts not in _COMPILED:
            _COMPILED[counts] = torch.compile(chebyshev_lane_sum(counts), dynamic=True)
        return _COMPILED[counts]
    if "square" not in _COMPILED:
        _COMPILED["square"] = torch.compile(square_lattice_lane_sum, dynamic=True)
    return _COMPILED["square"]

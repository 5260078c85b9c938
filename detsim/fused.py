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
from functools import partial
from typing import Callable

import torch
from torch import Tensor

from detsim.grating import CHEBYSHEV_MAX_N, chebyshev_u_coefficients, uses_chebyshev

CHEBYSHEV_TERMS = (CHEBYSHEV_MAX_N - 1) // 2 + 1  # coefficients of U_{N-1} in c**2 for the largest N


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
    returned function takes the same arguments; its ``N`` must hold ``counts``. It calls
    :func:`padded_chebyshev_lane_sum` with the counts' polynomials, so one compiled graph serves every count.
    """
    return partial(_with_polynomials, padded_chebyshev_lane_sum, counts)


def chebyshev_polynomials(counts: tuple[int, ...]) -> tuple[list[list[float]], list[bool]]:
    """Each count's U_{N-1} as Horner coefficients in c**2, left-padded with zeros to
    :data:`CHEBYSHEV_TERMS` (a zero times anything finite, plus the next coefficient, is that coefficient
    exactly: the padding changes no bit), and whether a factor c is left over (N - 1 odd)."""
    coefficients = [chebyshev_u_coefficients(n - 1) for n in counts]
    return [[0.0] * (CHEBYSHEV_TERMS - len(k)) + k for k in coefficients], [(n - 1) % 2 == 1 for n in counts]


def padded_chebyshev_lane_sum(d: Tensor, B: Tensor, C: Tensor, K: Tensor, odd: Tensor) -> Tensor:
    """The Chebyshev lane sum with each axis's polynomial as data: ``K`` (J, CHEBYSHEV_TERMS) coefficients,
    ``odd`` (J,) bool (:func:`chebyshev_polynomials`); ``d``, ``B``, ``C`` as :func:`square_lattice_lane_sum`'s."""
    product = None
    for j in range(K.shape[0]):  # each axis's index alone: nothing to store
        h = d[:, 0, None] * B[0, j] + d[:, 1, None] * B[1, j] + d[:, 2, None] * B[2, j] - C[j]  # (P, L)
        c = torch.cos((h - torch.round(h)) * math.pi)  # reduced index: the squared grating is periodic in h
        c_sq = c * c
        u = K[j, 0] * c_sq + K[j, 1]
        for k in range(2, K.shape[1]):
            u = u * c_sq + K[j, k]
        u = torch.where(odd[j], c * u, u)
        product = u if product is None else product * u
    return (product * product).sum(-1)


def _with_polynomials(lane_sum, counts: tuple[int, ...], d: Tensor, B: Tensor, C: Tensor, N: Tensor) -> Tensor:
    """``lane_sum`` (:func:`padded_chebyshev_lane_sum`, compiled or not) with ``counts``' polynomials."""
    K, odd = chebyshev_polynomials(counts)
    return lane_sum(d, B, C, torch.tensor(K, dtype=d.dtype, device=d.device), torch.tensor(odd, device=d.device))


_COMPILED: dict[str, Callable[..., Tensor]] = {}
# Graphs one compiled function may hold: a graph per dtype, axis count (1..3) and block shape (one pixel, one
# lane), more than torch.compile's default of 8, past which it would run the rest uncompiled.
RECOMPILE_LIMIT = 32


def _compiled(name: str, function: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``function`` under ``torch.compile`` (built on first use), called with room for its graphs."""
    if name not in _COMPILED:
        compiled = torch.compile(function, dynamic=True)

        def call(*args: Tensor) -> Tensor:
            with torch._dynamo.config.patch(recompile_limit=RECOMPILE_LIMIT):
                return compiled(*args)
        _COMPILED[name] = call
    return _COMPILED[name]


def compiled_square_lattice_lane_sum(N: list[float]) -> Callable[[Tensor, Tensor, Tensor, Tensor], Tensor]:
    """The ``torch.compile``d lane sum for cell counts ``N``: the Chebyshev form (:func:`chebyshev_lane_sum`)
    where the counts allow it, else :func:`square_lattice_lane_sum`."""
    if uses_chebyshev(N):
        return partial(_with_polynomials, _compiled("chebyshev", padded_chebyshev_lane_sum), tuple(int(n) for n in N))
    return _compiled("square", square_lattice_lane_sum)

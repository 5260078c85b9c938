"""The lattice factor F_latt² in every form an execution path takes, and F_cell for a block (spec §5.6, §5.7).

One home for the crystal's grating function, from the reference to the fused kernels:

* the differentiable reference (:func:`lattice_square_sq`, :func:`lattice_round_sq`, :func:`lattice_gauss_sq`,
  :func:`lattice_tophat_sq`): pure tensor functions of the fractional index, broadcasting over leading axes;
* a block of lanes for the configured crystal shape (:func:`lattice_sq`, with :func:`cell` for F_cell): the
  GENERAL path and the observed one. Shapes: ``hkl`` and ``nearest`` are (P, Sb, Rb, 3) fractional and
  nearest-integer Miller indices of a block; the factors are (P, Sb, Rb);
* the eager fast path's square grating, evaluated in place (:func:`square_grating_product_inplace`). For an
  integer cell count N, ``sin(N x) / sin(x) = U_{N-1}(cos x)`` (a Chebyshev polynomial of the second kind),
  so the squared grating needs one cosine and a few multiply-adds per axis instead of two sines, a division
  and a 0/0 special case: at ``x == 0`` the polynomial gives N, which is nanoBragg's special value. Past
  ``CHEBYSHEV_MAX_N`` the polynomial costs more passes than the two sines, and its coefficients (up to
  2**(N-1)) would start to cost accuracy, so larger counts use the ratio of sines. float64 always uses the
  sines, nanoBragg's own expression (:func:`polynomial_grating`). These functions overwrite their input and
  build no autograd graph: the engine calls them only where no gradient is needed;
* the compiled path's fused lane sum (:func:`compiled_square_lattice_lane_sum`), written once for
  ``torch.compile`` to fuse. It serves the common case: a parallelepiped crystal with a constant structure
  factor (``-default_F``, no HKL table), no ``-dmin`` cut and no ``-oversample_*`` flag, where a pixel's sum
  over sources and orientations needs only the Miller indices and the grating function, and the whole
  computation fuses into one pass with no temporaries. Convention: ``d`` holds unit diffracted directions
  (P, 3); ``B`` (3, J, L) and ``C`` (J, L) project them to Miller indices
  ``h[p, j, l] = d[p] . B[:, j, l] - C[j, l]`` for J crystal axes and L lanes (source x orientation pairs);
  see :class:`detsim.rendering.lane_blocks.Projections`.

The Triton kernel of the same lane sum is :mod:`detsim.rendering.lattice_factor_triton` (a module of its own:
importing it imports Triton).
"""

from __future__ import annotations

import functools
import math
from functools import partial
from typing import Callable

import torch
from torch import Tensor

from detsim.model.config import CrystalShape
from detsim.rendering.setup import Setup

ROUND_SCALE = 0.723601254558268  # sqrt of the cube/sphere volume ratio used by nanoBragg (spec §5.6)
GAUSS_WIDTH = 0.63
TOPHAT_RADIUS_SQ = 0.3969


# -- the differentiable reference: every crystal shape, any index ------------------------------------

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


# -- a block of lanes, for the configured shape (the GENERAL path) ----------------------------------

def lattice_sq(setup: Setup, hkl: Tensor, frac: Tensor) -> Tensor:
    """F_latt**2 for the configured crystal shape (spec §5.6); (P, Sb, Rb).

    Args:
        frac: (P, Sb, Rb, 3) ``hkl - nearest``, the offset from the nearest reflection.
    """
    crystal = setup.config.crystal
    N = setup.lattice.N
    if crystal.shape is CrystalShape.SQUARE:
        return lattice_square_sq(frac, N)
    if crystal.shape is CrystalShape.ROUND:
        return lattice_round_sq(frac, N, crystal.fudge)
    rad_sq = reciprocal_distance_sq(frac, setup.lattice.recip_A, N)
    if crystal.shape is CrystalShape.GAUSS:
        return lattice_gauss_sq(rad_sq, N, crystal.fudge)
    return lattice_tophat_sq(rad_sq, N, crystal.fudge)


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


# -- the eager fast path: the square grating evaluated in place ------------------------------------

CHEBYSHEV_MAX_N = 8  # U_{N-1} by Horner in cos^2 takes N // 2 multiply-add pairs; sines win beyond this


def chebyshev_u_coefficients(n: int) -> list[float]:
    """Coefficients of U_n in powers of c**2, leading first, with a factor c left over when n is odd.

    U_n(c) = sum_k (-1)**k C(n-k, k) (2c)**(n-2k), for k = 0 .. n // 2.
    """
    return [(-1) ** k * math.comb(n - k, k) * 2.0 ** (n - 2 * k) for k in range(n // 2 + 1)]


def chebyshev_u(c: Tensor, n: int) -> Tensor:
    """U_n(c) by Horner's rule in c**2; may overwrite ``c``."""
    if n == 0:
        return c.fill_(1.0)
    return monic_chebyshev_u(c, n).mul_(2.0 ** n)


@functools.lru_cache(maxsize=None)
def _monic_coefficients(n: int) -> tuple[float, ...]:
    """:func:`chebyshev_u_coefficients` divided by the leading one, 2**n: dyadic fractions, so exact."""
    return tuple(a / 2.0 ** n for a in chebyshev_u_coefficients(n))


def monic_chebyshev_u(c: Tensor, n: int) -> Tensor:
    """U_n(c) / 2**n by Horner's rule in c**2, for n >= 1; may overwrite ``c``.

    Every coefficient of U_n divided by its leading one, 2**n, is a dyadic fraction, so each Horner step
    rounds the same value as the step of U_n itself, scaled by 2**-n: the result is U_n(c)'s Horner value
    times 2**-n exactly, with the multiply by the leading coefficient left out (one pass fewer).
    """
    coefficients = _monic_coefficients(n)
    if n == 1:
        return c
    c_sq = c * c if n % 2 else c.mul_(c)  # an even U_n needs only c**2, so c's storage is reused
    u = torch.add(c_sq, coefficients[1])
    for a in coefficients[2:]:
        u.mul_(c_sq).add_(a)
    return c.mul_(u) if n % 2 else u


def _product_over_axes(x: Tensor) -> Tensor:
    """(P, J, ...) -> (P, ...) product over dim 1, as J - 1 multiplies (a strided reduction is slower)."""
    product = x[:, 0].clone() if x.shape[1] == 1 else x[:, 0] * x[:, 1]
    for j in range(2, x.shape[1]):
        product.mul_(x[:, j])
    return product


def uses_chebyshev(N: list[float]) -> bool:
    """Whether every count is an integer the Chebyshev form takes (1..CHEBYSHEV_MAX_N)."""
    return all(n == int(n) and 1 <= n <= CHEBYSHEV_MAX_N for n in N)


def polynomial_grating(N: list[float], dtype: torch.dtype) -> bool:
    """Whether the eager path evaluates the grating as the Chebyshev polynomial rather than as sines.

    float64 evaluates nanoBragg's own sincg, sin(N x) / sin(x) (nanoBragg.c L3291): near the grating's
    zeros the polynomial's value is some 1e-13 off it (relative), enough to move a float32 pixel by a unit,
    so float64 images would not be nanoBragg's bit for bit. Lower precisions take the polynomial.
    """
    return dtype != torch.float64 and uses_chebyshev(N)


def grating_scale(N: list[float], dtype: torch.dtype) -> float:
    """What :func:`scaled_grating_product_inplace` divides the product by: 2**sum(N - 1) for the Chebyshev
    form (the leading coefficients left out), else 1. A power of two, so the division is exact."""
    return 2.0 ** sum(int(n) - 1 for n in N) if polynomial_grating(N, dtype) else 1.0


def square_grating_product_inplace(h: Tensor, N: list[float]) -> Tensor:
    """Product over crystal axes of sin(N pi h) / sin(pi h), from fractional Miller indices.

    Args:
        h: (P, J, Sb, Rb) Miller indices along J crystal axes; overwritten.
        N: J cell counts, one per axis of ``h``.

    Returns:
        (P, Sb, Rb) the signed product; its square is F_latt**2 of a parallelepiped crystal.
    """
    product = scaled_grating_product_inplace(h, N)
    scale = grating_scale(N, h.dtype)
    return product.mul_(scale) if scale != 1.0 else product


def scaled_grating_product_inplace(h: Tensor, N: list[float]) -> Tensor:
    """:func:`square_grating_product_inplace` divided by ``grating_scale(N)``: the same roundings, exactly
    scaled by a power of two, one pass fewer. (P, J, Sb, Rb) -> (P, Sb, Rb); overwrites ``h``.

    In float64 the argument is pi*h on the full index, as nanoBragg computes it. In lower precision h is
    first reduced to h - round(h): the grating changes sign at most, which squaring removes, and the
    cosine or sines stay accurate far from the origin.
    """
    x = h
    if x.dtype != torch.float64:
        x = x.sub_(torch.round(x))
    x = x.mul_(math.pi)
    if polynomial_grating(N, x.dtype):
        x = x.cos_()
        if len(set(N)) == 1:
            return _product_over_axes(_monic_or_one(x, int(N[0]) - 1))
        for j, n in enumerate(N):  # axes with different counts (rare): one polynomial each
            x[:, j] = _monic_or_one(x[:, j], int(n) - 1)
        return _product_over_axes(x)
    den = torch.sin(x)
    N_col = torch.as_tensor(N, dtype=x.dtype, device=x.device).reshape(1, -1, 1, 1)
    ratio = x.mul_(N_col).sin_().div_(den)
    for j, n in enumerate(N):
        ratio[:, j].nan_to_num_(nan=n)  # 0/0 at h == 0 exactly: the limit N (spec §5.6)
    return _product_over_axes(ratio)


def _monic_or_one(c: Tensor, n: int) -> Tensor:
    """U_n(c) / 2**n; U_0 = 1."""
    return c.fill_(1.0) if n == 0 else monic_chebyshev_u(c, n)


# -- the compiled path: the fused lane sum, written once for torch.compile --------------------------

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

    sin(N x) / sin(x) = U_{N-1}(cos x) (:mod:`detsim.rendering.lattice_factor`): one cosine and a few multiply-adds per
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

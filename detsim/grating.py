"""The parallelepiped grating function of the eager fast path, evaluated in place (spec §5.6).

For an integer cell count N, ``sin(N x) / sin(x) = U_{N-1}(cos x)`` (a Chebyshev polynomial of the
second kind), so the squared grating needs one cosine and a few multiply-adds per axis instead of two
sines, a division and a 0/0 special case: at ``x == 0`` the polynomial gives N, which is nanoBragg's
special value. Past ``CHEBYSHEV_MAX_N`` the polynomial costs more passes than the two sines, and its
coefficients (up to 2**(N-1)) would start to cost accuracy, so larger counts use the ratio of sines.
float64 always uses the sines, nanoBragg's own expression (:func:`polynomial_grating`).

These functions overwrite their input and build no autograd graph: the engine calls them only where
no gradient is needed. :func:`detsim.physics.lattice_square_sq` is the differentiable reference.
"""

from __future__ import annotations

import functools
import math

import torch
from torch import Tensor

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

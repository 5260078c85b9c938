"""The in-place grating function of the eager fast path against its definition (spec §5.6)."""

from __future__ import annotations

import math

import pytest
import torch

from _tolerances import F64_ROUNDING, GRATING_PEAK_REL
from detsim import grating, physics


@pytest.mark.parametrize("n", range(0, grating.CHEBYSHEV_MAX_N))
def test_chebyshev_u_of_cosine_is_the_ratio_of_sines(n):
    x = torch.linspace(0.01, math.pi - 0.01, 997, dtype=torch.float64)  # avoids sin(x) == 0
    expected = torch.sin((n + 1) * x) / torch.sin(x)
    got = grating.chebyshev_u(torch.cos(x), n)
    torch.testing.assert_close(got, expected, rtol=0, atol=F64_ROUNDING * (n + 1))  # |U_n| <= n + 1


def _indices(dtype, device):
    """(P, 3, 2, 5) Miller indices: h == 0 exactly, half-integers, and a spread to |h| ~ 60."""
    generator = torch.Generator().manual_seed(5)
    h = (torch.rand(64, 3, 2, 5, generator=generator, dtype=torch.float64) - 0.5) * 120
    h[0] = 0.0
    h[2] = 0.5
    h[3, 0] = -12.5
    return h.to(dtype=dtype, device=device)


@pytest.mark.parametrize("N", [(5, 5, 5), (2, 5, 8), (1, 3, 4), (12, 12, 12), (5, 9, 3)],
                         ids=["equal", "unequal", "with-1", "sines", "mixed-sines"])
def test_squared_product_matches_the_differentiable_definition(N, dtype, device):
    h = _indices(dtype, device)
    N_t = torch.tensor(N, dtype=torch.float64, device=device)
    # the definition, in float64 on the same (possibly float32-rounded) indices
    h64 = h.double()
    expected = physics.lattice_square_sq((h64 - torch.round(h64)).movedim(1, -1), N_t)  # (P, 2, 5)
    got = grating.square_grating_product_inplace(h.clone(), [float(n) for n in N]).square()
    assert got.shape == expected.shape and got.dtype == dtype
    peak = math.prod(n * n for n in N)
    torch.testing.assert_close(got.double(), expected, rtol=0, atol=GRATING_PEAK_REL[dtype] * peak)
    assert torch.all(got[0] == peak)  # h == 0 exactly: the limit N per axis, not 0/0



def test_float64_takes_nanobraggs_ratio_of_sines_and_lower_precision_the_exact_polynomial():
    # sin(N pi h) / sin(pi h) is +-N at every integer h. nanoBragg's float64 ratio of sines is exact only
    # at h == 0 (both sines round to tiny, unrelated values elsewhere), and float64 renders its value, as
    # its images hold it; the polynomial form that lower precisions take is exact.
    values = [3.0, -7.0, 42.0]
    got = grating.square_grating_product_inplace(torch.tensor(values, dtype=torch.float64).reshape(1, 3, 1, 1),
                                                 [5.0, 5.0, 5.0]).square()
    nanobragg = math.prod((math.sin(math.pi * h * 5.0) / math.sin(math.pi * h)) ** 2 for h in values)
    assert float(got) == pytest.approx(nanobragg, rel=1e-12) and abs(float(got) - 5.0 ** 6) > 1e3
    assert not grating.polynomial_grating([5.0] * 3, torch.float64)
    got32 = grating.square_grating_product_inplace(torch.tensor(values).reshape(1, 3, 1, 1), [5.0] * 3).square()
    assert float(got32) == 5.0 ** 6

"""nanoBragg's vector helpers: each result is the double nanoBragg.c's helper computes."""

from __future__ import annotations

import math

import torch

from detsim.model.rotation import cross3, dot3, norm3, rotate_umat, unit


def _vectors(n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, 3, generator=g, dtype=torch.float64) - 0.5) * torch.logspace(-9, 9, n, dtype=torch.float64)[:, None]


def _c_dot(a, b) -> float:
    return (a[0] * b[0] + a[1] * b[1]) + a[2] * b[2]  # Python floats: separately rounded, left to right


def test_dot_and_cross_are_nanobraggs_left_to_right_sums_bit_for_bit():
    a, b = _vectors(500, 1), _vectors(500, 2)
    for x, y, d, c in zip(a.tolist(), b.tolist(), dot3(a, b).tolist(), cross3(a, b).tolist()):
        assert d == _c_dot(x, y)
        assert c == [x[1] * y[2] - x[2] * y[1], x[2] * y[0] - x[0] * y[2], x[0] * y[1] - x[1] * y[0]]


def test_norm_and_unit_take_the_square_root_of_that_sum():
    # nanoBragg's sqrt is correctly rounded; torch's float64 sqrt is one unit off it for about 1% of
    # arguments (torch 2.13 on x86-64), so only the sum under the root is pinned down here.
    a = _vectors(500, 1)
    assert torch.equal(norm3(a), torch.sqrt(dot3(a, a)))
    for x, n, u in zip(a.tolist(), norm3(a).tolist(), unit(a).tolist()):
        assert abs(n - math.sqrt(_c_dot(x, x))) <= math.ulp(n)
        assert u == [v / n for v in x]


def test_rotate_umat_applies_each_row_in_order():
    umats, v = _vectors(9, 3).reshape(3, 3, 3), _vectors(3, 4)
    got = rotate_umat(umats, v)
    for m in range(3):
        assert got[m].tolist() == [_c_dot(umats[m, r].tolist(), v[m].tolist()) for r in range(3)]


def test_a_fused_or_reordered_sum_would_differ_somewhere():
    a, b = _vectors(500, 1), _vectors(500, 2)
    reordered = a[:, 0] * b[:, 0] + (a[:, 1] * b[:, 1] + a[:, 2] * b[:, 2])
    assert not torch.equal(reordered, dot3(a, b))  # the order is what the tests above pin down

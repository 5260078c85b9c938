"""Right-handed rotations of lab-frame 3-vectors (spec §3.2).

All functions act on tensors of shape ``(*, 3)`` and broadcast angles of shape ``(*)``; they are
differentiable and keep the inputs' device and dtype.

Convention:
    ``rotate_xyz(v, rx, ry, rz)`` applies Rx first, then Ry, then Rz (v' = Rz Ry Rx v), with
    Rx = [[1,0,0],[0,c,-s],[0,s,c]], Ry = [[c,0,s],[0,1,0],[-s,0,c]], Rz = [[c,-s,0],[s,c,0],[0,0,1]].
    ``rotate_axis(v, u, phi)`` is Rodrigues' formula about the unit axis ``u``, right-handed.
"""

from __future__ import annotations

import torch
from torch import Tensor


def rotate_xyz(v: Tensor, rx: Tensor, ry: Tensor, rz: Tensor) -> Tensor:
    """Rotate ``v`` (*, 3) about lab x, then y, then z by the given angles (rad)."""
    x, y, z = v.unbind(-1)
    c, s = torch.cos(rx), torch.sin(rx)
    y, z = y * c - z * s, y * s + z * c
    c, s = torch.cos(ry), torch.sin(ry)
    x, z = x * c + z * s, -x * s + z * c
    c, s = torch.cos(rz), torch.sin(rz)
    x, y = x * c - y * s, x * s + y * c
    return torch.stack(torch.broadcast_tensors(x, y, z), dim=-1)


def rotate_axis(v: Tensor, axis: Tensor, phi: Tensor) -> Tensor:
    """Rotate ``v`` (*, 3) by ``phi`` (rad) about the unit vector ``axis`` (*, 3)."""
    cos_phi, sin_phi = torch.cos(phi), torch.sin(phi)
    dot = dot3(axis, v)[..., None] * (1.0 - cos_phi)[..., None]
    return axis * dot + v * cos_phi[..., None] + cross3(axis, v) * sin_phi[..., None]


# nanoBragg's vector helpers, operation for operation (nanoBragg.c L3972-L4041): separately rounded products
# summed left to right, as its build (no fused multiply-add) computes them; torch's reductions, norms,
# cross products and matrix products may sum in another order or fuse, one rounding away.

def dot3(a: Tensor, b: Tensor) -> Tensor:
    """``a . b`` over the last axis of 3, as nanoBragg's dot_product: (a0 b0 + a1 b1) + a2 b2."""
    return (a[..., 0] * b[..., 0] + a[..., 1] * b[..., 1]) + a[..., 2] * b[..., 2]


def cross3(x: Tensor, y: Tensor) -> Tensor:
    """``x × y`` over the last axis of 3, as nanoBragg's cross_product."""
    x0, x1, x2 = x.unbind(-1)
    y0, y1, y2 = y.unbind(-1)
    return torch.stack(torch.broadcast_tensors(x1 * y2 - x2 * y1, x2 * y0 - x0 * y2, x0 * y1 - x1 * y0), dim=-1)


def norm3(v: Tensor) -> Tensor:
    """``|v|`` over the last axis of 3, as nanoBragg's magnitude: sqrt of dot3(v, v)."""
    return torch.sqrt(dot3(v, v))


def unit(v: Tensor) -> Tensor:
    """``v / |v|`` along the last axis, as nanoBragg's unitize."""
    return v / norm3(v)[..., None]


def rotate_umat(umat: Tensor, v: Tensor) -> Tensor:
    """``umat @ v`` for (*, 3, 3) matrices and (*, 3) vectors, as nanoBragg's rotate_umat (row . v, in order)."""
    return dot3(umat, v[..., None, :])

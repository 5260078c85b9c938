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
    dot = (axis * v).sum(-1, keepdim=True) * (1.0 - cos_phi)[..., None]
    return axis * dot + v * cos_phi[..., None] + torch.linalg.cross(axis, v, dim=-1) * sin_phi[..., None]


def unit(v: Tensor) -> Tensor:
    """``v / |v|`` along the last axis."""
    return v / torch.linalg.vector_norm(v, dim=-1, keepdim=True)

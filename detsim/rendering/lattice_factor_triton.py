"""The lattice factor's fused lane sum as a Triton kernel (the same contract as :mod:`detsim.rendering.lattice_factor`'s), for CUDA.

Each program owns BLOCK_P pixels, walks the lanes (source x orientation pairs) BLOCK_L at a time and
keeps the running sum in registers: no atomics and no autotuning, so a launch is deterministic for a
given shape. On a CPU the kernel runs only under Triton's interpreter (``TRITON_INTERPRET=1`` set
before this module is imported), which is how the tests check it.
"""

from __future__ import annotations

import math

import torch
import triton
import triton.language as tl
from torch import Tensor

BLOCK_P = 64  # pixels per program
BLOCK_L = 32  # lanes per inner step


@triton.jit
def _square_lattice_kernel(d_ptr, b_ptr, c_ptr, n_ptr, out_ptr, P, L,
                           J: tl.constexpr, BLOCK_P: tl.constexpr, BLOCK_L: tl.constexpr):
    pid = tl.program_id(0)
    offs_p = pid * BLOCK_P + tl.arange(0, BLOCK_P)
    mask_p = offs_p < P
    dx = tl.load(d_ptr + offs_p * 3 + 0, mask=mask_p, other=0.0)
    dy = tl.load(d_ptr + offs_p * 3 + 1, mask=mask_p, other=0.0)
    dz = tl.load(d_ptr + offs_p * 3 + 2, mask=mask_p, other=0.0)
    acc = tl.zeros([BLOCK_P], dtype=dx.dtype)
    for l0 in range(0, L, BLOCK_L):
        offs_l = l0 + tl.arange(0, BLOCK_L)
        mask_l = offs_l < L
        prod = tl.full([BLOCK_P, BLOCK_L], 1.0, dtype=dx.dtype)
        for j in tl.static_range(J):
            bx = tl.load(b_ptr + (0 * J + j) * L + offs_l, mask=mask_l, other=0.0)
            by = tl.load(b_ptr + (1 * J + j) * L + offs_l, mask=mask_l, other=0.0)
            bz = tl.load(b_ptr + (2 * J + j) * L + offs_l, mask=mask_l, other=0.0)
            c = tl.load(c_ptr + j * L + offs_l, mask=mask_l, other=0.0)
            n = tl.load(n_ptr + j)
            h = dx[:, None] * bx[None, :] + dy[:, None] * by[None, :] + dz[:, None] * bz[None, :] - c[None, :]
            x = (h - tl.floor(h + 0.5)) * 3.141592653589793  # reduced index (ties do not matter when squared)
            den = tl.sin(x)
            ratio = tl.sin(x * n) / den
            prod = prod * tl.where(den == 0.0, n * n, ratio * ratio)
        prod = tl.where(mask_p[:, None] & mask_l[None, :], prod, 0.0)
        acc += tl.sum(prod, axis=1)
    tl.store(out_ptr + offs_p, acc, mask=mask_p)


def square_lattice_lane_sum(d: Tensor, B: Tensor, C: Tensor, N: Tensor) -> Tensor:
    """Same contract as :func:`detsim.rendering.lattice_factor.square_lattice_lane_sum`, computed by the Triton kernel."""
    d, B, C, N = (t.contiguous() for t in (d, B, C, N))
    P, J, L = d.shape[0], B.shape[1], B.shape[2]
    out = torch.empty(P, dtype=d.dtype, device=d.device)
    grid = (math.ceil(P / BLOCK_P),)
    _square_lattice_kernel[grid](d, B, C, N, out, P, L, J=J, BLOCK_P=BLOCK_P, BLOCK_L=BLOCK_L)
    return out

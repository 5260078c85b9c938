"""Planted non-determinism in Triton kernels, for the divergence tests.

Import only with ``TRITON_INTERPRET=1`` set on a machine without a GPU (the kernels then run on CPU
tensors in Triton's interpreter). Every function takes ``device``/``dtype`` keywords and returns a tensor.
"""

from __future__ import annotations

import itertools

import torch
import triton
import triton.language as tl

N = 48
BLOCK = 64


@triton.jit
def stale_read_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out = x + x[n]: reads one slot past the end of x, a counter the kernel itself bumps."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    stale = tl.load(x_ptr + n)
    tl.store(out_ptr + offs, x + stale, mask=mask)
    tl.store(x_ptr + n, stale + 1.0)


@triton.jit
def scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    """out = factor * x: deterministic."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) * factor, mask=mask)


@triton.jit
def block_sum_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    """out[0] += sum of one block per program: the rounding follows BLOCK, i.e. the grid."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.atomic_add(out_ptr, tl.sum(x, axis=0))


@triton.jit
def block_total_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    """out[0] = sum of x[0:BLOCK], no mask: reads every slot of a BLOCK-long buffer."""
    tl.store(out_ptr, tl.sum(tl.load(x_ptr + tl.arange(0, BLOCK)), axis=0))


# A scratch buffer whose first N slots are the kernel's input; slot N is state the hashes never see.
_WORKSPACE = torch.zeros(N + 1, dtype=torch.float32)
_INPUT = _WORKSPACE[:N]
_TUNED_BLOCKS = itertools.cycle([64, 16])  # an "autotuner" that picks another block size on every call


def _ramp():
    return torch.linspace(0.0, 1.0, N, dtype=torch.float32)


def stale_read(device="cpu", dtype=torch.float32):
    """A kernel reading a changing value (culprit), then a kernel and an op consuming its output (victims)."""
    _INPUT.copy_(_ramp())
    shifted = torch.empty(N, dtype=torch.float32)
    stale_read_kernel[(1,)](_INPUT, shifted, N, BLOCK=BLOCK)  # culprit
    scaled = torch.empty_like(shifted)
    scale_kernel[(1,)](shifted, scaled, N, 2.0, BLOCK=BLOCK)  # victim
    return torch.sqrt(scaled)


def retuned_sum(device="cpu", dtype=torch.float32):
    """A reduction whose block size (and grid) changes between calls, as with run-to-run autotuning."""
    g = torch.Generator().manual_seed(3)
    x = torch.rand(256, generator=g, dtype=torch.float32) * 1e3
    total = torch.zeros(1, dtype=torch.float32)
    block = next(_TUNED_BLOCKS)
    block_sum_kernel[(triton.cdiv(256, block),)](x, total, 256, BLOCK=block)  # culprit
    return total * 0.5


def steady(device="cpu", dtype=torch.float32):
    """Deterministic kernels writing into freshly allocated (uninitialised) buffers."""
    x = _ramp()
    out = torch.empty_like(x)
    scale_kernel[lambda meta: (triton.cdiv(N, meta["BLOCK"]),)](x, out, N, 3.0, BLOCK=16)
    return out.sum()


def padded_output(device="cpu", dtype=torch.float32):
    """A kernel's output buffer padded to a power of two: the tail is never written, and never used."""
    padded = torch.empty(BLOCK, dtype=torch.float32)
    scale_kernel[(1,)](_ramp(), padded, N, 2.0, BLOCK=BLOCK)
    head = padded[:N]
    return head.sum() + (padded[:N] > 0.5).sum()


def unmasked_total(device="cpu", dtype=torch.float32):
    """A kernel summing a power-of-two buffer of which only N slots were written: it reads the rest."""
    padded = torch.empty(BLOCK, dtype=torch.float32)
    padded[:N] = _ramp()
    total = torch.zeros(1, dtype=torch.float32)
    block_total_kernel[(1,)](padded, total, BLOCK=BLOCK)  # reads garbage
    return total * 0.5

"""The source x orientation loops in blocks of lanes, and their projection to Miller indices (spec §5.6).

Within one layer and subpixel, nanoBragg loops over S sources, then R orientations ((phi step, mosaic
domain) pairs, phi outer). A *lane* is one (pixel, source, orientation) iteration; a *block* is a
contiguous range of the flattened (source, orientation) loop (:func:`blocks`), evaluated for every
pixel of a chunk at once. A block's Miller indices come from one GEMM (:meth:`Projections.miller`), whose
result does not depend on the thread count.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import Tensor

from detsim.rendering.setup import Setup


def blocks(n_sources: int, n_orient: int, lanes: int) -> Iterator[tuple[slice, slice]]:
    """(source slice, orientation slice) blocks of at most ``lanes`` lanes, in loop order.

    Each block is a contiguous range of the flattened (source, orientation) iteration: either whole
    sources with every orientation, or part of one source's orientations.
    """
    if n_orient <= lanes:
        per = max(1, lanes // n_orient)
        for s in range(0, n_sources, per):
            yield slice(s, min(s + per, n_sources)), slice(0, n_orient)
    else:
        for s in range(n_sources):
            for r in range(0, n_orient, lanes):
                yield slice(s, s + 1), slice(r, min(r + lanes, n_orient))


def iteration_index(T: int, O: int, S: int, R: int, t: int, o: int, s_sl: slice, r_sl: slice,
                    P: int, device) -> Tensor:
    """(P, Sb, Rb) iteration index within each pixel, in nanoBragg's loop order (spec §5.1)."""
    s = torch.arange(s_sl.start, s_sl.stop, device=device)[:, None]
    r = torch.arange(r_sl.start, r_sl.stop, device=device)[None, :]
    within = ((t * O + o) * S + s) * R + r  # (Sb, Rb)
    return within.expand(P, -1, -1)


class Projections:
    """Per-block crystal axes turning diffracted directions into Miller indices (spec §5.6).

    nanoBragg computes the scattering vector S = (d - i) / lambda first, then h = a . S (nanoBragg.c L2756-L2758,
    L2809-L2811). :meth:`miller` does the same: S per pixel and source, then one GEMM with the block's axes,
    whose sums of three products differ from nanoBragg's by a rounding at most. (Rearranged as
    d . (a / lambda) - (a . i) / lambda, two terms of about |a| / lambda cancel to h and leave it some
    1e-14 off, enough to move a float32 pixel by a unit; float32 images, held to tolerances rather than bits,
    and the fused kernels use that one-GEMM form, :meth:`get`.)
    Built once per block and reused for every chunk, layer and subpixel.
    """

    def __init__(self, setup: Setup):
        self.setup = setup
        self._cache: dict[tuple, tuple[Tensor, Tensor]] = {}
        self._axes: dict[tuple, Tensor] = {}

    def axes(self, r_sl: slice, axes: tuple[int, ...]) -> Tensor:
        """(3, J*Rb) the block's crystal axes (m): column j*Rb + r holds axis ``axes[j]`` of orientation r."""
        key = (r_sl.start, r_sl.stop, axes)
        if key not in self._axes:
            orient = self.setup.orientations[r_sl][:, list(axes), :]  # (Rb, J, 3)
            self._axes[key] = orient.permute(2, 1, 0).reshape(3, -1)
        return self._axes[key]

    def miller(self, diffracted: Tensor, s_sl: slice, r_sl: slice, axes: tuple[int, ...]) -> Tensor:
        """(P, J, Sb, Rb) fractional Miller indices of a block (a strided view), from (P, 3) directions."""
        if diffracted.dtype != torch.float64:
            # float32 is held to tolerances, not to nanoBragg's bits: one GEMM, hkl = d @ B - C
            B, C = self.get(s_sl, r_sl, axes)
            if B.shape[1] <= 4:  # a product with few columns is several times slower in MKL than its transpose
                hkl = torch.addmm(C.t(), B.t(), diffracted.t(), beta=-1).t()
            else:
                hkl = torch.addmm(C, diffracted, B, beta=-1)
            return hkl.view(diffracted.shape[0], len(axes), s_sl.stop - s_sl.start, r_sl.stop - r_sl.start)
        sources = self.setup.sources
        S = (diffracted[:, None, :] - sources.incident[s_sl]).div_(sources.lambda_m[s_sl, None])  # (P, Sb, 3) 1/m
        P, Sb = S.shape[:2]
        A = self.axes(r_sl, axes)  # (3, J*Rb)
        flat = S.reshape(P * Sb, 3)
        # a product with few columns is several times slower in MKL than its transpose
        hkl = torch.mm(A.t(), flat.t()).t() if A.shape[1] <= 4 else torch.mm(flat, A)
        return hkl.view(P, Sb, len(axes), -1).permute(0, 2, 1, 3)

    def get(self, s_sl: slice, r_sl: slice, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
        """(B, C) of the fused kernels' form ``hkl = d @ B - C``: B (3, J*Sb*Rb), C (1, J*Sb*Rb)."""
        key = (s_sl.start, s_sl.stop, r_sl.start, r_sl.stop, axes)
        if key not in self._cache:
            orient = self.setup.orientations[r_sl][:, list(axes), :]  # (Rb, J, 3) axes a, b, c in m
            inv_lambda = 1.0 / self.setup.sources.lambda_m[s_sl]  # (Sb,) 1/m
            incident = self.setup.sources.incident[s_sl]  # (Sb, 3)
            B = orient.permute(2, 1, 0)[:, :, None, :] * inv_lambda[None, None, :, None]  # (3, J, Sb, Rb)
            C = torch.einsum("rjx,sx->jsr", orient, incident) * inv_lambda[None, :, None]  # (J, Sb, Rb)
            self._cache[key] = (B.reshape(3, -1), C.reshape(1, -1))
        return self._cache[key]


__all__ = ["Projections", "blocks", "iteration_index"]

"""The source x orientation loops in blocks of lanes, and their projection to Miller indices (spec §5.6).

Within one layer and subpixel, nanoBragg loops over S sources, then R orientations ((phi step, mosaic
domain) pairs, phi outer). A *lane* is one (pixel, source, orientation) iteration; a *block* is a
contiguous range of the flattened (source, orientation) loop (:func:`blocks`), evaluated for every
pixel of a chunk at once. A block's Miller indices come from one GEMM (:class:`Projections`,
:func:`miller`), whose result does not depend on the thread count.
"""

from __future__ import annotations

from typing import Iterator

import torch
from torch import Tensor

from detsim.prepared import Setup


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
    """Per-block matrices turning a diffracted direction into Miller indices with one GEMM.

    h = a . (d - i) / lambda = d . (a / lambda) - (a . i) / lambda, so for a block of Sb sources and Rb
    orientations ``hkl = d @ B - C`` with B of shape (3, J*Sb*Rb) and C of shape (1, J*Sb*Rb), J the
    crystal axes needed. Built once per block and reused for every chunk, layer and subpixel.
    """

    def __init__(self, setup: Setup):
        self.setup = setup
        self._cache: dict[tuple, tuple[Tensor, Tensor]] = {}
        self._augmented: dict[tuple, Tensor] = {}

    def get(self, s_sl: slice, r_sl: slice, axes: tuple[int, ...]) -> tuple[Tensor, Tensor]:
        """(B, C) for a block."""
        key = (s_sl.start, s_sl.stop, r_sl.start, r_sl.stop, axes)
        if key not in self._cache:
            orient = self.setup.orientations[r_sl][:, list(axes), :]  # (Rb, J, 3) axes a, b, c in m
            inv_lambda = 1.0 / self.setup.sources.lambda_m[s_sl]  # (Sb,) 1/m
            incident = self.setup.sources.incident[s_sl]  # (Sb, 3)
            B = orient.permute(2, 1, 0)[:, :, None, :] * inv_lambda[None, None, :, None]  # (3, J, Sb, Rb)
            C = torch.einsum("rjx,sx->jsr", orient, incident) * inv_lambda[None, :, None]  # (J, Sb, Rb)
            self._cache[key] = (B.reshape(3, -1), C.reshape(1, -1))
        return self._cache[key]

    def augmented(self, s_sl: slice, r_sl: slice, axes: tuple[int, ...]) -> Tensor:
        """(4, J*Sb*Rb) the rows of B over the row -C, so that ``[d, 1] @ A = d @ B - C`` in one GEMM."""
        key = (s_sl.start, s_sl.stop, r_sl.start, r_sl.stop, axes)
        if key not in self._augmented:
            B, C = self.get(s_sl, r_sl, axes)
            self._augmented[key] = torch.cat([B, -C])
        return self._augmented[key]


def miller(diffracted: Tensor, projection: tuple[Tensor, Tensor], shape: tuple[int, int, int]) -> Tensor:
    """Fractional Miller indices of a block (spec §5.6): one GEMM, deterministic across threads.

    Args:
        diffracted: (P, 3) unit vectors of one layer and subpixel.
        projection: (B, C) from :class:`Projections`.
        shape: (J, Sb, Rb) crystal axes, sources and orientations of the block.

    Returns:
        (P, J, Sb, Rb) indices along the requested crystal axes.
    """
    B, C = projection
    return torch.addmm(C, diffracted, B, beta=-1).view(diffracted.shape[0], *shape)  # d @ B - C


__all__ = ["Projections", "blocks", "iteration_index", "miller"]

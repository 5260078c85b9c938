"""nanoBragg's thread-first pixels: a thread's first sweep over phi starts from the unrotated crystal (spec §4.7).

nanoBragg rotates the crystal axes only at a phi step where phi != 0 (``ap = rotate(a0, phi)``); at
phi == 0 it keeps the axes the previous step left, which for every pixel but one is the last rotation of
the pixel before (:func:`detsim.model.crystal.effective_phi_angles`). The exception: each OpenMP thread's axes
(``firstprivate ap, bp, cp``) start as the unrotated crystal (nanoBragg.c sets ``ap = a`` before the pixel
loop, L2058-2062), so in the first sweep of the first pixel a thread renders - its first layer, subpixel
and source that ``-dmin`` does not skip; a pixel whose every source ``-dmin`` cuts sweeps nothing, and
leaves the first sweep to the next - a zero step before any non-zero one uses phi = 0 itself. OpenMP's
static schedule (GCC's ``schedule(auto)``) hands thread k the k-th of ``threads`` contiguous blocks of
detector rows, so which pixels start a thread depends on nanoBragg's thread count: with one thread only
the first rendered pixel, with two also the first of the second half of the rows.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable

import torch
from torch import Tensor


@dataclass(frozen=True)
class FirstSweep:
    """The pixels that start a nanoBragg thread, and the orientations of their first sweep."""

    orientations: Tensor  # (R, 3, 3) rows a, b, c (m), R = phi steps x mosaic domains, as Setup.orientations
    pixels: tuple[tuple[int, int], ...]  # (slow, fast) of each thread's first rendered pixel
    positions: tuple[int, ...]  # where those pixels are in the setup's list of rendered pixels (if at all)

    def restricted(self, pixels: list[tuple[int, int]]) -> "FirstSweep":
        """The same, for a setup that renders only ``pixels`` (in that order)."""
        firsts = set(self.pixels)
        return replace(self, positions=tuple(i for i, pixel in enumerate(pixels) if tuple(pixel) in firsts))


def first_sweep_phi_angles(phis: list[float]) -> list[float]:
    """The rotation a thread's first sweep applies at each step, radians: a zero step keeps the rotation
    before it, which before any non-zero step is none (phi = 0)."""
    effective, last = [], 0.0
    for phi in phis:
        last = phi if phi != 0.0 else last
        effective.append(last)
    return effective


def thread_rows(spixels: int, threads: int) -> list[range]:
    """The detector rows (slow index) of each of ``threads`` OpenMP threads under the static schedule:
    contiguous blocks, the first ``spixels % threads`` one row longer; threads without rows are left out."""
    threads = min(threads, spixels)  # the others get no row
    q, extra = divmod(spixels, threads)
    starts = [k * q + min(k, extra) for k in range(threads + 1)]
    return [range(lo, hi) for lo, hi in zip(starts, starts[1:]) if hi > lo]


def thread_pixels(pixels_s: Tensor, spixels: int, threads: int) -> list[range]:
    """Each thread's share of the rendered pixels (raster order, so ``pixels_s`` is sorted), as index ranges
    into them; threads that render no pixel are left out."""
    rows = thread_rows(spixels, threads)
    bounds = torch.as_tensor([r.start for r in rows] + [rows[-1].stop], dtype=pixels_s.dtype, device=pixels_s.device)
    at = torch.searchsorted(pixels_s, bounds).tolist()  # first rendered pixel at or after each block's start
    return [range(lo, hi) for lo, hi in zip(at, at[1:]) if hi > lo]


def thread_first_pixels(pixels_s: Tensor, pixels_f: Tensor, spixels: int, threads: int) -> tuple[int, ...]:
    """Where, in the rendered pixels (raster order, so ``pixels_s`` is sorted), each thread's first pixel is."""
    return tuple(share.start for share in thread_pixels(pixels_s, spixels, threads))


def first_swept(share: range, swept: Callable[[int, int], Tensor], batch: int) -> int | None:
    """The first pixel of a thread's ``share`` that sweeps phi at all: ``swept(start, stop)`` says, (P,) bool,
    which of the pixels ``start:stop`` have a layer, subpixel and source that -dmin does not cut (nanoBragg
    skips the others before their phi loop); None where none does."""
    for start in range(share.start, share.stop, batch):
        found = torch.nonzero(swept(start, min(start + batch, share.stop)))
        if found.numel():
            return start + int(found[0, 0])
    return None


__all__ = ["FirstSweep", "first_sweep_phi_angles", "first_swept", "thread_first_pixels", "thread_pixels",
           "thread_rows"]

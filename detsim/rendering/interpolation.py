"""nanoBragg's global switch of tricubic interpolation (spec §5.7).

With interpolation on, nanoBragg interpolates F_cell until the first iteration (pixel-major, loop order
within a pixel) whose Miller indices leave the box where the table can be interpolated; from there on,
for the rest of the image, it uses the nearest reflection. :func:`scan_edge` finds that iteration for a
chunk, :class:`InterpolationState` carries it across chunks, and :func:`allowed` says, per lane, whether
an iteration still interpolates.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from detsim.rendering.lane_blocks import Projections, blocks, iteration_index
from detsim.rendering.lattice_factor import lattice_sq
from detsim.rendering.pixel_terms import PixelTerms
from detsim.rendering.setup import Setup


@dataclass
class InterpolationState:
    """nanoBragg's global interpolation switch: off for good after the first out-of-range point (spec §5.7).

    ``cutoff`` is the global iteration index (pixel-major, loop order within a pixel) of that point;
    iterations before it interpolate.
    """

    enabled: bool
    cutoff: int | None = None
    cutoff_pixel: int | None = None  # index of the point's pixel in the setup's list of rendered pixels

    def switched_off_at(self, setup: Setup) -> tuple[int, int] | None:
        """(slow, fast) of the pixel where interpolation switched off, None if it never did."""
        if self.cutoff_pixel is None:
            return None
        return int(setup.pixels_s[self.cutoff_pixel]), int(setup.pixels_f[self.cutoff_pixel])


def allowed(setup: Setup, hkl: Tensor, interp: InterpolationState, first_pixel: int,
            per_pixel: int, within: Tensor) -> Tensor:
    """(P, Sb, Rb) where tricubic interpolation applies: inside the edge guard and before the switch-off.

    Args:
        hkl: (P, Sb, Rb, 3) fractional Miller indices of a block.
        first_pixel: index of the chunk's first pixel in the setup's list of rendered pixels.
        per_pixel: iterations per pixel.
        within: (P, Sb, Rb) iteration index within each pixel (:func:`detsim.rendering.lane_blocks.iteration_index`).
    """
    h, k, l = hkl.unbind(-1)
    ok = setup.structure.interpolable(h, k, l)
    if interp.cutoff is not None:
        pixel = torch.arange(within.shape[0], device=within.device)[:, None, None] + first_pixel  # (P, 1, 1)
        ok = ok & (pixel * per_pixel + within < interp.cutoff)
    return ok


def scan_edge(setup: Setup, terms: PixelTerms, first_pixel: int, per_pixel: int, lanes: int,
              interp: InterpolationState, projections: Projections) -> None:
    """Find the first iteration of this chunk whose indices leave the interpolation box (spec §5.7)."""
    P, T, O = terms.airpath.shape
    S = terms.n_sources
    R = setup.orientations.shape[0]
    best = None
    for t in range(T):
        for o in range(O):
            for s_sl, r_sl in blocks(S, R, lanes):
                hkl = projections.miller(terms.diffracted[:, t, o], s_sl, r_sl, (0, 1, 2)).movedim(1, -1)
                latt_sq = lattice_sq(setup, hkl, hkl - torch.ceil(hkl - 0.5))  # (P, Sb, Rb)
                reached = (terms.survives[:, t, o, s_sl, None].expand_as(latt_sq) if terms.survives is not None
                           else torch.ones_like(latt_sq, dtype=torch.bool))
                if setup.config.crystal.water_um == 0:
                    reached = reached & (latt_sq != 0)  # skipped iterations never look up F
                bad = reached & ~setup.structure.interpolable(*hkl.unbind(-1))  # (P, Sb, Rb)
                if not bool(bad.any()):
                    continue
                within = iteration_index(T, O, S, R, t, o, s_sl, r_sl, P, setup.device)
                pixel = torch.arange(P, device=setup.device)[:, None, None] + first_pixel  # (P, 1, 1)
                # (P, Sb, Rb) global iteration index of each lane that leaves the box, 2**62 elsewhere
                index = torch.where(bad, pixel * per_pixel + within, torch.full_like(within, 2**62))
                candidate = int(index.min())
                best = candidate if best is None else min(best, candidate)
    if best is not None:
        interp.cutoff = best
        interp.cutoff_pixel = best // per_pixel


__all__ = ["InterpolationState", "allowed", "scan_edge"]

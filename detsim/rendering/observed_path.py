"""The observed path: a chunk computed by the GENERAL maths path, its intermediates handed to an observer.

The engine owns the hook's protocol (:class:`Observer`) and the names it reports (:data:`OBSERVED`); a
diagnosis outside the engine implements it (per-pixel traces, :mod:`detsim.diagnostics.pixel_trace`), so the
engine never imports its diagnoses and never prints. When an observer is given to
:func:`detsim.rendering.engine.render`, every chunk runs :func:`observed_values`: the same functions as the
unobserved GENERAL path (:mod:`detsim.rendering.paths`), in the same order, with the observer called
between them: the observed pixel values are bit-identical to the GENERAL path's, and agree with the
image's (which another path may have summed) up to rounding.
"""

from __future__ import annotations

from typing import Protocol

import torch
from torch import Tensor

from detsim.model.config import CrystalShape
from detsim.rendering import lattice_factor
from detsim.rendering.paths import BlockTerms, Chunk, accumulate, chunk_blocks, cut, finish, general_terms, scale, start
from detsim.rendering.pixel_terms import PixelTerms

class Observer(Protocol):
    """``observe(name, tensor, **where)``: receives named intermediate tensors of a chunk (diagnosis hook).

    Called only when given to :func:`detsim.rendering.engine.render`; the names and shapes are listed in
    :data:`OBSERVED`. ``where`` holds the block's position in the sampling loops: ``layer``, ``subpixel``,
    ``sources`` and ``orientations`` (slices).
    """

    def __call__(self, name: str, tensor: Tensor, /, **where: slice) -> None: ...

OBSERVED = {
    "pixel_pos": "(P, T, O, 3) subpixel position, m",
    "diffracted": "(P, T, O, 3) unit vector from sample to subpixel",
    "airpath": "(P, T, O) sample-subpixel distance, m",
    "solid_angle": "(P, T, O) subpixel solid angle, sr",
    "capture_fraction": "(P, T, O) fraction absorbed in the subpixel's layer",
    "polarization": "(P, T, O, S) polarization factor",
    "scattering": "(P, T, O, S, 3) scattering vector, 1/m",
    "source_cut": "(P, T, O, S) True where -dmin skips the source",
    "hkl": "(P, Sb, Rb, 3) fractional Miller indices of a block",
    "hkl0": "(P, Sb, Rb, 3) nearest integer indices",
    "F_latt_axes_sq": "(P, Sb, Rb, 3) squared lattice factor per axis (square crystals)",
    "F_latt_sq": "(P, Sb, Rb) squared lattice factor",
    "F_cell": "(P, Sb, Rb) structure factor amplitude",
    "I_term": "(P, Sb, Rb) F_cell^2 F_latt^2 added by each iteration (0 where skipped)",
    "I_sum": "(P,) running sum after the block (starts at the water background)",
    "scale": "() r_e^2 * fluence / steps",
    "capture_last": "(P,) capture fraction applied at the end (last layer)",
    "polarization_used": "(P,) polarization applied at the end",
    "solid_angle_used": "(P,) solid angle applied at the end",
    "pixel_value": "(P,) final pixel value, photons",
}


def observed_values(chunk: Chunk, observe: Observer) -> Tensor:
    """(P,) pixel values of a chunk planned as observed (GENERAL path), reporting every intermediate."""
    _observe_pixel_terms(observe, chunk.terms)
    total = start(chunk)
    for block in chunk_blocks(chunk):
        terms = cut(chunk, general_terms(chunk, block), block)
        where = block.where()
        _observe_block(observe, chunk, terms, where)
        total = accumulate(chunk, total, terms, block)
        observe("I_sum", total, **where)
    value = finish(chunk.setup, chunk.terms, total)
    _observe_end(observe, chunk, value)
    return value


def _observe_pixel_terms(observe: Observer, terms: PixelTerms) -> None:
    observe("pixel_pos", terms.position)
    observe("diffracted", terms.diffracted)
    observe("airpath", terms.airpath)
    observe("solid_angle", terms.omega)
    observe("capture_fraction", terms.capture)
    observe("polarization", terms.polar)
    observe("scattering", terms.scattering)
    observe("source_cut", ~terms.survives if terms.survives is not None
            else torch.zeros(terms.polar.shape, dtype=torch.bool, device=terms.polar.device))


def _observe_block(observe: Observer, chunk: Chunk, terms: BlockTerms, where: dict) -> None:
    setup = chunk.setup
    observe("hkl", terms.hkl, **where)
    observe("hkl0", terms.nearest, **where)
    if setup.config.crystal.shape is CrystalShape.SQUARE:
        observe("F_latt_axes_sq", lattice_factor.sincg_squared(terms.hkl - terms.nearest, setup.lattice.N), **where)
    observe("F_latt_sq", terms.latt_sq, **where)
    F_cell = terms.F_cell
    if F_cell is None:  # a constant F: nanoBragg's default_F at every index
        F_cell = torch.full_like(terms.latt_sq, float(setup.config.crystal.default_F))
    observe("F_cell", F_cell.expand_as(terms.latt_sq), **where)
    observe("I_term", terms.contrib, **where)


def _observe_end(observe: Observer, chunk: Chunk, value: Tensor) -> None:
    setup, terms = chunk.setup, chunk.terms
    observe("scale", torch.as_tensor(scale(setup), dtype=setup.dtype))
    observe("capture_last", terms.capture_last)
    observe("polarization_used", terms.polar_first)
    observe("solid_angle_used", terms.omega_first)
    observe("pixel_value", value)


__all__ = ["OBSERVED", "Observer", "observed_values"]

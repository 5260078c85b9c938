"""The maths of one chunk of pixels: four paths to the same sum (spec §5.6-§5.8).

A pixel's value is ``I * scale`` times the per-pixel factors (capture fraction, polarization, solid
angle), where I starts at the water background and adds F_cell² F_latt² for every iteration of
nanoBragg's loops: layer t > subpixel o > source > orientation. A chunk runs those loops for its P
pixels at once, one :class:`Block` (a range of sources x orientations at one (t, o)) at a time. Each
:class:`Path` computes a block its own way:

    FUSED    (P,) lane sums by the fused kernel (detsim.rendering.lattice_factor under torch.compile, or detsim.rendering.lattice_factor_triton):
             square crystal, constant F, no -dmin cut, no -oversample_* flag; modes "compiled", "triton"
    GRATING  (P,) lane sums of the in-place grating product: the same case in eager mode
    SQUARE   (P, Sb, Rb) :class:`BlockTerms` of a square crystal without interpolation or autograd (with an
             HKL table, a -dmin cut or an -oversample_* flag)
    GENERAL  (P, Sb, Rb) :class:`BlockTerms` for any crystal shape, interpolation and autograd; the path an
             observer sees (:mod:`detsim.rendering.observed_path`)

:func:`plan_chunk` picks the path once per chunk; :func:`chunk_values` runs it. Terms are summed plainly,
or, under an ``-oversample_*`` flag, as nanoBragg's running products (:func:`accumulate`). Nothing here
observes or prints.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from enum import Enum
from typing import Callable, Iterator, NamedTuple

import torch
from torch import Tensor

from detsim.model.config import CrystalShape
from detsim.model.units import R_E_SQ_M2
from detsim.rendering import lattice_factor
from detsim.rendering.interpolation import InterpolationState, allowed
from detsim.rendering.lane_blocks import Projections, blocks, iteration_index
from detsim.rendering.pixel_terms import PixelTerms
from detsim.rendering.setup import Setup, needs_grad


class Path(Enum):
    """How a chunk computes its blocks (see the module docstring)."""

    FUSED = "fused"
    GRATING = "grating"
    SQUARE = "square"
    GENERAL = "general"


@dataclass(frozen=True)
class Chunk:
    """One chunk of P pixels and what every block of its loops shares."""

    setup: Setup
    terms: PixelTerms
    first_pixel: int  # index of the chunk's first pixel in the setup's list of rendered pixels
    interp: InterpolationState
    projections: Projections
    path: Path
    lanes: int  # source x orientation lanes per block
    axes: tuple[int, ...]  # crystal axes whose Miller index is computed
    N_axes: list[float]  # unit cells along each of ``axes``
    F_const_sq: float | None  # default_F², electrons²; None with an HKL table
    has_cut: bool  # -dmin cuts some source of some pixel of the chunk
    sequential: bool  # an -oversample_* flag is on: running products (spec §5.8)
    kernel: Callable[..., Tensor] | None = None  # the fused lane sum (FUSED path only)
    N_fused: Tensor | None = None  # (J,) ``N_axes`` as a tensor, for the kernel
    first_sweep: tuple[int, int, int] | None = None  # (t, o, s) of a lone thread-first pixel's first sweep
    first_projections: Projections | None = None  # that sweep's projections (spec §4.7; detsim.rendering.thread_first_sweep)

    @property
    def P(self) -> int:
        return self.terms.airpath.shape[0]

    @property
    def one_lane(self) -> bool:
        """Whether each block holds one lane per pixel: one source and one orientation."""
        return self.terms.n_sources * self.setup.orientations.shape[0] == 1

    @property
    def per_pixel(self) -> int:
        """Iterations per pixel, in loop order t, o, s, r."""
        _, T, O = self.terms.airpath.shape
        return T * O * self.terms.n_sources * self.setup.orientations.shape[0]


class Block(NamedTuple):
    """One step of a chunk's loops: layer t, subpixel o, sources s_sl x orientations r_sl."""

    t: int
    o: int
    s_sl: slice
    r_sl: slice
    d: Tensor  # (P, 3) unit diffracted directions at (t, o)
    projections: Projections  # the block's orientations turned into Miller indices (detsim.rendering.lane_blocks)

    @property
    def shape(self) -> tuple[int, int]:
        """(Sb, Rb) sources and orientations of the block."""
        return self.s_sl.stop - self.s_sl.start, self.r_sl.stop - self.r_sl.start

    def where(self) -> dict:
        """The block's position in the sampling loops, as an observer receives it."""
        return dict(layer=self.t, subpixel=self.o, sources=self.s_sl, orientations=self.r_sl)


@dataclass(frozen=True)
class BlockTerms:
    """A block's iterations, (P, Sb, Rb) each ((P, Sb, Rb, 3) for indices)."""

    latt_sq: Tensor  # F_latt²
    contrib: Tensor  # F_cell² F_latt² added to I, 0 where -dmin cuts the source
    hkl: Tensor | None = None  # fractional Miller indices (GENERAL path)
    nearest: Tensor | None = None  # nearest integer indices, ties down (spec §5.6)
    F_cell: Tensor | None = None  # structure factor, electrons; None with a constant F
    alive: Tensor | None = None  # False where -dmin cuts the source; None without a cut


def sequential_flags(setup: Setup) -> bool:
    """Whether an -oversample_thick/_polar/_omega flag makes the sum a running product (spec §5.8)."""
    flags = setup.config.sampling
    return flags.oversample_thick or flags.oversample_polar or flags.oversample_omega


def fusable(setup: Setup) -> bool:
    """Whether the fused inner loop (detsim.rendering.lattice_factor) can take every chunk of a render."""
    cfg = setup.config
    return (cfg.crystal.shape is CrystalShape.SQUARE and not setup.interpolate and not needs_grad(setup)
            and setup.structure.values is None and cfg.crystal.dmin_A == 0 and not sequential_flags(setup))


def plan_chunk(setup: Setup, terms: PixelTerms, first_pixel: int, interp: InterpolationState,
               projections: Projections, block_lanes: int, mode: str, observed: bool,
               first_sweep: Projections | None = None) -> Chunk:
    """The chunk's path and shared values; an ``observed`` chunk takes the GENERAL path.

    ``first_sweep``: for a chunk of one thread-first pixel, the projections of its first sweep's
    orientations (spec §4.7), used at its first layer, subpixel and source that -dmin does not cut.
    """
    P = terms.airpath.shape[0]
    sequential = sequential_flags(setup)
    has_cut = terms.survives is not None and not bool(terms.survives.all())
    table = setup.structure.values is not None
    fast = (not observed and setup.config.crystal.shape is CrystalShape.SQUARE and not interp.enabled
            and not needs_grad(setup))
    N = setup.cell_counts
    # Axes whose grating factor is not identically 1; without an F table only those need indices.
    axes = (0, 1, 2) if (table or not fast) else tuple(j for j in range(3) if N[j] > 1)
    N_axes = [N[j] for j in axes]
    if not fast:
        path = Path.GENERAL
    elif table or has_cut or sequential:
        path = Path.SQUARE
    elif mode != "eager" and axes:
        path = Path.FUSED
    else:
        path = Path.GRATING
    kernel = N_fused = None
    if path is Path.FUSED:
        kernel = _fused_kernel(mode, N_axes)
        N_fused = torch.as_tensor(N_axes, dtype=setup.dtype, device=setup.device)
    where = first_sweep_of(terms) if first_sweep is not None else None
    return Chunk(setup=setup, terms=terms, first_pixel=first_pixel, interp=interp, projections=projections,
                 path=path, lanes=max(1, block_lanes // max(P, 1)), axes=axes, N_axes=N_axes,
                 F_const_sq=None if table else float(setup.config.crystal.default_F) ** 2,
                 has_cut=has_cut, sequential=sequential, kernel=kernel, N_fused=N_fused,
                 first_sweep=where, first_projections=first_sweep if where is not None else None)


def first_sweep_of(terms: PixelTerms) -> tuple[int, int, int] | None:
    """(t, o, s) of a one-pixel chunk's first sweep over phi: its first layer, subpixel and source, in loop
    order, that -dmin does not cut (nanoBragg skips a cut source before its phi loop); None if all are cut."""
    if terms.airpath.shape[0] != 1:
        raise ValueError(f"a first sweep belongs to a chunk of one pixel, not {terms.airpath.shape[0]}")
    _, T, O = terms.airpath.shape
    if terms.survives is None:
        return 0, 0, 0
    alive = torch.nonzero(terms.survives[0].reshape(-1))  # (k, 1) flat (t, o, s) indices, loop order
    if not alive.numel():
        return None
    t_o, s = divmod(int(alive[0, 0]), terms.n_sources)
    return t_o // O, t_o % O, s


def _fused_kernel(mode: str, N_axes: list[float]) -> Callable[..., Tensor]:
    if mode == "compiled":
        return lattice_factor.compiled_square_lattice_lane_sum(N_axes)
    from detsim.rendering import lattice_factor_triton
    return lattice_factor_triton.square_lattice_lane_sum


def chunk_blocks(chunk: Chunk) -> Iterator[Block]:
    """The chunk's blocks in nanoBragg's loop order.

    A chunk with a first sweep has blocks of one source at most, so that the sweep's own orientations
    apply to its blocks alone.
    """
    _, T, O = chunk.terms.airpath.shape
    R = chunk.setup.orientations.shape[0]
    lanes = chunk.lanes if chunk.first_sweep is None else min(chunk.lanes, R)
    diffracted = chunk.terms.diffracted
    for t in range(T):
        for o in range(O):
            d = diffracted[:, t, o]  # (P, 3)
            for s_sl, r_sl in blocks(chunk.terms.n_sources, R, lanes):
                first = chunk.first_sweep == (t, o, s_sl.start)
                yield Block(t, o, s_sl, r_sl, d, chunk.first_projections if first else chunk.projections)


def start(chunk: Chunk) -> Tensor:
    """(P,) the sum I before any iteration: the water background."""
    setup = chunk.setup
    return torch.full((chunk.P,), setup.water_bg, dtype=setup.dtype, device=setup.device)


def chunk_values(chunk: Chunk) -> Tensor:
    """(P,) pixel values of a chunk, photons, by the chunk's path."""
    total = start(chunk)
    for block in chunk_blocks(chunk):
        if chunk.path is Path.FUSED:
            total.add_(fused_sum(chunk, block))
        elif chunk.path is Path.GRATING:
            total.add_(grating_sum(chunk, block))
        else:
            terms = square_terms(chunk, block) if chunk.path is Path.SQUARE else general_terms(chunk, block)
            total = accumulate(chunk, total, cut(chunk, terms, block), block)
    return finish(chunk.setup, chunk.terms, total)


def fused_sum(chunk: Chunk, block: Block) -> Tensor:
    """(P,) F² times the sum over the block's lanes of F_latt², by the fused kernel."""
    B, C = block.projections.get(block.s_sl, block.r_sl, chunk.axes)
    J = len(chunk.axes)
    return chunk.kernel(block.d, B.view(3, J, -1), C.view(J, -1), chunk.N_fused) * chunk.F_const_sq


def grating_sum(chunk: Chunk, block: Block) -> Tensor:
    """(P,) F² times the sum over the block's lanes of F_latt², eager.

    The lanes hold F_latt² / scale² (:func:`detsim.rendering.lattice_factor.scaled_grating_product_inplace`), scale a power
    of two: multiplying their sum by scale² gives the bits of the unscaled sum, and by scale² F² (exactly
    scale² times F²) those of that sum times F².
    """
    scale = lattice_factor.grating_scale(chunk.N_axes, chunk.setup.dtype) if chunk.axes else 1.0
    return _scaled_grating_sq(chunk, block).reshape(chunk.P, -1).sum(-1).mul_(scale * scale * chunk.F_const_sq)


def _grating_sq(chunk: Chunk, block: Block) -> Tensor:
    """(P, Sb, Rb) F_latt² of a square crystal without an HKL table: the product over axes with N > 1."""
    latt_sq = _scaled_grating_sq(chunk, block)
    scale = lattice_factor.grating_scale(chunk.N_axes, chunk.setup.dtype) if chunk.axes else 1.0
    return latt_sq.mul_(scale * scale) if scale != 1.0 else latt_sq


def _scaled_grating_sq(chunk: Chunk, block: Block) -> Tensor:
    """(P, Sb, Rb) :func:`_grating_sq` divided by the square of ``grating_scale(N)`` (a power of two)."""
    Sb, Rb = block.shape
    setup = chunk.setup
    if not chunk.axes:
        return torch.ones((chunk.P, Sb, Rb), dtype=setup.dtype, device=setup.device)
    hkl = block.projections.miller(block.d, block.s_sl, block.r_sl, chunk.axes)  # (P, J, Sb, Rb)
    return lattice_factor.scaled_grating_product_inplace(hkl, chunk.N_axes).square_()


def square_terms(chunk: Chunk, block: Block) -> BlockTerms:
    """A square crystal's block without interpolation or autograd (in-place grating product)."""
    if chunk.F_const_sq is not None:
        latt_sq = _grating_sq(chunk, block)
        return BlockTerms(latt_sq=latt_sq, contrib=latt_sq * chunk.F_const_sq)
    hkl = block.projections.miller(block.d, block.s_sl, block.r_sl, chunk.axes)  # (P, 3, Sb, Rb)
    nearest = torch.ceil(hkl - 0.5).movedim(1, -1)  # (P, Sb, Rb, 3) nanoBragg's rounding, ties down (spec §5.6)
    latt_sq = lattice_factor.square_grating_product_inplace(hkl, chunk.N_axes).square_()  # (P, Sb, Rb); overwrites hkl
    F_cell = lattice_factor.cell(chunk.setup, None, nearest, None)  # (P, Sb, Rb) electrons
    return BlockTerms(latt_sq=latt_sq, contrib=F_cell * F_cell * latt_sq, nearest=nearest, F_cell=F_cell)


def general_terms(chunk: Chunk, block: Block) -> BlockTerms:
    """Any crystal shape, with interpolation and autograd: every intermediate kept."""
    setup = chunk.setup
    hkl = block.projections.miller(block.d, block.s_sl, block.r_sl, chunk.axes).movedim(1, -1)  # (P, Sb, Rb, 3)
    nearest = torch.ceil(hkl - 0.5)  # ties round down (spec §5.6)
    latt_sq = lattice_factor.lattice_sq(setup, hkl, hkl - nearest)  # (P, Sb, Rb)
    if chunk.F_const_sq is not None and not chunk.interp.enabled:
        return BlockTerms(latt_sq=latt_sq, contrib=latt_sq * chunk.F_const_sq, hkl=hkl, nearest=nearest)
    mask = None
    if chunk.interp.enabled:
        _, T, O = chunk.terms.airpath.shape
        within = iteration_index(T, O, chunk.terms.n_sources, setup.orientations.shape[0], block.t, block.o,
                                 block.s_sl, block.r_sl, chunk.P, setup.device)
        mask = allowed(setup, hkl, chunk.interp, chunk.first_pixel, chunk.per_pixel, within)
    F_cell = lattice_factor.cell(setup, hkl, nearest, mask)
    return BlockTerms(latt_sq=latt_sq, contrib=F_cell * F_cell * latt_sq, hkl=hkl, nearest=nearest, F_cell=F_cell)


def cut(chunk: Chunk, terms: BlockTerms, block: Block) -> BlockTerms:
    """The block's terms with the sources that -dmin cuts zeroed (unchanged without a cut)."""
    if not chunk.has_cut:
        return terms
    alive = chunk.terms.survives[:, block.t, block.o, block.s_sl, None].expand_as(terms.contrib)
    return replace(terms, contrib=torch.where(alive, terms.contrib, torch.zeros_like(terms.contrib)), alive=alive)


def accumulate(chunk: Chunk, total: Tensor, terms: BlockTerms, block: Block) -> Tensor:
    """(P,) the sum I after the block: plain, or nanoBragg's running products under -oversample_*."""
    P = chunk.P
    if not chunk.sequential:
        return total + terms.contrib.reshape(P, -1).sum(-1)
    # spec §5.8 [QUIRK]: each iteration multiplies the whole running sum by the enabled factors.
    # Skipped iterations (cut source, or F_latt == 0 without water) multiply by 1.
    flags, pixel = chunk.setup.config.sampling, chunk.terms
    t, o = block.t, block.o
    factor = torch.ones_like(terms.contrib)  # (P, Sb, Rb)
    if flags.oversample_thick:
        factor = factor * pixel.capture[:, t, o, None, None]
    if flags.oversample_polar:
        factor = factor * pixel.polar[:, t, o, block.s_sl, None]
    if flags.oversample_omega:
        factor = factor * pixel.omega[:, t, o, None, None]
    water = chunk.setup.config.crystal.water_um != 0
    counted = terms.latt_sq != 0 if not water else torch.ones_like(terms.latt_sq, dtype=torch.bool)
    if terms.alive is not None:
        counted = counted & terms.alive
    factor = torch.where(counted, factor, torch.ones_like(factor)).reshape(P, -1)  # (P, Sb*Rb)
    suffix = torch.flip(torch.cumprod(torch.flip(factor, (1,)), 1), (1,))  # product of each lane's factor onwards
    return total * suffix[:, 0] + (terms.contrib.reshape(P, -1) * suffix).sum(-1)


def scale(setup: Setup) -> float:
    """r_e² x fluence / steps: from the sum I to photons per pixel (spec §5.1)."""
    return R_E_SQ_M2 * setup.fluence_per_m2 / setup.steps


def finish(setup: Setup, terms: PixelTerms, total: Tensor) -> Tensor:
    """(P,) pixel values, photons: the sum I scaled, times the factors no -oversample_* flag applied."""
    flags = setup.config.sampling
    value = total * scale(setup)
    if not flags.oversample_thick:
        value = value * terms.capture_last  # last layer, first subpixel (spec §5.8)
    if not flags.oversample_polar:
        value = value * terms.polar_first  # first surviving source (spec §5.5)
    if not flags.oversample_omega:
        value = value * terms.omega_first  # first subpixel of layer 0 (spec §5.4)
    return value


__all__ = ["Block", "BlockTerms", "Chunk", "Path", "accumulate", "chunk_blocks", "chunk_values", "cut", "finish",
           "first_sweep_of", "fusable", "general_terms", "plan_chunk", "scale", "start"]

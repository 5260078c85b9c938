"""The simulation engine: everything independent of the pixel once, then pixels in chunks (spec §5).

``prepare`` resolves a :class:`~detsim.model.config.SimulationConfig` into a :class:`Setup` (geometry,
sources, crystal orientations, step counts; :mod:`detsim.rendering.setup`); ``render`` accumulates the image.
Inside ``render`` the work for a chunk of P pixels is laid out as tensors over nanoBragg's sampling axes:

    (P, T, O, 3)      subpixel positions: T sensor layers, O = N_os**2 subpixels      (spec §3.4)
    (P, Sb, Rb, 3)    Miller indices for a block of Sb sources x Rb orientations      (spec §5.6)

where the R axis enumerates (phi step, mosaic domain) pairs, phi outer. Python loops run only over
layers, subpixels and blocks of the sampling axes, never over pixels. Each pixel's sum is accumulated
in a fixed order (block by block), so an image is bit-for-bit reproducible for a given chunk size,
dtype and device. A job is one chunk, or a few whole chunks whose per-pixel terms are computed together
(:func:`_grouped`). On a CPU, jobs run in several worker processes at once (:mod:`detsim.host.processes`;
threads, :mod:`detsim.host.threads`, where a process cannot fork); chunk and job sizes do not depend on the
worker count, so neither do the bits. The chunk size itself can change the last bits of float64 sums
(the vectorised ops' tails and a block's lanes depend on it), which is why it comes from the memory
plan alone.

A chunk goes through three stages, each in its own module: per-pixel terms (:mod:`detsim.rendering.pixel_terms`),
the sum over the sampling loops by one of four maths paths (:mod:`detsim.rendering.paths`), and, only when
an observer is given, the observed path that reports the intermediates (:mod:`detsim.rendering.observed_path`,
which defines the hook's protocol; the diagnoses that implement it, :mod:`detsim.diagnostics`, sit outside
the engine and import it, never the other way).

The engine never prints: progress goes to an optional callback.
"""

from __future__ import annotations

import os
from contextlib import nullcontext
from dataclasses import dataclass, replace
from typing import Callable

import torch
from torch import Tensor

from detsim.host import memory, processes
from detsim.host.threads import intra_op_threads, requested, run
from detsim.model.config import SimulationConfig
from detsim.model.geometry import pixel_positions
from detsim.rendering import fused_image, paths
from detsim.rendering.interpolation import InterpolationState, scan_edge
from detsim.rendering.lane_blocks import Projections
from detsim.rendering.observed_path import OBSERVED, Observer, observed_values
from detsim.rendering.pixel_terms import PixelTerms, pixel_terms
from detsim.rendering.setup import Setup, layer_offsets, needs_grad, prepare, restrict_pixels

# Execution paths of render(); each is parity-tested against the golden cases. "compiled" runs the
# fused inner loop of detsim.rendering.lattice_factor through torch.compile where it applies. "triton" renders the
# whole image in one launch of detsim.rendering.fused_kernel where the setup allows
# (detsim.rendering.fused_image.unfused_reason), else per chunk through the lane-sum kernel of
# detsim.rendering.lattice_factor_triton (CUDA, or Triton's interpreter on a CPU); eager code does the rest.
MODES = ("eager", "compiled", "triton")


@dataclass(frozen=True)
class RenderInfo:
    """Facts about a finished render that a caller may report."""

    interpolation_switched_off_at: tuple[int, int] | None  # (slow, fast) of the first out-of-range point
    chunk_pixels: int  # pixels per chunk, as given or as chosen from the available memory
    block_lanes: int  # pixel x source x orientation lanes per block
    fused: bool = False  # rendered by the fused whole-image kernel: one launch (detsim.rendering.fused_kernel)
    unfused_reason: str | None = None  # why not, in a few words ("interpolation", "mode 'eager'"...); None if fused


def render(setup: Setup, *, chunk_pixels: int | None = None,
           progress: Callable[[float], None] | None = None,
           observe: Observer | None = None, mode: str = "eager",
           threads: int | None = None) -> tuple[Tensor, RenderInfo]:
    """Accumulate the image of a prepared simulation.

    Args:
        chunk_pixels: pixels per chunk; None picks one from the memory available on the device
            (:func:`detsim.host.memory.plan`).
        progress: called with the fraction done after each chunk (in the calling thread).
        observe: diagnosis hook receiving named intermediates (see :data:`Observer`); for tracing a few
            pixels, render a setup restricted to them (``restrict_pixels``).
        mode: execution path, one of :data:`MODES`. ``"triton"`` renders the whole image in one kernel launch
            where the setup allows it (``info.fused``), else per chunk (``info.unfused_reason`` says why).
        threads: CPU workers; None takes torch's intra-op thread count (``OMP_NUM_THREADS``). The
            image is the same bits for any count (:mod:`detsim.host.processes`). torch's intra-op thread
            count is set for the render (process-wide) and restored after it.

    Returns:
        (image, info): image of shape (slow, fast) in ``setup.dtype`` on ``setup.device``, photons per
        pixel; pixels outside the ROI are 0.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}, got {mode!r}")
    if mode == "triton":
        check_triton(setup.device)
    unfused = fused_image.unfused_reason(setup, observed=observe is not None) if mode == "triton" else f"mode {mode!r}"
    if unfused is None:
        return _render_fused(setup, progress)
    count = requested(threads)
    n_sources = setup.sources.lambda_m.shape[0]
    sizes = memory.plan(device=setup.device, itemsize=setup.dtype.itemsize,
                        fused=mode != "eager" and paths.fusable(setup), layers=setup.thickness.count,
                        subpixels=setup.oversample ** 2, sources=n_sources,
                        lanes_per_pixel=n_sources * setup.orientations.shape[0], chunk_pixels=chunk_pixels,
                        grouped=_grouped(setup, observe))
    chunk_pixels = sizes.chunk_pixels
    job_pixels = chunk_pixels * sizes.chunks_per_job
    det = setup.config.detector
    total = setup.pixels_s.numel()
    state = InterpolationState(enabled=setup.interpolate)
    first = setup.first_sweep  # the thread-first pixels (spec §4.7)
    chunks = _Chunks(setup, state, Projections(setup),
                     Projections(replace(setup, orientations=first.orientations)) if first is not None else None,
                     frozenset(first.positions) if first is not None else frozenset(), sizes.block_lanes, observe,
                     mode, chunk_pixels)
    grad = needs_grad(setup)
    parallel = _parallel(setup, mode, grad, observe, state)
    workers = min(count, sizes.concurrent_jobs, -(-total // job_pixels)) if parallel else 1
    forked = workers > 1 and processes.available(setup.device)
    image = (processes.shared_zeros(det.spixels * det.fpixels, setup.dtype) if forked else  # raster order
             torch.zeros(det.spixels * det.fpixels, dtype=setup.dtype, device=setup.device))
    in_place_slices = setup.raster and not grad  # a chunk's pixels are a slice of the image

    def job_at(start: int) -> Callable[[], tuple[slice | Tensor, Tensor]]:
        def job() -> tuple[slice | Tensor, Tensor]:
            stop = min(start + job_pixels, total)
            if in_place_slices:
                return slice(start, stop), chunks.values(start, stop)
            flat = setup.pixels_s[start:stop].long() * det.fpixels + setup.pixels_f[start:stop]  # raster index
            return flat, chunks.values(start, stop)
        return job

    done_pixels = 0

    def store(result: tuple[slice | Tensor, Tensor]) -> None:
        nonlocal image
        where, values = result
        if isinstance(where, slice):
            image[where] = values
        else:
            image = image.index_put((where,), values) if grad else image.index_put_((where,), values)

    def done(_: int, result: tuple[slice | Tensor, Tensor]) -> None:
        nonlocal done_pixels
        store(result)
        done_pixels += result[1].numel()
        if progress is not None:
            progress(done_pixels / total)

    def finished(jobs_done: int) -> None:
        if progress is not None:
            progress(min(total, jobs_done * job_pixels) / total)

    jobs = [job_at(start) for start in range(0, total, job_pixels)]
    if forked:
        processes.run(jobs, workers, store, finished)
        image = image.clone()  # out of the shared memory
    elif parallel:
        run(jobs, workers, done)
    else:
        with intra_op_threads(count) if setup.device.type == "cpu" else nullcontext():
            for index, job in enumerate(jobs):
                done(index, job())
    info = RenderInfo(interpolation_switched_off_at=state.switched_off_at(setup),
                      chunk_pixels=chunk_pixels, block_lanes=sizes.block_lanes, unfused_reason=unfused)
    return image.reshape(det.spixels, det.fpixels), info


def _render_fused(setup: Setup, progress: Callable[[float], None] | None) -> tuple[Tensor, RenderInfo]:
    """The whole image by one launch of the fused kernel, the thread-first pixels' first sweeps included (spec
    §4.7), from the setup's packed parameters (built at its first render, then reused: nothing is copied and
    nothing waits for the device)."""
    from detsim.rendering import fused_kernel

    image = fused_kernel.render_fused(setup, fused_image.fused_params(setup))
    if progress is not None:
        progress(1.0)
    lanes = fused_kernel.block_pixels(setup.device) * setup.sources.lambda_m.shape[0] * setup.orientations.shape[0]
    return image, RenderInfo(interpolation_switched_off_at=None, chunk_pixels=setup.pixels_s.numel(),
                             block_lanes=lanes, fused=True)


def _parallel(setup: Setup, mode: str, grad: bool, observe: Observer | None, interp: InterpolationState) -> bool:
    """Whether jobs may run on several workers: on a CPU, in eager mode, when no chunk depends on another.

    Interpolation carries nanoBragg's global switch-off from chunk to chunk in pixel order, autograd
    builds the image out of place, and an observer expects the chunks in order: those run one chunk at a
    time, with torch's own intra-op threads. The fused modes run their kernel as torch.compile or
    Triton built it, one chunk at a time.
    """
    return (setup.device.type == "cpu" and mode == "eager" and not grad and observe is None
            and not interp.enabled)


def _grouped(setup: Setup, observe: Observer | None) -> bool:
    """Whether a job may compute the per-pixel terms of several chunks at once and render each chunk from its
    rows: where a chunk's terms do not depend on which other pixels share it. A -dmin cut is decided per
    chunk (it selects the chunk's maths path), interpolation scans each chunk in turn, and an observer
    expects one chunk's terms at a time."""
    return setup.config.crystal.dmin_A == 0 and not setup.interpolate and observe is None


@dataclass(frozen=True)
class _Chunks:
    """What every chunk of a render shares, and the values of a chunk."""

    setup: Setup
    interp: InterpolationState
    projections: Projections
    first_projections: Projections | None  # of the thread-first pixels' first sweep (spec §4.7)
    first_positions: frozenset[int]  # where the thread-first pixels are in the setup's list of pixels
    block_lanes: int
    observe: Observer | None
    mode: str
    chunk_pixels: int

    def values(self, start: int, stop: int) -> Tensor:
        """(P,) values of the pixels ``start:stop`` of the setup's list; a thread-first pixel among them is
        rendered again alone, with its first sweep's orientations (spec §4.7)."""
        firsts = sorted(i - start for i in self.first_positions if start <= i < stop)
        if firsts == [0] and stop - start == 1:
            return self._render(start, stop, first_sweep=True)
        values = self._render(start, stop)
        for k in firsts:
            alone = self._render(start + k, start + k + 1, first_sweep=True, scan=False, observe=False)  # (1,)
            values = values.index_put((torch.tensor([k], device=values.device),), alone)
        return values

    def _render(self, start: int, stop: int, *, first_sweep: bool = False, scan: bool = True,
                observe: bool = True) -> Tensor:
        """(P,) values of pixels ``start:stop``: the observed path with an observer, else the chunk's maths path.

        ``scan``: find where interpolation switches off, if it has not yet (spec §5.7); a thread-first
        pixel rendered again was scanned with its chunk, with the stale orientation of the other pixels.
        """
        setup, interp, observer = self.setup, self.interp, self.observe if observe else None
        s_idx, f_idx = setup.pixels_s[start:stop], setup.pixels_f[start:stop]
        terms = pixel_terms(setup, _positions(setup, s_idx, f_idx), full=observer is not None)
        if stop - start > self.chunk_pixels:  # a job of several chunks (see _grouped): each rendered alone
            return torch.cat([self._chunk_values(terms.rows(slice(at, at + self.chunk_pixels)), start + at)
                              for at in range(0, stop - start, self.chunk_pixels)])
        chunk = paths.plan_chunk(setup, terms, start, interp, self.projections, self.block_lanes, self.mode,
                                        observed=observer is not None,
                                        first_sweep=self.first_projections if first_sweep else None)
        if scan and interp.enabled and interp.cutoff is None:
            scan_edge(setup, terms, start, chunk.per_pixel, chunk.lanes, interp, self.projections)
        if observer is not None:
            return observed_values(chunk, observer)
        return paths.chunk_values(chunk)

    def _chunk_values(self, terms: PixelTerms, start: int) -> Tensor:
        """(P,) values of the chunk of pixels from ``start`` whose terms are given, by its maths path."""
        return paths.chunk_values(paths.plan_chunk(self.setup, terms, start, self.interp,
                                                                 self.projections, self.block_lanes, self.mode,
                                                                 observed=False))


def _positions(setup: Setup, s_idx: Tensor, f_idx: Tensor) -> Tensor:
    """(P, T, O, 3) lab positions of every subpixel of the given pixels, m (spec §3.4)."""
    return pixel_positions(setup.geometry, s_idx, f_idx, setup.oversample, layer_offsets(setup),
                           setup.config.detector.curved, setup.frame.beam)


def available_modes(device: torch.device | str = "cpu") -> tuple[str, ...]:
    """The execution paths that can run on ``device`` here."""
    modes = ["eager", "compiled"]
    try:
        check_triton(torch.device(device))
        modes.append("triton")
    except ValueError:
        pass
    return tuple(modes)


def check_triton(device: torch.device) -> None:
    """Raise ValueError saying why the Triton path cannot run on ``device``."""
    try:
        import triton  # noqa: F401
    except ImportError:
        raise ValueError("mode 'triton' needs the triton package (pip install 'detsim[triton]')") from None
    if device.type != "cuda" and os.environ.get("TRITON_INTERPRET") != "1":
        raise ValueError("mode 'triton' runs on a CUDA device (or on a CPU under TRITON_INTERPRET=1, for testing)")


def simulate(config: SimulationConfig, *, device: torch.device | str = "cpu",
             dtype: torch.dtype = torch.float64, chunk_pixels: int | None = None,
             mode: str = "eager") -> Tensor:
    """Render the image nanoBragg would produce for ``config``.

    Args:
        config: the simulation.
        device: torch device for the computation (``"cpu"``, ``"cuda"``...).
        dtype: ``torch.float64`` (default, as nanoBragg) or ``torch.float32``.
        chunk_pixels: pixels per chunk (memory bound); None chooses automatically.
        mode: execution path, one of :data:`MODES`.

    Returns:
        (slow, fast) tensor of photons per pixel.
    """
    image, _ = render(prepare(config, device=device, dtype=dtype), chunk_pixels=chunk_pixels, mode=mode)
    return image


__all__ = ["MODES", "available_modes", "OBSERVED", "Observer", "RenderInfo", "Setup", "prepare", "render",
           "restrict_pixels", "simulate"]

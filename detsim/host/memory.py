"""How much memory a render may take: chunk and block sizes from the memory available on the device.

A render holds the image and, per worker, one job's per-pixel terms and one block's temporaries.
The chunk (pixels) is bounded by a share of the memory available when the render starts; the block
(pixel x source x orientation lanes) is sized for speed: small enough for the CPU's L2 cache on a
CPU, large enough to keep a GPU busy. Neither depends on the thread count (an image's bits depend on
the chunk size); the share bounds instead how many jobs may be alive at once. A job is one chunk, or,
where the engine may compute several chunks' per-pixel terms together (``grouped``), a few whole
chunks: the ~80 small ops of a chunk's terms then run once for about :data:`JOB_PIXELS` pixels (fewer
when the share is smaller). A float32 image may depend on the job size by a unit in the last place (the
vectorised atan2 of the terms); a float64 image does not.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from detsim.errors import ConfigError

if TYPE_CHECKING:  # torch is imported where a device is asked: reading an image's size needs no torch
    import torch

WORKING_FRACTION = 0.25  # of the memory available at the start, for one chunk and one block together
WORKING_CAP_BYTES = 1 << 30  # past 1 GiB a chunk runs no faster, so none is given more
FALLBACK_AVAILABLE_BYTES = 2 << 30  # when the operating system does not say

CPU_BLOCK_LANES = 1 << 15  # 3 x 2^15 float64 values (768 kB) per temporary: eager PyTorch's fastest here
CPU_MAX_CHUNK_PIXELS = 1 << 16
FUSED_BLOCK_LANES = 1 << 20  # the fused loop (torch.compile, Triton) keeps no temporaries
GPU_MAX_BLOCK_LANES = 1 << 24
GPU_MAX_CHUNK_PIXELS = 1 << 20
BLOCK_TEMPORARIES = 8  # (P, J, lanes)-sized tensors alive at once in an eager block, J <= 3 axes
JOB_PIXELS = 1 << 13  # pixels whose per-pixel terms a grouped job computes together, at least one chunk


def available_bytes(device: torch.device) -> int:
    """Memory free for this process on ``device`` now, in bytes."""
    if device.type == "cuda":
        import torch

        free, _ = torch.cuda.mem_get_info(device)
        return int(free)
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return FALLBACK_AVAILABLE_BYTES


def bytes_per_pixel(layers: int, subpixels: int, sources: int, itemsize: int) -> int:
    """Upper bound of one pixel's share of a chunk's per-pixel terms, in bytes.

    Per layer and subpixel: position, direction and their temporaries (~16 values); per source as well:
    polarization, the -dmin test and the scattering vector (~10 values). Plus indices and the sum.
    """
    return itemsize * layers * subpixels * (16 + 10 * sources) + 64


@dataclass(frozen=True)
class Plan:
    """Pixels per chunk and lanes per block of one render, and how many chunks fit in memory at once."""

    chunk_pixels: int
    block_lanes: int
    concurrent_jobs: int = 1  # jobs (their chunks' terms and a block) that fit the working share together, >= 1
    chunks_per_job: int = 1


def plan(*, device: torch.device, itemsize: int, fused: bool, layers: int, subpixels: int, sources: int,
         lanes_per_pixel: int, chunk_pixels: int | None = None, grouped: bool = False,
         available: int | None = None) -> Plan:
    """Chunk and block sizes for a render; ``chunk_pixels`` given by the user is kept as is.

    Args:
        itemsize: bytes per value of the render's dtype.
        fused: whether the inner loop is fused (``compiled``/``triton`` modes).
        layers, subpixels, sources: sensor layers, oversample**2 and beam sources.
        lanes_per_pixel: sources x orientations, the lanes one pixel contributes to a block.
        grouped: whether a job may hold several chunks (see the module docstring).
        available: bytes available (default: asked from the operating system or the CUDA driver).
    """
    if chunk_pixels is not None and not chunk_pixels >= 1:
        raise ValueError(f"chunk_pixels must be >= 1, got {chunk_pixels}")
    budget = min(WORKING_CAP_BYTES, int(WORKING_FRACTION * (available if available is not None
                                                            else available_bytes(device))))
    if device.type == "cuda":
        block_lanes = FUSED_BLOCK_LANES if fused else GPU_MAX_BLOCK_LANES
        block_lanes = max(CPU_BLOCK_LANES, min(block_lanes, budget // 2 // (3 * itemsize * BLOCK_TEMPORARIES)))
        max_chunk = GPU_MAX_CHUNK_PIXELS
    else:
        block_lanes = FUSED_BLOCK_LANES if fused else CPU_BLOCK_LANES
        max_chunk = CPU_MAX_CHUNK_PIXELS
    block_bytes = 0 if fused else 3 * itemsize * BLOCK_TEMPORARIES * block_lanes
    per_pixel = bytes_per_pixel(layers, subpixels, sources, itemsize)
    by_memory = max(1, (budget - block_bytes) // per_pixel)
    by_memory = 1 << (by_memory.bit_length() - 1)  # a power of two: small swings of free memory keep the size
    if chunk_pixels is None:
        by_block = max(1, block_lanes // max(1, lanes_per_pixel))  # a block then covers whole pixels
        chunk_pixels = max(1, min(max_chunk, by_block, by_memory))
    chunks_per_job = max(1, min(JOB_PIXELS, by_memory) // chunk_pixels) if grouped else 1
    job_bytes = chunks_per_job * chunk_pixels * per_pixel + block_bytes
    return Plan(chunk_pixels=chunk_pixels, block_lanes=block_lanes,
                concurrent_jobs=max(1, budget // max(1, job_bytes)), chunks_per_job=chunks_per_job)


def gib(n_bytes: float) -> str:
    """Bytes as GiB for a message ("1.5 GiB"); very large counts in exponent form."""
    try:
        return f"{n_bytes / (1 << 30):.3g} GiB"
    except OverflowError:  # an int beyond any float
        return f"about 1e{len(str(int(n_bytes))) - 10} GiB"


def require(what: str, needed: float, device: torch.device | str = "cpu") -> None:
    """Raise :class:`~detsim.errors.ConfigError` when ``needed`` bytes exceed the memory available now.

    For sizes known before anything is allocated (image, orientations, one pixel's subpixels), so an absurd
    request ends with one line naming ``what`` instead of an allocation failure or a machine out of memory.
    """
    import torch

    available = available_bytes(torch.device(device))
    if needed > available:
        raise ConfigError(f"{what} needs {gib(needed)} of memory, more than the {gib(available)} available")

"""Which device each worker of a batch renders on (``detsim batch --device``): on the CPU as many single-threaded
workers as asked for, or on CUDA one worker per visible GPU, each pinned to its GPU by ``CUDA_VISIBLE_DEVICES``
in its own process (so each sees one device, ``cuda`` = its GPU, and torch, the engine and the frames' setups
are loaded there once). The GPUs are counted here, where the batch starts; an existing cluster's workers
declare theirs as the resource :data:`GPU_RESOURCE` (docs/batch.md).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping

from detsim.batch.frames import BatchInputError

DEVICES = ("cpu", "cuda")  # what --device takes (without it, each line's own -device, cpu by default)
GPU_RESOURCE = "GPU"  # the Dask worker resource a CUDA frame asks for, one unit a frame
PINNING_VARIABLE = "CUDA_VISIBLE_DEVICES"


@dataclass(frozen=True)
class GpuWorker:
    """One worker of an embedded cluster on a GPU: its name and the environment its process starts with."""

    name: str
    gpu: str  # the GPU as this machine numbers it (an index, or a UUID where CUDA_VISIBLE_DEVICES gives those)
    env: Mapping[str, str]


def visible_gpus() -> int:
    """How many CUDA devices this process sees (torch's count; CUDA is not initialised, so workers can start)."""
    import torch

    return torch.cuda.device_count()


def gpu_workers(count: int, visible: str | None, workers: int | None = None) -> tuple[GpuWorker, ...]:
    """One worker per GPU of the ``count`` visible (``visible``: this process's CUDA_VISIBLE_DEVICES, whose
    entries name them; None: GPUs 0 .. count - 1), the first ``workers`` of them if given; raises
    :class:`BatchInputError` where there is no GPU, or fewer than ``workers``."""
    if count < 1:
        raise BatchInputError("--device cuda: no CUDA device is visible here (give --scheduler to use another "
                              "machine's GPU workers)")
    names = [v.strip() for v in visible.split(",") if v.strip()][:count] if visible else []
    gpus = names if len(names) == count else [str(i) for i in range(count)]
    if workers is not None and workers > count:
        raise BatchInputError(f"--workers {workers} with --device cuda: one worker per GPU, and {count} "
                              f"GPU{'s' * (count != 1)} {'are' if count != 1 else 'is'} visible")
    return tuple(GpuWorker(f"gpu{i}", gpu, {PINNING_VARIABLE: gpu})
                 for i, gpu in enumerate(gpus[:workers or count]))


def plan_gpu_workers(workers: int | None) -> tuple[GpuWorker, ...]:
    """:func:`gpu_workers` of this machine."""
    return gpu_workers(visible_gpus(), os.environ.get(PINNING_VARIABLE), workers)


__all__ = ["DEVICES", "GPU_RESOURCE", "GpuWorker", "gpu_workers", "plan_gpu_workers", "visible_gpus"]

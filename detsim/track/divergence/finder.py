"""The divergence finder's Python API (docs/determinism.md): record two runs of one call and compare them."""

from __future__ import annotations

from typing import Callable

import torch
from torch.utils._pytree import tree_map_only

from detsim.track.runtime.process import thread_count
from detsim.track.divergence.firstdiff import Report, compare_records
from detsim.track.divergence.recorder import record


def find_divergence(fn: Callable, *args, threads: tuple[int, int] | None = None, ops: bool = True,
                    kernels: bool = True, max_items: int = 3, label: str | None = None, **kwargs) -> Report:
    """Run ``fn(*args, **kwargs)`` twice, each run on fresh clones of the tensor arguments, at its own thread
    count (default: the current one) and fill of never-written memory, and compare the two records."""
    records = []
    for fill, n in enumerate(threads or (torch.get_num_threads(),) * 2):
        run_args, run_kwargs = tree_map_only(
            torch.Tensor, lambda t: t.detach().clone().requires_grad_(t.requires_grad), (args, kwargs))
        with thread_count(n):
            records.append(record(fn, *run_args, label=label or getattr(fn, "__qualname__", str(fn)), ops=ops,
                                  kernels=kernels, fill=fill, **run_kwargs))
    return compare_records(*records, max_items=max_items)

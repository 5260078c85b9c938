"""The Python API of the divergence finder: run a computation twice and say where the runs first differ.

:func:`find_divergence` records two runs of one call (:func:`~detsim.track.divergence.recorder.record`),
each on fresh clones of its tensor arguments and at its own torch thread count, and compares them
(:func:`~detsim.track.divergence.firstdiff.compare_records`)::

    from detsim.track.divergence.finder import find_divergence
    report = find_divergence(my_function, x, y)     # tensors are cloned for each run
    print(report.render()); report.first.name       # e.g. "aten.rand.default"
"""

from __future__ import annotations

from typing import Callable

import torch
from torch.utils._pytree import tree_map_only

from detsim.track.runtime.process import thread_count
from detsim.track.divergence.firstdiff import Report, compare_records
from detsim.track.divergence.recorder import record


def _fresh(t: torch.Tensor) -> torch.Tensor:
    """A clone of ``t`` that is a new leaf (requiring grad when ``t`` does)."""
    return t.detach().clone().requires_grad_(t.requires_grad)


def find_divergence(fn: Callable, *args, threads: tuple[int, int] | None = None, ops: bool = True,
                    kernels: bool = True, max_items: int = 3, label: str | None = None, **kwargs) -> Report:
    """Run ``fn(*args, **kwargs)`` twice (tensor arguments cloned per run), record both, compare them.

    ``threads``: the torch thread counts of run A and run B (default: the current count for both);
    ``ops``/``kernels``: the layers to record; ``max_items``: victims and further culprits to keep.
    Run A and run B fill never-written memory differently (fill 0 and 1), which tells reads of it.
    """
    records = []
    for fill, n in enumerate(threads or (torch.get_num_threads(),) * 2):
        run_args, run_kwargs = tree_map_only(torch.Tensor, _fresh, (args, kwargs))
        with thread_count(n):
            records.append(record(fn, *run_args, label=label or getattr(fn, "__qualname__", str(fn)), ops=ops,
                                  kernels=kernels, fill=fill, **run_kwargs))
    return compare_records(*records, max_items=max_items)

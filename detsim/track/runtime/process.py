"""This process as a result's record names it: the environment a result depends on, and torch's threads."""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path
from typing import Iterator

import numpy
import torch

from detsim.track.base.provenance import ENV_VARS, cpu_class, cpu_model, git_info, vector_flags


def environment(cwd: Path | None = None) -> dict:
    """What a result depends on: code version, interpreter, libraries, hardware, threads, env vars."""
    try:
        import triton
        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    if torch.cuda.is_available():
        cuda = {"available": True, "device": torch.cuda.get_device_name(0), "version": torch.version.cuda,
                "count": torch.cuda.device_count()}
    else:
        cuda = {"available": False, "reason": "torch.cuda.is_available() is False"
                + ("" if torch.version.cuda else " (CPU-only torch build)")}
    return {
        **git_info(cwd),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "triton": triton_version,
        "numpy": numpy.__version__,
        "platform": platform.platform(),
        "cpu": cpu_model(),
        "cpu_class": cpu_class(torch.backends.cpu.get_cpu_capability()),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "cpu_flags": vector_flags(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "cuda": cuda,
        "env": {k: os.environ[k] for k in ENV_VARS if k in os.environ},
    }


@contextlib.contextmanager
def thread_count(n: int) -> Iterator[None]:
    """Run the block with ``n`` torch threads, then restore the previous count."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)

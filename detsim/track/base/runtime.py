"""This process and its torch, as the suite's commands and records need them: the environment a result depends
on, torch's thread count for a block, whether a device named on the command line can be used here (checked
before any work), and a tensor's own bytes and their sha256.

Inputs: the running process, a device name, a tensor. Outputs: the environment record (a dict), a one-line
reason a device cannot be used, bytes and hex digests. A tensor's hash is in its own dtype (unlike the image
hash of :mod:`.hashing`, a float32 tensor and its float64 copy differ).
"""

from __future__ import annotations

import contextlib
import os
import platform
from pathlib import Path
from typing import Iterator

import numpy
import torch

from .hashing import sha256_bytes
from .provenance import ENV_VARS, cpu_class, cpu_model, git_info, vector_flags


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


# ---- devices

def device_problem(name: str) -> str | None:
    """Why the torch device ``name`` cannot be used here, in a few words (``no CUDA device on this
    machine``), or None when it can."""
    if name == "cpu":
        return None
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError) as exc:
        return f"not a torch device ({_first_line(exc)})"
    if device.type == "cuda":
        if not torch.cuda.is_available():
            return "no CUDA device on this machine"
        found = torch.cuda.device_count()
        if device.index is not None and device.index >= found:
            return f"no CUDA device {device.index} on this machine ({found} found)"
        return None
    try:
        torch.empty(0, device=device)
    except (RuntimeError, AssertionError, ValueError) as exc:
        return f"cannot be used here ({_first_line(exc)})"
    return None


def _first_line(exc: BaseException) -> str:
    """The first sentence of ``exc``'s message (torch's can run to a page)."""
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0].split(". ")[0]


# ---- tensors

def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """A tensor's own bytes in its own dtype, C order (any device, dtype, conjugate or negative view)."""
    t = tensor.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def tensor_sha256(tensor: torch.Tensor) -> str:
    """sha256 of :func:`tensor_bytes`."""
    return sha256_bytes(tensor_bytes(tensor))

"""A tensor's own bytes and their sha256, in its own dtype (unlike the image hash, a float32 tensor and its float64
copy differ)."""

from __future__ import annotations

import torch

from detsim.track.base.hashing import sha256_bytes


def tensor_bytes(tensor: torch.Tensor) -> bytes:
    """A tensor's own bytes in its own dtype, C order (any device, dtype, conjugate or negative view)."""
    t = tensor.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def tensor_sha256(tensor: torch.Tensor) -> str:
    """sha256 of :func:`tensor_bytes`."""
    return sha256_bytes(tensor_bytes(tensor))

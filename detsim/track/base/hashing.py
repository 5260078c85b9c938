"""sha256 digests: of bytes, of files, and of images.

An image's hash is the sha256 of its values as little-endian float64 in C order (slow, fast), whatever
the dtype it was computed in: float32 values convert to float64 exactly, so two images have the same
hash exactly when they have the same values. Every stored image hash of the suite (baselines, asv
tracks, pytest-benchmark ``extra_info``) is this one.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

IMAGE_HASH = "sha256 of the image as little-endian float64, C order (slow, fast)"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def image_sha256(image) -> str:
    """:data:`IMAGE_HASH` of a tensor (any device or dtype) or array."""
    if hasattr(image, "detach"):
        image = image.detach().cpu().double().numpy()  # exact for every real dtype, bfloat16 included
    return sha256_bytes(np.ascontiguousarray(image, dtype="<f8").tobytes())


def tensor_bytes(tensor) -> bytes:
    """A tensor's own bytes in its own dtype, C order (any device, dtype, conjugate or negative view)."""
    import torch

    t = tensor.detach().to("cpu").resolve_conj().resolve_neg().contiguous()
    return t.reshape(-1).view(torch.uint8).numpy().tobytes()


def tensor_sha256(tensor) -> str:
    """sha256 of :func:`tensor_bytes`: bit-for-bit identity of any tensor, in its own dtype."""
    return sha256_bytes(tensor_bytes(tensor))


def is_sha256(text) -> bool:
    """Whether ``text`` is a lower-case sha256 hex digest."""
    return isinstance(text, str) and len(text) == 64 and all(c in "0123456789abcdef" for c in text)

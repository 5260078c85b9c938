"""sha256 digests: of bytes, of files, and of images; and a digest's fingerprint.

An image's hash (:data:`IMAGE_HASH`) is over its values as float64 whatever the dtype it was computed in:
float32 converts exactly, so two images have the same hash exactly when they have the same values. Every
stored image hash of the suite is this one. A **fingerprint** is a digest's first :data:`FINGERPRINT_HEX` hex
digits as a number: how the asv suite records a hash, since its tracks hold numbers only.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np

IMAGE_HASH = "sha256 of the image as little-endian float64, C order (slow, fast)"
FINGERPRINT_HEX = 13  # hex digits of a sha256 kept in a fingerprint: 52 bits, exact in a float64


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


def is_sha256(text) -> bool:
    """Whether ``text`` is a lower-case sha256 hex digest."""
    return isinstance(text, str) and len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def fingerprint(sha256: str) -> float:
    """A sha256 hex digest as one number, exact in float64: its first :data:`FINGERPRINT_HEX` hex digits."""
    return float(int(sha256[:FINGERPRINT_HEX], 16))


def fingerprint_hex(value: float) -> str:
    """The hex digits a :func:`fingerprint` holds (the start of the sha256)."""
    return f"{int(value):0{FINGERPRINT_HEX}x}"

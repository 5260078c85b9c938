"""sha256 digests of bytes and of files: the core's one place that computes one (the batch manifest's file
hashes). The suite's base has its own (detsim.track.base.hashing): the asv suite loads it beside older
detsims that lack this module."""

from __future__ import annotations

import hashlib
from os import PathLike


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str | PathLike) -> str:
    """Hex sha256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


__all__ = ["sha256_bytes", "sha256_file"]

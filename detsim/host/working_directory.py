"""Running a block of code in another working directory, and back: nanoBragg's input files are read
relative to the directory its command runs in (a golden case's folder, a batch line's)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Iterator


@contextlib.contextmanager
def working_directory(path: str | Path | None) -> Iterator[None]:
    """Run a block in ``path`` (no-op for None), then return to the directory it started in."""
    if path is None:
        yield
        return
    before = os.getcwd()  # not Path.cwd(): the asv suite counts the instructions of a render inside this block
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(before)


__all__ = ["working_directory"]

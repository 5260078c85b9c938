"""A bundle's ``sha256.txt``: the SHA-256 of every other file, in ``sha256sum`` format.

:func:`write_manifest` lists every file of the bundle (sorted by path, relative, ``/``-separated)
but ``sha256.txt`` itself, so ``sha256sum -c sha256.txt`` inside the bundle checks it too.
:func:`check_bundle` re-hashes a bundle against its listing and names each problem: ``modified: F``
(the hash differs), ``missing: F`` (listed, absent), ``extra: F`` (present, not listed) or
``malformed: sha256.txt line N``.
"""

from __future__ import annotations

import re
from pathlib import Path

from detsim.track.base.hashing import sha256_file
from detsim.track.base.output import atomic_write_text

MANIFEST = "sha256.txt"
_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")  # sha256sum's text or binary mode


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() or p.is_symlink()]


def _listed(folder: Path) -> list[str]:
    """Every file of ``folder`` but the manifest, relative and ``/``-separated, in path order."""
    names = (p.relative_to(folder).as_posix() for p in sorted(_files(folder)))
    return [name for name in names if name != MANIFEST]


def write_manifest(folder: Path) -> None:
    """``sha256.txt`` over every other file of the bundle, in ``sha256sum`` format, sorted by path."""
    lines = [f"{sha256_file(folder / name)}  {name}" for name in _listed(folder)]
    atomic_write_text(folder / MANIFEST, "\n".join(lines) + "\n")


def listed_count(folder: Path) -> int:
    """How many files ``sha256.txt`` lists."""
    return sum(1 for line in (folder / MANIFEST).read_text().splitlines() if line.strip())


def check_bundle(folder: Path) -> list[str]:
    """Problems with a bundle against its sha256.txt: ``modified: F``, ``missing: F``, ``extra: F``."""
    listing = folder / MANIFEST
    if not listing.is_file():
        return [f"missing: {MANIFEST}"]
    expected: dict[str, str] = {}
    problems = []
    for number, line in enumerate(listing.read_text(errors="replace").splitlines(), 1):
        match = _LINE.match(line)
        if not match:
            problems.append(f"malformed: {MANIFEST} line {number}")
            continue
        expected[match.group(2)] = match.group(1)
    for name, digest in sorted(expected.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"missing: {name}")
        elif sha256_file(path) != digest:
            problems.append(f"modified: {name}")
    problems += [f"extra: {name}" for name in sorted(set(_listed(folder)) - set(expected))]
    return problems

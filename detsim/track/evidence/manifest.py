"""A bundle's ``sha256.txt`` (``sha256sum`` format, every other file, sorted by path) and checking a bundle
against it (docs/evidence.md, "Verifying a bundle")."""

from __future__ import annotations

import re
from pathlib import Path

from detsim.fileio.bounded_read import MISSING, REGULAR_FILE, what_is
from detsim.track.base.hashing import sha256_file
from detsim.track.base.output import atomic_write_text

MANIFEST = "sha256.txt"
_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")  # sha256sum's text or binary mode


def _listed(folder: Path) -> list[str]:
    """Every file of ``folder`` but the manifest, relative and ``/``-separated, in path order."""
    files = sorted(p for p in folder.rglob("*") if p.is_file() or p.is_symlink())
    names = (p.relative_to(folder).as_posix() for p in files)
    return [name for name in names if name != MANIFEST]


def write_manifest(folder: Path) -> None:
    """``sha256.txt`` over every other file of the bundle, in ``sha256sum`` format, sorted by path."""
    lines = [f"{sha256_file(folder / name)}  {name}" for name in _listed(folder)]
    atomic_write_text(folder / MANIFEST, "\n".join(lines) + "\n")


def listed_count(folder: Path) -> int:
    """How many files ``sha256.txt`` lists."""
    return sum(1 for line in (folder / MANIFEST).read_text().splitlines() if line.strip())


def _inside(name: str) -> bool:
    parts = Path(name).parts
    return bool(parts) and not Path(name).is_absolute() and ".." not in parts


def check_bundle(folder: Path) -> list[str]:
    """Problems with a bundle against its sha256.txt, one line each (docs/evidence.md)."""
    listing = folder / MANIFEST
    kind = what_is(listing)
    if kind != REGULAR_FILE:
        return [f"missing: {MANIFEST}" if kind == MISSING else f"unreadable: {MANIFEST} ({kind})"]
    try:
        text = listing.read_text(errors="replace")
    except OSError as exc:
        return [f"unreadable: {MANIFEST} ({exc.strerror or exc})"]
    expected: dict[str, str] = {}
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        match = _LINE.match(line)
        if not match or not _inside(match.group(2)):
            problems.append(f"malformed: {MANIFEST} line {number}")
            continue
        expected[match.group(2)] = match.group(1)
    for name, digest in sorted(expected.items()):
        kind = what_is(folder / name)
        if kind == MISSING:
            problems.append(f"missing: {name}")
        elif kind != REGULAR_FILE:  # never opened: a FIFO would block, a directory has no bytes to hash
            problems.append(f"unreadable: {name} ({kind})")
        else:
            try:
                if sha256_file(folder / name) != digest:
                    problems.append(f"modified: {name}")
            except OSError as exc:
                problems.append(f"unreadable: {name} ({exc.strerror or exc})")
    problems += [f"extra: {name}" for name in sorted(set(_listed(folder)) - set(expected))]
    return problems

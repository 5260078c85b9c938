"""The reuse rule: a commit whose installed files are byte-identical to an already measured commit's takes
that commit's results (written once; bisection and the tracking run both use it).

Input: the site-packages folder an :class:`~.build.Installation` filled, or, before any build, the git trees
of the spec's ``export`` paths. Output: a fingerprint (sha256 of the sorted paths and contents of the
installed files, pip's bookkeeping and byte code left out), and a :class:`Reuse` table from fingerprints to
the commit that was measured and its results.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, Sequence, TypeVar

from detsim.track.base.git import query
from detsim.track.base.hashing import sha256_bytes, sha256_file

# files of a dist-info folder that differ between two installs of the same files
BOOKKEEPING = frozenset({"RECORD", "INSTALLER", "REQUESTED", "direct_url.json"})

T = TypeVar("T")


def installed_fingerprint(site_packages: Path, ignore: Sequence[str] = ()) -> str:
    """sha256 over every installed file's path and contents under ``site_packages`` (byte code, pip's
    bookkeeping and the names in ``ignore`` left out): equal for two commits exactly when they installed the
    same bytes."""
    site_packages = Path(site_packages)
    lines = []
    for path in sorted(p for p in site_packages.rglob("*") if p.is_file()):
        rel = path.relative_to(site_packages)
        if rel.as_posix() in ignore or "__pycache__" in rel.parts or path.suffix == ".pyc":
            continue
        if rel.parent.name.endswith(".dist-info") and rel.name in BOOKKEEPING:
            continue
        lines.append(f"{sha256_file(path)}  {rel.as_posix()}\n")
    return sha256_bytes("".join(lines).encode())


def source_key(root: Path, commit: str, export: Sequence[str] | None) -> str | None:
    """The git trees of ``commit``'s ``export`` paths, joined: two commits with the same key install the same
    files without building either (None: no ``export`` paths, or one missing at that commit)."""
    if not export:
        return None
    trees = [query(root, "rev-parse", "--verify", "--quiet", f"{commit}:{path}") for path in export]
    return None if None in trees else " ".join(trees)


@dataclass
class Reuse(Generic[T]):
    """Results by key (a fingerprint or a source key), with the commit each was measured at."""

    measured: dict[str, tuple[str, T]] = field(default_factory=dict)
    reused: int = 0  # lookups answered from the table

    def get(self, *keys: str | None) -> tuple[str, T] | None:
        """The (commit, results) stored under the first of ``keys`` that has some, counted as a reuse."""
        for key in keys:
            if key is not None and key in self.measured:
                self.reused += 1
                return self.measured[key]
        return None

    def put(self, commit: str, results: T, *keys: str | None) -> None:
        for key in keys:
            if key is not None:
                self.measured.setdefault(key, (commit, results))

"""One side of a cross-commit comparison: a commit's ``detsim`` core with this checkout's suite over it.

:func:`prepare_side` exports the commit's ``detsim/`` package (:func:`~detsim.track.base.commits.export_package`)
and replaces its ``detsim/track/`` with this checkout's: the core never imports the suite, so the core
measured is the commit's own while the measuring code (workers, recorders, workload definitions) is the
same on both sides. :func:`run_python` runs code there in a fresh interpreter (``python -P``, the side
first on ``PYTHONPATH``, one torch thread, ``PYTHONHASHSEED=0``).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.commits import PACKAGE, benchmark_python, child_env, export_package, resolve

SUITE = Path(__file__).resolve().parents[1]  # this checkout's detsim/track
SIDE_ENV = {"PYTHONHASHSEED": "0", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


class SideError(RuntimeError):
    """A side that could not be prepared or whose process failed (one line)."""


@dataclass(frozen=True)
class Side:
    commit: str  # full sha
    package_dir: Path  # holds detsim/ (the commit's core, this checkout's detsim/track)
    python: str

    @property
    def short(self) -> str:
        return self.commit[:8]

    def env(self, **overrides: str) -> dict[str, str]:
        return child_env(self.package_dir, **{**SIDE_ENV, **overrides})


def prepare_side(root: Path, commit: str, dest: Path, python: str | None = None) -> Side:
    """Export ``commit``'s package into ``dest`` (new) with this checkout's suite laid over it."""
    sha = resolve(root, commit)
    export_package(root, sha, dest)
    track = dest / PACKAGE / "track"
    shutil.rmtree(track, ignore_errors=True)
    shutil.copytree(SUITE, track, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return Side(sha, dest, python or benchmark_python(root))


def run_python(side: Side, argv: list[str], *, cwd: Path, timeout: float = 900, env: dict | None = None
               ) -> subprocess.CompletedProcess:
    """``python -P ARGV`` at ``side`` (run in ``cwd``); raises :class:`SideError` on a non-zero exit."""
    try:
        done = subprocess.run([side.python, "-P", *argv], cwd=cwd, env={**side.env(), **(env or {})},
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise SideError(f"{side.short}: {' '.join(argv[:3])} ran past {timeout:.0f} s") from None
    if done.returncode != 0:
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise SideError(f"{side.short}: {' '.join(argv[:3])} exited {done.returncode}: "
                        f"{tail[-1] if tail else 'no message'}")
    return done


def commits_between(root: Path, last_good: str, first_bad: str) -> list[str]:
    """The commits after ``last_good`` up to and including ``first_bad``, oldest first (first-parent order)."""
    good, bad = resolve(root, last_good), resolve(root, first_bad)
    done = subprocess.run(["git", "-C", str(root), "rev-list", "--reverse", "--first-parent", f"{good}..{bad}"],
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise SideError(f"git rev-list {good[:8]}..{bad[:8]} failed: {done.stderr.strip()}")
    commits = done.stdout.split()
    if not commits or commits[-1] != bad:
        raise SideError(f"{bad[:8]} is not a descendant of {good[:8]}")
    return commits


def subject(root: Path, commit: str) -> str:
    done = subprocess.run(["git", "-C", str(root), "log", "-1", "--format=%s", commit], capture_output=True, text=True)
    return done.stdout.strip()

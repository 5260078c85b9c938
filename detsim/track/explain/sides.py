"""One side of a cross-commit comparison: a commit's ``detsim`` core with this checkout's suite over it, and
the flagged benchmark measured there (an instruction count, 1 - r, an image).

The core never imports the suite, so the core measured is the commit's own while the measuring code is the
same on both sides. A side's jobs (:mod:`.side_job`) run in a fresh interpreter (``python -P``, the side first
on ``PYTHONPATH``, one thread, ``PYTHONHASHSEED=0``).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from detsim.track.base.git import PACKAGE, benchmark_python, export_package, resolve
from detsim.track.base.fresh import PINNED, ChildError, run_job
from detsim.track.base.git import GitError, git
from detsim.track.base.golden import find_case
from detsim.track.base.metrics import pearson_r
from detsim.track.measure.cost import Count
from detsim.track.measure.cost import CostSpec, count_spec
from detsim.track.verdict.lines import printable

SUITE = Path(__file__).resolve().parents[1]  # this checkout's detsim/track
SIDE_JOB = "detsim.track.explain.side_job:run"


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


def prepare_side(root: Path, commit: str, dest: Path, python: str | None = None) -> Side:
    """Export ``commit``'s package into ``dest`` (new) with this checkout's suite laid over it."""
    sha = resolve(root, commit)
    export_package(root, sha, dest)
    track = dest / PACKAGE / "track"
    shutil.rmtree(track, ignore_errors=True)
    shutil.copytree(SUITE, track, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return Side(sha, dest, python or benchmark_python(root))


def run_side_job(side: Side, job: dict, *, cwd: Path, timeout: float = 900) -> None:
    """Do ``job`` (:mod:`.side_job`) at ``side`` (run in ``cwd``); raises :class:`SideError`, one line."""
    try:
        run_job(SIDE_JOB, job, python=side.python, path=(side.package_dir,), cwd=cwd, timeout=timeout,
                env=PINNED, what=f"{job['job']} {job['workload']}")
    except ChildError as exc:
        raise SideError(f"{side.short}: {exc}") from None


def commits_between(root: Path, last_good: str, first_bad: str) -> list[str]:
    """The commits after ``last_good`` up to and including ``first_bad``, oldest first (first-parent order)."""
    good, bad = resolve(root, last_good), resolve(root, first_bad)
    try:
        commits = git(root, "rev-list", "--reverse", "--first-parent", f"{good}..{bad}").split()
    except GitError as exc:
        raise SideError(str(exc)) from None
    if not commits or commits[-1] != bad:
        raise SideError(f"{bad[:8]} is not a descendant of {good[:8]}")
    return commits


def subject(root: Path, commit: str) -> str:
    """``commit``'s subject line, its control characters escaped (it is printed)."""
    try:
        return printable(git(root, "log", "-1", "--format=%s", commit).strip())
    except GitError:
        return ""


def count_at(side: Side, workload: str, golden: Path, out_dir: Path) -> Count:
    """The instructions of one render of ``workload`` at ``side`` (the callgrind file kept in ``out_dir``)."""
    return count_spec(CostSpec(workload), root=golden.parent.parent, out_dir=out_dir, package_dir=side.package_dir,
                      cwd=out_dir)


def image_at(side: Side, workload: str, golden: Path, out: Path, cwd: Path) -> np.ndarray:
    """The float64 image of ``workload`` rendered by ``side``'s core, saved to ``out`` (.npy)."""
    run_side_job(side, {"job": "image", "workload": workload, "out": str(out), "golden_dir": str(golden)}, cwd=cwd)
    return np.load(out)


def one_minus_r(image: np.ndarray, workload: str, golden: Path) -> float:
    """1 - Pearson r of ``image`` against the golden case's nanoBragg image."""
    r = pearson_r(image, find_case(workload, golden).reference(image.shape))
    return float("nan") if r is None else 1.0 - r

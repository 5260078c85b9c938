"""One side of a cross-commit comparison: a commit's ``detsim`` core with this checkout's suite over it, and
the flagged benchmark measured there (an instruction count, 1 - r, an image, a pixel's trace).

The core never imports the suite, so the core measured is the commit's own while the measuring code is the
same on both sides. A side's jobs (:func:`do_job`) run in a fresh interpreter (``python -P``, the side first
on ``PYTHONPATH``, one thread, ``PYTHONHASHSEED=0``), each a :class:`SideJob` writing its ``out``: ``image``
(the float64 CPU eager image of ``workload``, a ``P1@64``-style workload or a golden case id, as .npy), ``ops``
(its aten ops per call site, :mod:`.profile`, as JSON), ``trace`` (the ``TRACE_PY:`` lines of ``pixel`` (slow,
fast)) and ``launches`` (the device operations of one float32 render on path ``mode``,
:mod:`detsim.track.measure.launches`, as JSON; the triton path under Triton's interpreter) and ``kernel`` (the
commit's fused kernel compiled for sm_90 in ``dtype``, :mod:`detsim.track.gpu.kernel_report`'s record, as JSON). A
parity change is explained by the first traced quantity that changed between two commits, at the pixel that
changed most (:func:`first_change`).
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from detsim.track.base.git import PACKAGE, benchmark_python, export_package, resolve
from detsim.track.base.fresh import PINNED, ChildError, Job, run_job
from detsim.track.base.git import GitError, git
from detsim.track.base.golden import find_case
from detsim.track.base.metrics import pearson_r
from detsim.track.base.device_costs import LAUNCH_DTYPE
from detsim.track.base.workloads import reduced
from detsim.track.compare.traces import compare_traces, parse_trace
from detsim.track.measure.cost import Count
from detsim.track.measure.cost import CostSpec, count_spec
from detsim.track.report.profile import count_ops
from detsim.track.judge.text import printable

SUITE = Path(__file__).resolve().parents[1]  # this checkout's detsim/track
SIDE_JOB = "detsim.track.report.sides:do_job"


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


@dataclass(frozen=True)
class SideJob(Job):
    """One job at a side (the module docstring): ``what`` of ``workload``, written to ``out``."""

    what: str  # one of JOBS
    workload: str  # a ``P1@64``-style workload or a golden case id
    out: str
    golden_dir: str | None = None
    mode: str | None = None  # launches: the path rendered
    dtype: str | None = None  # kernel: the variant compiled
    pixel: tuple[int, int] | None = None  # trace: (slow, fast)


def run_side_job(side: Side, job: str, workload: str, golden: Path | None, out: Path, *, cwd: Path,
                 timeout: float = 900, **more) -> Path:
    """Do ``job`` of ``workload`` (:func:`do_job`; ``more``: the :class:`SideJob`'s other fields) at ``side``, run
    in ``cwd``; the file it wrote, ``out``. Raises :class:`SideError`, one line."""
    asked = SideJob(job, workload, str(out), golden and str(golden), **more)
    try:
        run_job(SIDE_JOB, asked, python=side.python, path=(side.package_dir,), cwd=cwd, timeout=timeout,
                env=PINNED, what=f"{job} {workload}")
    except ChildError as exc:
        raise SideError(f"{side.short}: {exc}") from None
    return out


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


def one_minus_r(image: np.ndarray, workload: str, golden: Path) -> float:
    """1 - Pearson r of ``image`` against the golden case's nanoBragg image."""
    r = pearson_r(image, find_case(workload, golden).reference(image.shape))
    return float("nan") if r is None else 1.0 - r


# ---- in the side's fresh interpreter ----
JOBS = ("image", "ops", "trace", "launches", "kernel")


def config_of(workload: str, golden: Path | None):
    """The configuration of a reduced reference workload (``P1@64``) or of a golden case id."""
    from detsim import config_from_argv

    reference = reduced(workload)
    if reference is not None:
        return reference.config(config_from_argv)
    return find_case(workload, golden).config(config_from_argv)


def render(config):
    import torch

    import detsim

    torch.set_num_threads(1)
    return detsim.simulate(config, device="cpu", dtype=torch.float64)


def do_job(job: SideJob) -> dict:
    """Do ``job`` (see the module docstring); the file written."""
    out = Path(job.out)
    if job.what not in JOBS:
        raise ValueError(f"no side job {job.what!r} (one of {', '.join(JOBS)})")
    if job.what == "kernel":  # the commit's fused kernel compiled for sm_90 (no device, no configuration)
        from detsim.track.gpu.kernel_report import fused_kernel_report

        out.write_text(json.dumps(fused_kernel_report(job.dtype).to_dict(), indent=1, sort_keys=True) + "\n")
        return {"out": str(out)}
    if job.what == "launches" and job.mode == "triton":
        os.environ["TRITON_INTERPRET"] = "1"  # before Triton's kernels are defined: the CPU runs them interpreted
    config = config_of(job.workload, Path(job.golden_dir) if job.golden_dir else None)
    if job.what == "image":
        np.save(out, render(config).detach().cpu().numpy())
    elif job.what == "launches":
        import torch

        import detsim
        from detsim.track.measure.launches import count_render

        torch.set_num_threads(1)
        counts = count_render(detsim.prepare, detsim.render, config, job.mode, getattr(torch, LAUNCH_DTYPE))
        out.write_text(json.dumps(counts, indent=1, sort_keys=True) + "\n")
    elif job.what == "ops":
        render(config)  # warm-up: lazy imports and caches are not counted
        out.write_text(json.dumps(count_ops(lambda: render(config)), indent=1, sort_keys=True) + "\n")
    else:  # trace
        from detsim.diagnostics.pixel_trace import trace_pixels

        with open(out, "w") as handle:
            trace_pixels(config, [job.pixel], out=handle)
    return {"out": str(out)}


# ---- a parity change's first traced quantity ----
RTOL, ATOL = 1e-12, 0.0  # the same program at two commits: anything beyond rounding of the printout


def worst_pixel(old: np.ndarray, new: np.ndarray, reference: np.ndarray | None = None) -> tuple[int, int]:
    """(slow, fast) of the largest |new - old|; if the images are equal, of the largest |new - reference|."""
    delta = np.abs(new.astype(np.float64) - old.astype(np.float64))
    if not delta.any() and reference is not None:
        delta = np.abs(new.astype(np.float64) - reference.astype(np.float64))
    s, f = np.unravel_index(int(np.argmax(delta)), delta.shape)
    return int(s), int(f)


def _values(values) -> str:
    return " ".join(f"{v:.17g}" for v in values) or "(no values)"


def first_change(old_text: str, new_text: str, old_name: str = "old", new_name: str = "new") -> dict | None:
    """The first quantity whose traced value differs: ``{"name", "occurrence", "labels", "old", "new",
    "rel", "reason", "differing"}`` (differing: the names that differ, in order), or None."""
    comparison = compare_traces(parse_trace(old_text, old_name), parse_trace(new_text, new_name), rtol=RTOL, atol=ATOL)
    first = comparison.first
    if first is None:
        return None
    names = list(dict.fromkeys(d.name for d in comparison.differences))
    return {"name": first.name, "occurrence": first.occurrence,
            "labels": " ".join(f"{k}={v}" for k, v in first.a.labels),
            "old": _values(first.a.values), "new": _values(first.b.values), "rel": first.rel,
            "reason": first.reason, "differing": names, "compared": comparison.compared}


def trace_sentence(commit: str, change: dict | None, pixel: tuple[int, int]) -> str:
    """``the parity change at <commit> starts at `<quantity>`, old -> new`` (or that no trace differs)."""
    if change is None:
        return (f"the traces of pixel (s={pixel[0]}, f={pixel[1]}) agree at both commits: the change is not "
                "in a traced quantity of that pixel")
    where = f" [{change['labels']}]" if change["labels"] else ""
    return (f"the parity change at {commit[:8]} starts at `{change['name']}`{where} of pixel "
            f"(s={pixel[0]}, f={pixel[1]}), {change['old']} -> {change['new']}")

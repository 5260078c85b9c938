"""Changed or irreproducible images, explained by the first op whose output differs although its inputs agree
(what ``detsim-track explain`` says about an image-hash or a reproducibility finding).

A hash change compares two commits' op streams with call sites stripped of line numbers
(:func:`~detsim.track.compare.firstdiff.compare_commits`); images that do not reproduce compare two runs of
one commit along a reproducibility axis (:data:`detsim.track.base.golden.AXES`), line numbers kept
(:func:`~detsim.track.compare.firstdiff.compare_logs`). Each stream is traced in a side's package
(anything with the ``package_dir`` and ``python`` of ``detsim.track.report.sides.Side``) in a fresh
interpreter (float64, CPU).
"""

from __future__ import annotations

import re
from pathlib import Path

from detsim.track.base.fresh import PINNED, thread_vars
from detsim.track.base.golden import AXES, Axis
from detsim.track.compare.divergences import RunComparison
from detsim.track.compare.run_log import RunLog
from detsim.track.compare.runs import Named, trace_at

# why the first divergence of a hash change matters, by its role
ROLES = {
    "culprit": "its inputs agree at both commits but its output differs",
    "operands": "the commits pass different tensors to it, each made identically at both: the operands (the order "
                "of a sum or product) changed, an accidental reordering unless intended",
    "path": "the commits execute different ops from here on (new, removed or reordered code)",
    "inputs": "the computation's inputs differ",
    "victim": "its inputs already differ (an unrecorded producer changed them)",
    "uninitialized": "it reads memory that was never written",
}
RUNS = ("A", "B")
PACKAGE_PREFIX = re.compile(r"\S*?(?=(?<![\w.])detsim/)")  # everything before the package's own detsim/


def record_case(side, case: str, golden: Path, out: Path) -> RunLog:
    """The op stream of one eager render of golden ``case`` at ``side`` (also left in ``out``)."""
    return trace_at(Named("golden", case, golden_dir=str(golden)), out, path=(side.package_dir,), python=side.python,
                     layers=("ops",), interpret="off", env=PINNED)


def hash_sentence(commit: str, report: RunComparison) -> str:
    """``the image change at <commit> starts at #i op at site: why``."""
    first = report.first
    if first is None:
        if report.result_differences:
            return (f"the image change at {commit[:8]} is not in any recorded op: every op matches but the "
                    "results differ (work done outside aten ops)")
        return f"the op streams at {commit[:8]} and before it agree: the image is the same"
    why = ROLES.get(first.role, first.reason)
    detail = ""
    if first.scalars:
        name, (a, b) = next(iter(first.scalars.items()))
        detail = f"; argument `{name}` {a} -> {b}"
        why = "a Python value passed to it changed (a constant or a physical term)"
    elif first.role == "path" and first.where_a and first.where_a != first.where:
        detail = f" (before: {first.where_a})"
    return f"the image change at {commit[:8]} starts at {first.headline()}: {why}{detail}"


def axis_run(case: str, golden: Path, axis: Axis) -> Named:
    """One run of ``case`` along ``axis`` as the divergence finder names it (float64, CPU, the axis's path)."""
    return Named("golden", case, golden_dir=str(golden), mode=axis.mode)


def record_runs(side, case: str, golden: Path, axis: Axis, folder: Path) -> tuple[RunLog, RunLog]:
    """The two runs of ``case`` at ``side`` that ``axis`` varies, recorded op by op (also left in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    return tuple(trace_at(axis_run(case, golden, axis), folder / f"run-{run}.json", path=(side.package_dir,),
                           python=side.python, run=run, threads=threads, layers=("ops",), interpret="off",
                           env={**thread_vars(threads), "PYTHONHASHSEED": seed})
                 for run, threads, seed in zip(RUNS, axis.threads, axis.hash_seeds))


def runs_sentence(commit: str, case: str, axis: Axis, report: RunComparison) -> str:
    """Where the two runs of ``case`` at ``commit`` first differ, or that they agreed here."""
    runs = f"two runs of {case} at {commit[:8]} ({axis.name}: {axis.runs})"
    first = report.first
    if first is None:
        if report.result_differences:
            return (f"{runs} differ in their results but in no recorded op: the variation is outside the aten ops "
                    "(a compiled kernel or Python code between ops)")
        return (f"{runs} gave the same ops and results here: the variation did not show in these two runs (it may "
                "need more runs, another machine or a GPU: docs/determinism.md)")
    where = f" at {in_package(first.where)}" if first.where else ""
    said = f"{runs} first differ at #{first.index} {first.kind} {first.name}{where}: {report.verdict()}"
    if first.scalars:
        name, (a, b) = next(iter(first.scalars.items()))
        said += (f"; its argument `{name}` is {a} in run A and {b} in run B: a Python value computed differently "
                 "in the two runs (from the process id, the hash seed, the clock or an unseeded random number)")
    return said


def in_package(where: str) -> str:
    """A call site with the folder of the exported package dropped (``detsim/rendering/engine.py:180 in render``)."""
    return PACKAGE_PREFIX.sub("", where)


def axis_named(name: str) -> Axis:
    """The axis called ``name`` (ValueError naming the known ones otherwise)."""
    if name not in AXES:
        raise ValueError(f"no reproducibility axis {name!r} (known: {', '.join(AXES)})")
    return AXES[name]


def first_record(report: RunComparison) -> dict | None:
    """The first divergence of ``report`` as the explanation's record keeps it."""
    first = report.first
    return None if first is None else {"role": first.role, "index": first.index, "name": first.name,
                                       "where": first.where, "tensor": first.tensor, "scalars": first.scalars}

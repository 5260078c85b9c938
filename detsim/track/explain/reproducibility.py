"""Images that do not reproduce, explained by the first op whose output differs although its inputs agree.

A ``NONDETERMINISTIC`` finding names a commit, a golden case and an :class:`~detsim.track.base.reproducibility.Axis`.
At that commit the case is rendered twice, each run in a fresh interpreter with that commit's package and the
axis's own variation (its thread counts, its ``PYTHONHASHSEED`` values, its execution path), recorded op by op
(:func:`detsim.track.divergence.across_commits.record_at`), and the two records are compared as the
divergence finder compares two runs (:func:`detsim.track.divergence.firstdiff.compare_records`): the first
culprit (an op fed identical inputs that gave different outputs, a read of never-written memory, state leaked
between runs), its victims, and why such an op usually varies. Line numbers are kept: both runs are one commit.
"""

from __future__ import annotations

import re
from pathlib import Path

from detsim.track.base.fresh import thread_vars
from detsim.track.base.reproducibility import AXES, Axis
from detsim.track.divergence.across_commits import record_at
from detsim.track.divergence.events import Record
from detsim.track.divergence.findings import Report
from detsim.track.divergence.firstdiff import compare_records
from detsim.track.explain.sides import Side

RUNS = ("A", "B")
PACKAGE_PREFIX = re.compile(r"\S*?(?=(?<![\w.])detsim/)")  # everything before the package's own detsim/


def target(case: str, golden: Path, axis: Axis) -> dict:
    """The divergence finder's target of one run of ``case`` along ``axis`` (float64, CPU, the axis's path)."""
    return {"case": case, "golden_dir": str(golden), "mode": axis.mode}


def record_runs(side: Side, case: str, golden: Path, axis: Axis, folder: Path) -> tuple[Record, Record]:
    """The two runs of ``case`` at ``side`` that ``axis`` varies, recorded op by op (also left in ``folder``)."""
    folder.mkdir(parents=True, exist_ok=True)
    records = []
    for run, threads, seed in zip(RUNS, axis.threads, axis.hash_seeds):
        records.append(record_at(target(case, golden, axis), folder / f"run-{run}.json", path=(side.package_dir,),
                                 python=side.python, run=run, threads=threads, layers=("ops",), interpret="off",
                                 env={**thread_vars(threads), "PYTHONHASHSEED": seed}))
    return records[0], records[1]


def compare_runs(a: Record, b: Record) -> Report:
    return compare_records(a, b)


def sentence(commit: str, case: str, axis: Axis, report: Report) -> str:
    """One sentence: where the two runs of ``case`` at ``commit`` first differ, or that they agreed here."""
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
    """A call site with the folder of the exported package dropped (``detsim/engine.py:180 in render``)."""
    return PACKAGE_PREFIX.sub("", where)


def axis_named(name: str) -> Axis:
    """The axis called ``name`` (ValueError naming the known ones otherwise)."""
    if name not in AXES:
        raise ValueError(f"no reproducibility axis {name!r} (known: {', '.join(AXES)})")
    return AXES[name]

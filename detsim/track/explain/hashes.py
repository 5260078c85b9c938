"""An image-hash change explained by the first op whose output differs although its inputs agree.

Both commits' runs of a golden case are recorded op by op, each in its own side's package
(:func:`detsim.track.divergence.across_commits.record_at`, float64 CPU eager), and compared with call sites
stripped of line numbers (:func:`~detsim.track.divergence.across_commits.compare_commits`). The first finding
tells an intended change from an accidental one: a Python value passed to an op changed (a constant, a
physical term), the commits pass different operands to an op (a reordered sum), or they execute
different ops from some point on (new or reordered code).
"""

from __future__ import annotations

from pathlib import Path

from detsim.track.base.fresh import PINNED
from detsim.track.divergence.across_commits import compare_commits, record_at
from detsim.track.divergence.findings import Report
from detsim.track.explain.sides import Side

KINDS = {
    "culprit": "its inputs agree at both commits but its output differs",
    "operands": "the commits pass different tensors to it, each made identically at both: the operands (the order "
                "of a sum or product) changed, an accidental reordering unless intended",
    "path": "the commits execute different ops from here on (new, removed or reordered code)",
    "inputs": "the computation's inputs differ",
    "victim": "its inputs already differ (an unrecorded producer changed them)",
    "uninitialized": "it reads memory that was never written",
}


def record_case(side: Side, case: str, golden: Path, out: Path) -> object:
    """The op stream of one float64 CPU eager render of golden ``case`` at ``side`` (also left in ``out``)."""
    return record_at({"case": case, "golden_dir": str(golden)}, out, path=(side.package_dir,), python=side.python,
                     layers=("ops",), interpret="off", env=PINNED)


def compare_sides(old_record, new_record) -> Report:
    return compare_commits(old_record, new_record)


def sentence(commit: str, report: Report) -> str:
    """``the image change at <commit> starts at #i op at site: why``."""
    first = report.first
    if first is None:
        if report.result_differences:
            return (f"the image change at {commit[:8]} is not in any recorded op: every op matches but the "
                    "results differ (work done outside aten ops)")
        return f"the op streams at {commit[:8]} and before it agree: the image is the same"
    why = KINDS.get(first.role, first.reason)
    detail = ""
    if first.scalars:
        name, (a, b) = next(iter(first.scalars.items()))
        detail = f"; argument `{name}` {a} -> {b}"
        why = "a Python value passed to it changed (a constant or a physical term)"
    elif first.role == "path" and first.where_a and first.where_a != first.where:
        detail = f" (before: {first.where_a})"
    return f"the image change at {commit[:8]} starts at {first.headline()}: {why}{detail}"

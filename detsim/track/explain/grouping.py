"""One explanation per cause: the findings one change made are explained once, on the cheapest of them.

Jobs of one kind between the same two commits (for images that do not reproduce: along one axis at one
commit) are one cause. The job kept is the one whose workload is cheapest to render (pixel·steps) among
those that measure what the verdict flagged (a cost finding's own count); a stand-in (the count standing for a
timing or memory finding) only where the cause has nothing else, since a stand-in need not show the change.
Its ``also`` names the others, and its answer ends with them.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from detsim.track.base.golden import GoldenError, find_case
from detsim.track.base.workloads import reduced
from detsim.track.explain.jobs import Job

NAMED = 5  # the others an answer names before it counts the rest


def cost(workload: str, golden: Path) -> float:
    """Pixel·steps of one render of ``workload`` (a reduced reference workload or a golden case); infinite
    where unknown, so that a known one is preferred."""
    reference = reduced(workload)
    if reference is not None:
        return reference.pixel_steps
    try:
        return find_case(workload, golden).pixel_steps or math.inf
    except GoldenError:
        return math.inf


def _cause(job: Job) -> tuple:
    """What one change shares: the kind and both commits, or, for images that do not reproduce (one commit's
    finding), the axis and that commit."""
    return (job.kind, job.axis, job.first_bad) if job.axis else (job.kind, job.last_good, job.first_bad)


def _name(job: Job) -> str:
    """How an answer names a finding it also explains: a golden case by its id, else the finding's benchmark."""
    return job.origin if reduced(job.workload) is not None else job.workload


def one_per_cause(jobs: list[Job], golden: Path) -> tuple[list[Job], list[str]]:
    """One job per cause (see the module docstring), in the order of the first job of each, and one note per
    cause that stood for several findings."""
    groups: dict[tuple, list[Job]] = {}
    for job in jobs:
        groups.setdefault(_cause(job), []).append(job)
    kept, notes = [], []
    for group in groups.values():
        if len(group) == 1:
            kept.append(group[0])
            continue
        flagged = [job for job in group if not job.stand_in] or group  # what the verdict flagged, measured itself
        chosen = min(flagged, key=lambda job: cost(job.workload, golden))  # the first of the cheapest
        others = tuple(dict.fromkeys(_name(job) for job in group if job is not chosen))
        kept.append(replace(chosen, also=others))
        where = (f"at {chosen.first_bad[:8]} along {chosen.axis}" if chosen.axis
                 else f"between {chosen.last_good[:8]} and {chosen.first_bad[:8]}")
        which = "the cheapest flagged count" if len(flagged) < len(group) else "the cheapest to render"
        notes.append(f"{len(group)} {chosen.kind} findings {where}: one cause, explained once, on {chosen.workload} "
                     f"({which}); its answer names the others")
    return kept, notes


def short(name: str) -> str:
    """A golden case id up to its first ``_`` (``b01``: unique, and what ``--case`` accepts); any other name whole."""
    head, sep, _ = name.partition("_")
    return head if sep and len(head) == 3 and head[0].isalpha() and head[1:].isdigit() else name


def also_text(also: tuple[str, ...]) -> str:
    """``Also explains: b01, c02, d01, d02, e01, ... (47 more).``"""
    shown = ", ".join(short(name) for name in also[:NAMED])
    rest = len(also) - NAMED
    return f"Also explains: {shown}" + (f", ... ({rest} more)" if rest > 0 else "") + "."


def with_others(record: dict, job: Job) -> dict:
    """An explanation's record naming the findings its job also stands for (unchanged for a job alone)."""
    if not job.also:
        return record
    return {**record, "job": {**record["job"], "also": list(job.also)},
            "answer": f"{record['answer']} {also_text(job.also)}"}

"""One explanation, from two commits to an answer: measure, bisect what was not recorded, explain; one
explanation per cause; the evidence bundle.

The steps and what each kind measures are docs/explain.md's ("How a commit is measured"), the bundle's files
its "The bundle". A ``nondeterministic`` job is one commit's: its case rendered twice at the first bad commit
along the job's reproducibility axis, the two runs compared op by op.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import shlex
import sys
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping

import numpy as np

from detsim.track.base.bisection import FirstBad, bisect
from detsim.track.base.golden import GoldenError, find_case
from detsim.track.base.hashing import image_sha256
from detsim.track.base.workloads import reduced
from detsim.track.compare import op_streams
from detsim.track.compare.firstdiff import compare_commits, compare_logs as compare_records
from detsim.track.report import profile
from detsim.track.evidence.manifest import write_manifest
from detsim.track.report.sides import Side, commits_between, count_at, first_change, one_minus_r, prepare_side, \
    run_side_job, subject, trace_sentence, worst_pixel
from detsim.track.report.page import departure_facts, number_text
from detsim.track.base.output import atomic_write_text, write_json
from detsim.track.base.runtime import environment
from detsim.track.base.device_costs import KERNEL_FIELDS, LAUNCHES
from detsim.track.judge.thresholds import COST_THRESHOLD, KERNEL as KERNEL_ROW, LAUNCHES as LAUNCHES_ROW

LAUNCH_THRESHOLD, KERNEL_THRESHOLD = LAUNCHES_ROW.value, KERNEL_ROW.value
KERNEL_SHOWN = ("instructions_per_step", "loop_instructions", "registers", "local_bytes", "calls", "atomics",
                "sass_subroutine_calls")  # the report's fields an explanation compares

class ExplainKind(str, enum.Enum):
    """What an explanation measures at each commit (docs/explain.md, "How a commit is measured")."""

    def __str__(self) -> str:  # as enum.StrEnum (Python 3.11+) does; the project supports 3.10
        return self.value

    COST = "cost"  # the instructions of one render (callgrind)
    LAUNCHES = "launches"  # the device operations of one render on a path
    KERNEL = "kernel"  # the fused kernel's compiled code
    PARITY = "parity"  # 1 - r of a golden case
    HASH = "hash"  # a golden image's sha256
    NONDETERMINISTIC = "nondeterministic"  # two runs of one commit, compared op by op


KINDS = tuple(kind.value for kind in ExplainKind)
COUNTS = (ExplainKind.COST, ExplainKind.LAUNCHES, ExplainKind.KERNEL)  # the kinds whose values are counts


@dataclass(frozen=True)
class ExplainJob:
    """A regression to explain: its kind, the commits on both sides, and what to measure at each."""
    kind: ExplainKind  # a kind's word is read as its member
    last_good: str
    first_bad: str
    workload: str  # P1@64-style workload or a golden case id
    origin: str = "command line"  # or the verdict's finding it comes from
    axis: str | None = None  # nondeterministic jobs: the reproducibility axis whose two runs differ
    also: tuple[str, ...] = ()  # the other findings of the same cause it explains (:func:`one_per_cause`)
    stand_in: bool = False  # counts another workload or measure than the flagged benchmark's (a timing's, a memory's)
    own: str | None = None  # a stand-in's flagged workload, countable itself, where it differs from ``workload``
    mode: str | None = None  # launches jobs: the path rendered
    measure: str = LAUNCHES  # launches and kernel jobs: what is judged, one of LAUNCH_UNITS or KERNEL_UNITS
    dtype: str | None = None  # kernel jobs: the variant compiled

    def __post_init__(self):
        object.__setattr__(self, "kind", ExplainKind(self.kind))

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.workload}" + "".join(f"-{x}" for x in (self.axis, self.mode, self.dtype) if x)

    def as_json(self, **given) -> dict:
        """The job as its explanation's record names it; ``given``: what the explanation found (the full hashes)."""
        return {"kind": self.kind.value, "last_good": self.last_good, "first_bad": self.first_bad,
                "workload": self.workload, "origin": self.origin, **given}


def is_bad(kind: ExplainKind, good) -> Callable[[object], bool]:
    """Whether a value is bad against the last good one: a count above it by more than the gate's threshold,
    any rise of 1 - r (exact), any other image hash."""
    kind = ExplainKind(kind)
    thresholds = {ExplainKind.COST: COST_THRESHOLD, ExplainKind.LAUNCHES: LAUNCH_THRESHOLD,
                  ExplainKind.KERNEL: KERNEL_THRESHOLD}
    if kind in thresholds:
        return lambda value: value > good * (1 + thresholds[kind])
    if kind is ExplainKind.PARITY:
        return lambda value: value > good
    return lambda value: value != good


def _progress(text: str) -> None:
    print(f"explain: {text}", file=sys.stderr, flush=True)


def _side_file(folder: Path, kind: str, side: Side, suffix: str) -> Path:
    out = folder / kind / f"{side.short}{suffix}"
    out.parent.mkdir(parents=True, exist_ok=True)
    return out


def _at(side: Side, job: ExplainJob, what: str, golden: Path, folder: Path, kind: str, suffix: str, **more) -> Path:
    """The file the side job ``what`` of ``job``'s workload writes at ``side``, kept in ``folder/kind``."""
    return run_side_job(side, what, job.workload, golden, _side_file(folder, kind, side, suffix), cwd=folder, **more)


def explain_job(job: ExplainJob, root: Path, golden: Path, folder: Path, *, bisecting: bool = True, top: int = 10) -> dict:
    """Run ``job``; its outputs go to ``folder``; returns the JSON record, whose ``answer`` is one paragraph."""
    with tempfile.TemporaryDirectory(prefix="detsim-explain-") as scratch:
        sides = functools.cache(lambda commit: prepare_side(root, commit, Path(scratch) / commit))  # each exported once
        folder.mkdir(parents=True, exist_ok=True)
        if job.kind is ExplainKind.NONDETERMINISTIC:
            return _explain_nondeterministic(job, root, golden, folder, sides)
        return _explain(job, root, golden, folder, sides, bisecting, top)


def _explain_nondeterministic(job: ExplainJob, root: Path, golden: Path, folder: Path, sides) -> dict:
    """Two runs of the case at the first bad commit, varied along the job's axis, compared op by op."""
    axis = op_streams.axis_named(job.axis or "process")
    side = sides(job.first_bad)
    _progress(f"two runs of {job.workload} at {side.short} ({axis.name}: {axis.runs})")
    report = compare_records(*op_streams.record_runs(side, job.workload, golden, axis, folder / "records"))
    said = op_streams.runs_sentence(side.commit, job.workload, axis, report)
    atomic_write_text(folder / "explanation.txt", report.render() + "\n\n" + said + "\n")
    act = ("make that op reproducible (a fixed seed, a fixed summation order, no dependence on the thread count or "
           "on the process: docs/determinism.md); never store these images as a baseline "
           "(`detsim-track baselines --refresh` refuses them)")
    return {"job": job.as_json(first_bad=side.commit, axis=axis.name),
            "pair": {"old": side.commit, "new": side.commit, "subject": subject(root, side.commit)},
            "values": {}, "changed": report.diverged,
            "details": {"verdict": report.verdict(), "first": op_streams.first_record(report)},
            "answer": said + (f". Next: {act}." if report.diverged else ".")}


def _explain(job: ExplainJob, root: Path, golden: Path, folder: Path, sides, bisecting: bool, top: int) -> dict:
    between = commits_between(root, job.last_good, job.first_bad)
    good = sides(job.last_good).commit
    values: dict[str, object] = {}
    extra: dict[str, dict] = {}

    def value_at(commit: str):
        if commit not in values:
            _progress(f"{job.kind} {job.workload} at {commit[:8]}")
            values[commit], extra[commit] = _measure(job, sides(commit), golden, folder)
        return values[commit]

    good_value, bad_value = value_at(good), value_at(between[-1])
    bad = is_bad(job.kind, good_value)
    record = {"job": job.as_json(last_good=good, first_bad=between[-1]), "commits_between": between}
    if not bad(bad_value):
        record["values"] = {c[:12]: _shown(v) for c, v in values.items()}
        record["answer"] = (f"{_what(job)} does not change from {good[:8]} to {between[-1][:8]} on this machine "
                            f"({_shown(good_value)} -> {_shown(bad_value)}): nothing to explain here "
                            + ("(was it flagged by a timing, which a count does not see, or on another machine?)"
                               if job.kind is ExplainKind.COST else "(was it flagged on another machine class?)"))
        record["changed"] = False
        return record
    bisection = None
    if len(between) > 1 and bisecting:
        _progress(f"bisecting {len(between)} commits")
        bisection = bisect([good, *between], value_at, bad)
    first_bad = bisection.first_bad if bisection else between[-1]
    chain = [good, *between]
    parent = chain[chain.index(first_bad) - 1]
    value_at(parent)
    record["bisection"] = None if bisection is None else {
        "first_bad": first_bad, "steps": len(bisection.steps),
        "probes": [{"commit": s.commit, "value": _shown(s.answer), "bad": s.bad} for s in bisection.steps]}
    record["pair"] = {"old": parent, "new": first_bad, "subject": subject(root, first_bad)}
    record["values"] = {c[:12]: _shown(v) for c, v in values.items()}
    explainer = {ExplainKind.COST: _explain_cost, ExplainKind.LAUNCHES: _explain_launches,
                 ExplainKind.KERNEL: _explain_kernel, ExplainKind.PARITY: _explain_parity,
                 ExplainKind.HASH: _explain_hash}[job.kind]
    record["details"], finding = explainer(job, sides(parent), sides(first_bad), extra[parent], extra[first_bad],
                                           golden, folder, top)
    record["changed"] = True
    record["answer"] = _answer(job, record, finding, values[parent], values[first_bad], bisection, len(between))
    return record


def _measure(job: ExplainJob, side: Side, golden: Path, folder: Path) -> tuple[object, dict]:
    """(the value the job judges, what else the measurement left: files, image)."""
    if job.kind is ExplainKind.COST:
        counted = count_at(side, job.workload, golden, folder / "callgrind" / side.short)
        return counted.instructions, {"callgrind": counted.callgrind_file}
    if job.kind is ExplainKind.LAUNCHES:
        counts = json.loads(_at(side, job, "launches", golden, folder, "launches", ".json", mode=job.mode).read_text())
        return counts[job.measure], {"counts": counts}
    if job.kind is ExplainKind.KERNEL:
        report = json.loads(_at(side, job, "kernel", golden, folder, "kernel", ".json", dtype=job.dtype).read_text())
        return report[KERNEL_FIELDS[job.measure]], {"report": report}
    image = np.load(_at(side, job, "image", golden, folder, "images", ".npy"))
    if job.kind is ExplainKind.PARITY:
        return one_minus_r(image, job.workload, golden), {"image": image}
    return image_sha256(image), {"image": image}


def _shown(value):
    return value if isinstance(value, (int, str)) else float(value)


def _explain_cost(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    diff = profile.diff_profiles(profile.function_counts(old_extra["callgrind"]),
                                 profile.function_counts(new_extra["callgrind"]))
    lines = profile.format_profile_diff(diff, top)
    write_json(folder / "profile_diff.json", diff)
    atomic_write_text(folder / "profile_diff.svg", profile.svg_bars(
        diff["rows"], f"Ir change of {job.workload}, {old.short} -> {new.short} (top {top})", top))
    ops = [json.loads(_at(side, job, "ops", golden, folder, "ops", ".json").read_text()) for side in (old, new)]
    changes = profile.diff_ops(*ops)
    write_json(folder / "ops_diff.json", changes)
    op_lines = profile.format_op_changes(changes, top)
    text = ["# instructions per function (callgrind, self Ir), sorted by share of the change", *lines, "",
            "# aten ops per Python call site (elements of their results)", *(op_lines or ["(no op changed)"])]
    atomic_write_text(folder / "explanation.txt", "\n".join(text) + "\n")
    rows = diff["rows"]
    finding = ""
    if rows:
        finding = f"{profile.mega(rows[0]['delta'])} Ir ({rows[0]['share']:.0%} of the change) in {rows[0]['name']}"
    if changes:
        finding += (f"; the op that grew most is {changes[0]['op']} at {changes[0]['site']} "
                    f"({changes[0]['delta']:+,} elements)")
    return {"profile": lines, "ops": op_lines, "top_function": rows[0]["name"] if rows else None,
            "top_op": changes[0] if changes else None}, finding


def _explain_launches(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    a, b = old_extra["counts"], new_extra["counts"]
    parts = [(name, a.get(name, 0), b.get(name, 0))
             for name in ("triton_launches", "compiled_calls", "copies", "syncs")]
    ops = sorted(({"op": op, "old": a["by_op"].get(op, 0), "new": b["by_op"].get(op, 0)}
                  for op in {*a["by_op"], *b["by_op"]}), key=lambda r: (-(r["new"] - r["old"]), r["op"]))
    ops = [row for row in ops if row["new"] != row["old"]]
    lines = [f"{name}: {x:,} -> {y:,}" for name, x, y in parts if x != y]
    lines += [f"{row['op']}: {row['old']:,} -> {row['new']:,} ({row['new'] - row['old']:+,})" for row in ops[:top]]
    write_json(folder / "launches_diff.json", {"old": a, "new": b})
    atomic_write_text(folder / "explanation.txt", f"# device operations of one {job.workload} render, {job.mode} "
                      f"path, {old.short} -> {new.short}\n" + "\n".join(lines or ["(no op changed)"]) + "\n")
    grown = max(parts, key=lambda p: p[2] - p[1])
    if grown[2] > grown[1] and (not ops or grown[2] - grown[1] >= ops[0]["new"] - ops[0]["old"]):
        finding = f"{grown[0].replace('_', ' ')} grew most ({grown[1]:,} -> {grown[2]:,})"
    elif ops:
        finding = f"the kernel launched most more often is {ops[0]['op']} ({ops[0]['old']:,} -> {ops[0]['new']:,})"
    else:
        finding = ""
    return {"lines": lines, "top_op": ops[0] if ops else None}, finding


def _explain_kernel(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    a, b = old_extra["report"], new_extra["report"]
    lines = [f"{name}: {a.get(name)} -> {b.get(name)}" for name in KERNEL_SHOWN if a.get(name) != b.get(name)]
    write_json(folder / "kernel_diff.json", {"old": a, "new": b})
    atomic_write_text(folder / "explanation.txt", f"# the fused kernel ({job.dtype}, {b.get('target')}), {old.short} "
                      f"-> {new.short}\n" + "\n".join(lines or ["(no field changed)"]) + "\n")
    problems = [p for p in b.get("problems", []) if p not in a.get("problems", [])]
    finding = "; ".join(lines[:3]) + (f"; new: {'; '.join(problems)}" if problems else "")
    return {"lines": lines, "problems": problems}, finding


def _explain_parity(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    reference = find_case(job.workload, golden).reference(old_extra["image"].shape)
    pixel = worst_pixel(old_extra["image"], new_extra["image"], reference)
    texts = [_at(side, job, "trace", golden, folder, "traces", ".log", pixel=tuple(pixel)).read_text()
             for side in (old, new)]
    change = first_change(*texts, old_name=old.short, new_name=new.short)
    said = trace_sentence(new.commit, change, pixel)
    atomic_write_text(folder / "explanation.txt", said + "\n")
    return {"pixel": list(pixel), "first_change": change}, said


def _explain_hash(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    report = compare_commits(*(op_streams.record_case(side, job.workload, golden,
                                                      _side_file(folder, "records", side, ".json"))
                               for side in (old, new)))
    said = op_streams.hash_sentence(new.commit, report)
    header = (f"# run A = {old.short} (old), run B = {new.short} (new); call sites without line numbers, view ops "
              "left out (event numbers count the ops that compute). The why/fix lines below are written for two "
              "runs of one commit; across commits, read the last line.\n")
    atomic_write_text(folder / "explanation.txt", header + report.render() + "\n\n" + said + "\n")
    return {"verdict": report.verdict(), "first": op_streams.first_record(report)}, said


def _what(job: ExplainJob) -> str:
    if job.kind is ExplainKind.LAUNCHES:
        return f"the number of {job.measure} of one {job.workload} render on the {job.mode} path"
    if job.kind is ExplainKind.KERNEL:
        return f"the fused kernel's {job.measure} ({job.dtype}, compiled for sm_90)"
    return {ExplainKind.COST: f"the instruction count of {job.workload}",
            ExplainKind.PARITY: f"1 - r of golden case {job.workload}",
            ExplainKind.HASH: f"the image of golden case {job.workload}"}[job.kind]


def _answer(job: ExplainJob, record: dict, finding: str, old, new, bisection: FirstBad | None, between: int) -> str:
    pair = record["pair"]
    found = (f"bisected over {between} commits in {len(bisection.steps)} measurement(s): " if bisection else "")
    change = (f"{old:,} -> {new:,} ({(new - old) / old:+.1%})" if job.kind is ExplainKind.COST else
              f"{old:,} -> {new:,}" + (f" (x{new / old:.2f})" if old else "") if job.kind in COUNTS else
              f"{old:.3g} -> {new:.3g}" if job.kind is ExplainKind.PARITY else
              f"sha256 {str(old)[:12]} -> {str(new)[:12]}")
    act = {
        ExplainKind.COST: "look at that function's caller in the commit's diff; if the extra work is intended, the new "
                          "count becomes the level the next commits are judged against",
        ExplainKind.LAUNCHES: "find the loop that launches it in the commit's diff (a kernel per chunk, per block or "
                              "per step where one served the image); if intended, the new count becomes the level",
        ExplainKind.KERNEL: "read the kernel's loop in the commit's diff (a value kept live across the loop costs "
                            "registers, more than the registers there are spills to local memory, a libdevice function "
                            "is a call); if intended, the new figure becomes the level",
        ExplainKind.PARITY: "check that quantity's formula in the commit's diff against nanoBragg's",
        ExplainKind.HASH: "if the change is intended (a physics change), refresh the baselines with `detsim-track "
                          "baselines --refresh`; if not (a reordered sum), restore the order"}[job.kind]
    return (f"{found}{_what(job)} changes at {pair['new'][:8]} (\"{pair['subject']}\", parent {pair['old'][:8]}): "
            f"{change}. {finding[:1].upper() + finding[1:] if finding else 'No single place explains it.'}. "
            f"Next: {act}.")


def departure_answer(job: ExplainJob, record: Mapping, sentence: str, map_lines: list[str]) -> dict:
    """The explanation of a target's parity finding, from where its image departs from the reference at the
    first bad commit (``record``: as ``detsim.track.target.departure.departure`` makes it, stored when the
    commit was recorded; ``sentence`` and ``map_lines``: that module's words and map of it)."""
    worst = [f"  (s={w['s']}, f={w['f']}): {number_text(w['target'])} against {number_text(w['reference'])} "
             f"(ratio {number_text(w['ratio'])})" for w in record["worst"]]
    return {"job": job.as_json(), "commits_between": [], "changed": True,
            "details": {"departure": dict(record),
                        "lines": [*map_lines, departure_facts(record), "worst pixels (target against reference):",
                                  *worst]},
            "answer": f"the image of {job.workload} at {job.first_bad[:8]} departs from the reference: {sentence}. "
                      "Next: trace the quantities of one of the worst pixels in both programs."}


# ---- one explanation per cause ----
# One explanation per cause: the findings one change made are explained once, on the cheapest of them.
#
# Jobs of one kind between the same two commits (for images that do not reproduce: along one axis at one
# commit) are one cause. The job kept is the one whose workload is cheapest to render (pixel·steps) among
# those that measure what the verdict flagged (a cost finding's own count); a stand-in (the count standing for a
# timing or memory finding) only where the cause has nothing else, since a stand-in need not show the change.
# Its ``also`` names the others, and its answer ends with them.

NAMED = 5  # the others an answer names before it counts the rest


def render_cost(workload: str, golden: Path) -> float:
    """Pixel·steps of one render of ``workload`` (a reduced reference workload or a golden case); infinite
    where unknown, so that a known one is preferred."""
    reference = reduced(workload)
    if reference is not None:
        return reference.pixel_steps
    try:
        return find_case(workload, golden).pixel_steps or math.inf
    except GoldenError:
        return math.inf


def _cause(job: ExplainJob) -> tuple:
    """What one change shares: the kind and both commits, or, for images that do not reproduce (one commit's
    finding), the axis and that commit."""
    return (job.kind, job.axis, job.first_bad) if job.axis else (job.kind, job.last_good, job.first_bad)


def _name(job: ExplainJob) -> str:
    """How an answer names a finding it also explains: a golden case by its id, else the finding's benchmark."""
    return job.origin if reduced(job.workload) is not None else job.workload


def one_per_cause(jobs: list[ExplainJob], golden: Path) -> tuple[list[ExplainJob], list[str]]:
    """One job per cause (see the section's comment), in the order of the first job of each, and one note per
    cause that stood for several findings."""
    groups: dict[tuple, list[ExplainJob]] = {}
    for job in jobs:
        groups.setdefault(_cause(job), []).append(job)
    kept, notes = [], []
    for group in groups.values():
        if len(group) == 1:
            kept.append(group[0])
            continue
        flagged = [job for job in group if not job.stand_in] or group  # what the verdict flagged, measured itself
        chosen = min(flagged, key=lambda job: render_cost(job.workload, golden))  # the first of the cheapest
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


def with_others(record: dict, job: ExplainJob) -> dict:
    """An explanation's record naming the findings its job also stands for (unchanged for a job alone)."""
    if not job.also:
        return record
    return {**record, "job": {**record["job"], "also": list(job.also)},
            "answer": f"{record['answer']} {also_text(job.also)}"}


# ---- the bundle ----
def answer_text(records: list[dict]) -> str:
    """``answer.md``: one heading and paragraph per explanation."""
    parts = ["# What changed, where, since which commit", ""]
    for record in records:
        job = record["job"]
        where = (f"at {job['first_bad'][:8]}, {job['axis']}" if job.get("axis")
                 else f"{job['last_good'][:8]}..{job['first_bad'][:8]}")
        parts += [f"## {job['kind']} of {job['workload']} ({where}, from {job['origin']})", "", record["answer"], ""]
    return "\n".join(parts)


def write_bundle(folder: Path, records: list[dict], argv: list[str], root: Path) -> None:
    """Write the bundle's shared files into ``folder`` (the temporary one) and its manifest last."""
    write_json(folder / "explain.json", {"report": "explain", "explanations": records})
    commits = sorted({c for r in records for c in r.get("commits_between", []) + [r["job"]["last_good"]] if c})
    atomic_write_text(folder / "commands.txt", f"# run from: {root}\n{shlex.join(['detsim-track', *argv])}\n"
                      + "".join(f"# commit {c}\n" for c in commits))
    write_json(folder / "env.json", environment())
    atomic_write_text(folder / "answer.md", answer_text(records))
    write_manifest(folder)

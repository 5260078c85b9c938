"""One explanation, from two commits to an answer: measure, bisect what was not recorded, explain.

A :class:`Job` names a kind (``cost``, ``parity``, ``hash``, ``nondeterministic``), the last good and first
bad commits and the workload (a reduced reference workload such as ``P1@64``, or a golden case id). A
``nondeterministic`` job is one commit's, not a pair's: its case is rendered twice at the first bad commit
along the job's reproducibility axis and the two runs compared op by op (:mod:`.reproducibility`); every
other kind goes across commits. :func:`explain_job`:

1. measures the flagged benchmark at both commits (:mod:`.side_values`: instructions, 1 - r, image sha256);
2. when commits lie between them, bisects them measuring only that benchmark (:mod:`.bisection`) and
   moves the pair to the first bad commit and its parent;
3. explains the pair: the differential profile and aten-op diff (cost), the first traced quantity of
   the worst pixel (parity), the first op whose output differs although its inputs agree (hash);
4. writes every output into ``folder`` and returns the record, whose ``answer`` is one paragraph.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.golden import find_case
from detsim.track.runtime.output import atomic_write_text, write_json
from detsim.track.explain import hashes, opcount, parity_trace, profile, reproducibility, side_values
from detsim.track.explain.bisection import bisect, cost_is_bad, hash_is_bad, parity_is_bad
from detsim.track.explain.sides import Side, commits_between, prepare_side, run_side_job, subject

KINDS = ("cost", "parity", "hash", "nondeterministic")


@dataclass(frozen=True)
class Job:
    kind: str
    last_good: str
    first_bad: str
    workload: str  # P1@64-style workload or a golden case id
    origin: str = "command line"  # or the verdict's finding it comes from
    axis: str | None = None  # nondeterministic jobs: the reproducibility axis whose two runs differ
    also: tuple[str, ...] = ()  # the other findings of the same cause it explains (grouping.one_per_cause)

    @property
    def name(self) -> str:
        return f"{self.kind}-{self.workload}" + (f"-{self.axis}" if self.axis else "")


class Sides:
    """The sides of one job, exported on first use into a scratch folder (removed by :meth:`close`)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._scratch = tempfile.TemporaryDirectory(prefix="detsim-explain-")
        self._sides: dict[str, Side] = {}

    def __getitem__(self, commit: str) -> Side:
        if commit not in self._sides:
            self._sides[commit] = prepare_side(self.root, commit, Path(self._scratch.name) / commit)
        return self._sides[commit]

    @property
    def scratch(self) -> Path:
        return Path(self._scratch.name)

    def close(self) -> None:
        self._scratch.cleanup()


def _progress(text: str) -> None:
    import sys

    print(f"explain: {text}", file=sys.stderr, flush=True)


def explain_job(job: Job, root: Path, golden: Path, folder: Path, *, bisecting: bool = True, top: int = 10) -> dict:
    """Run ``job`` (see the module docstring); outputs go to ``folder``; returns the JSON record."""
    sides = Sides(root)
    try:
        if job.kind == "nondeterministic":
            return _explain_nondeterministic(job, root, golden, folder, sides)
        return _explain(job, root, golden, folder, sides, bisecting, top)
    finally:
        sides.close()


def _explain_nondeterministic(job: Job, root: Path, golden: Path, folder: Path, sides: Sides) -> dict:
    """Two runs of the case at the first bad commit, varied along the job's axis, compared op by op."""
    axis = reproducibility.axis_named(job.axis or "process")
    folder.mkdir(parents=True, exist_ok=True)
    side = sides[job.first_bad]
    _progress(f"two runs of {job.workload} at {side.short} ({axis.name}: {axis.runs})")
    report = reproducibility.compare_runs(*reproducibility.record_runs(side, job.workload, golden, axis,
                                                                       folder / "records"))
    said = reproducibility.sentence(side.commit, job.workload, axis, report)
    atomic_write_text(folder / "explanation.txt", report.render() + "\n\n" + said + "\n")
    first = report.first
    act = ("make that op reproducible (a fixed seed, a fixed summation order, no dependence on the thread count or "
           "on the process: docs/determinism.md); never store these images as a baseline "
           "(`detsim-track baselines --refresh` refuses them)")
    return {"job": {"kind": job.kind, "last_good": job.last_good, "first_bad": side.commit, "workload": job.workload,
                    "origin": job.origin, "axis": axis.name},
            "pair": {"old": side.commit, "new": side.commit, "subject": subject(root, side.commit)},
            "values": {}, "changed": report.diverged,
            "details": {"verdict": report.verdict(), "first": None if first is None else {
                "role": first.role, "index": first.index, "name": first.name, "where": first.where,
                "tensor": first.tensor, "scalars": first.scalars}},
            "answer": said + (f". Next: {act}." if report.diverged else ".")}


def _explain(job: Job, root: Path, golden: Path, folder: Path, sides: Sides, bisecting: bool, top: int) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    between = commits_between(root, job.last_good, job.first_bad)
    good = sides[job.last_good].commit
    values: dict[str, object] = {}
    extra: dict[str, dict] = {}

    def value_at(commit: str):
        if commit not in values:
            _progress(f"{job.kind} {job.workload} at {commit[:8]}")
            values[commit], extra[commit] = _measure(job, sides[commit], golden, folder)
        return values[commit]

    good_value, bad_value = value_at(good), value_at(between[-1])
    is_bad = _predicate(job.kind, good_value)
    record = {"job": {"kind": job.kind, "last_good": good, "first_bad": between[-1], "workload": job.workload,
                      "origin": job.origin},
              "commits_between": between, "values": {}}
    if not is_bad(bad_value):
        record["values"] = {c[:12]: _shown(v) for c, v in values.items()}
        record["answer"] = (f"{_what(job)} does not change from {good[:8]} to {between[-1][:8]} on this machine "
                            f"({_shown(good_value)} -> {_shown(bad_value)}): nothing to explain here "
                            + ("(was it flagged by a timing, which a count does not see, or on another machine?)"
                               if job.kind == "cost" else "(was it flagged on another machine class?)"))
        record["changed"] = False
        return record
    first_bad, bisection = between[-1], None
    if len(between) > 1 and bisecting:
        _progress(f"bisecting {len(between)} commits")
        found = bisect(between, value_at, is_bad)
        first_bad, bisection = found.first_bad, found
    chain = [good, *between]
    parent = chain[chain.index(first_bad) - 1]
    value_at(parent)
    record["bisection"] = None if bisection is None else {
        "first_bad": first_bad, "steps": bisection.steps,
        "probes": [{"commit": p["commit"], "value": _shown(p["value"]), "bad": p["bad"]} for p in bisection.probes]}
    record["pair"] = {"old": parent, "new": first_bad, "subject": subject(root, first_bad)}
    record["values"] = {c[:12]: _shown(v) for c, v in values.items()}
    explainer = {"cost": _explain_cost, "parity": _explain_parity, "hash": _explain_hash}[job.kind]
    details, finding = explainer(job, sides[parent], sides[first_bad], extra[parent], extra[first_bad],
                                 golden, folder, top)
    record["details"] = details
    record["changed"] = True
    record["answer"] = _answer(job, record, finding, values[parent], values[first_bad], bisection, len(between))
    return record


def _measure(job: Job, side: Side, golden: Path, folder: Path) -> tuple[object, dict]:
    """(the value the job judges, what else the measurement left: files, image)."""
    if job.kind == "cost":
        counted = side_values.count_at(side, job.workload, golden, folder / "callgrind" / side.short)
        return counted.instructions, {"callgrind": counted.callgrind_file}
    out = folder / "images" / f"{side.short}.npy"
    out.parent.mkdir(parents=True, exist_ok=True)
    image = side_values.image_at(side, job.workload, golden, out, cwd=folder)
    if job.kind == "parity":
        return side_values.one_minus_r(image, job.workload, golden), {"image": image}
    return side_values.hash_of(image), {"image": image}


def _predicate(kind: str, good):
    return {"cost": cost_is_bad, "parity": parity_is_bad, "hash": hash_is_bad}[kind](good)


def _shown(value):
    return value if isinstance(value, (int, str)) else float(value)


def _explain_cost(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    diff = profile.diff_profiles(profile.function_counts(old_extra["callgrind"]),
                                 profile.function_counts(new_extra["callgrind"]))
    lines = profile.format_profile_diff(diff, top)
    write_json(folder / "profile_diff.json", diff)
    atomic_write_text(folder / "profile_diff.svg", profile.svg_bars(
        diff["rows"], f"Ir change of {job.workload}, {old.short} -> {new.short} (top {top})", top))
    ops = {}
    for side in (old, new):
        out = folder / "ops" / f"{side.short}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        run_side_job(side, {"job": "ops", "workload": job.workload, "out": str(out), "golden_dir": str(golden)},
                     cwd=folder)
        ops[side.commit] = json.loads(out.read_text())
    changes = opcount.diff_ops(ops[old.commit], ops[new.commit])
    write_json(folder / "ops_diff.json", changes)
    op_lines = opcount.format_op_changes(changes, top)
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


def _explain_parity(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    reference = find_case(job.workload, golden).reference(old_extra["image"].shape)
    pixel = parity_trace.worst_pixel(old_extra["image"], new_extra["image"], reference)
    texts = []
    for side in (old, new):
        out = folder / "traces" / f"{side.short}.log"
        out.parent.mkdir(parents=True, exist_ok=True)
        texts.append(parity_trace.trace_at(side, job.workload, pixel, golden, out, cwd=folder))
    change = parity_trace.first_change(*texts, old_name=old.short, new_name=new.short)
    said = parity_trace.sentence(new.commit, change, pixel)
    atomic_write_text(folder / "explanation.txt", said + "\n")
    return {"pixel": list(pixel), "first_change": change}, said


def _explain_hash(job, old: Side, new: Side, old_extra, new_extra, golden, folder, top) -> tuple[dict, str]:
    records = []
    for side in (old, new):
        out = folder / "records" / f"{side.short}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        records.append(hashes.record_case(side, job.workload, golden, out))
    report = hashes.compare_sides(*records)
    said = hashes.sentence(new.commit, report)
    header = (f"# run A = {old.short} (old), run B = {new.short} (new); call sites without line numbers, view ops "
              "left out (event numbers count the ops that compute). The why/fix lines below are written for two "
              "runs of one commit; across commits, read the last line.\n")
    atomic_write_text(folder / "explanation.txt", header + report.render() + "\n\n" + said + "\n")
    first = report.first
    return {"verdict": report.verdict(), "first": None if first is None else {
        "role": first.role, "index": first.index, "name": first.name, "where": first.where,
        "tensor": first.tensor, "scalars": first.scalars}}, said


def _what(job: Job) -> str:
    return {"cost": f"the instruction count of {job.workload}", "parity": f"1 - r of golden case {job.workload}",
            "hash": f"the image of golden case {job.workload}",
            "nondeterministic": f"two runs of golden case {job.workload}"}[job.kind]


def _answer(job: Job, record: dict, finding: str, old, new, bisection, between: int) -> str:
    pair = record["pair"]
    what = _what(job)
    found = (f"bisected over {between} commits in {bisection.steps} measurement(s): " if bisection is not None
             else "")
    change = (f"{old:,} -> {new:,} ({(new - old) / old:+.1%})" if job.kind == "cost" else
              f"{old:.3g} -> {new:.3g}" if job.kind == "parity" else f"sha256 {str(old)[:12]} -> {str(new)[:12]}")
    act = {"cost": "look at that function's caller in the commit's diff; if the extra work is intended, the new count "
                   "becomes the level the next commits are judged against",
           "parity": "check that quantity's formula in the commit's diff against nanoBragg's",
           "hash": "if the change is intended (a physics change), refresh the baselines with `detsim-track baselines "
                   "--refresh`; if not (a reordered sum), restore the order"}[job.kind]
    return (f"{found}{what} changes at {pair['new'][:8]} (\"{pair['subject']}\", parent {pair['old'][:8]}): "
            f"{change}. {finding[:1].upper() + finding[1:] if finding else 'No single place explains it.'}. "
            f"Next: {act}.")

"""Which of detsim's commits a recording takes: the newest always, each older one until its record is complete.

Inputs: the checkout (git), ``results/asv/<machine>/`` (asv's results files) and ``results/asv/benchmarks.json``
(the suite's benchmark names, as asv found them when it last ran). A commit's record is complete or absent: a
results file that lacks a benchmark of the suite (a run killed while it recorded) or cannot be read (killed
while asv wrote it) is not a record, and that commit is recorded again. Standard library only.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from ..base.files import RecordingError, read_json

NOT_RESULTS = ("machine.json", "benchmarks.json")  # asv's files in a results folder that record no commit



def suite_benchmarks(results: Path) -> frozenset[str] | None:
    """The benchmark names asv found in the suite when it last ran (its ``benchmarks.json``, written before
    it records anything); None when there is none to read."""
    try:
        found = read_json(results / "benchmarks.json")
    except RecordingError:
        return None
    return frozenset(name for name, entry in found.items() if isinstance(entry, dict)) if isinstance(found, dict) else None


def missing_benchmarks(path: Path, suite: frozenset[str] | None) -> list[str] | None:
    """The suite's benchmarks that the results file ``path`` lacks, sorted (None when no suite is known:
    then no file can be judged complete); a file that cannot be read is a :class:`RecordingError`."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise RecordingError(f"{path}: not an asv results file")
    return None if suite is None else sorted(suite - set(data["results"]))


def plan(root: Path, machine: str, recent: int, rev_range: str | None = None) -> tuple[list[str], list[str]]:
    """(the commits to record, newest first; one note per commit recorded again): the ``recent`` latest of HEAD,
    or those of ``rev_range`` (``A..B``). The newest is always recorded; an older commit is recorded unless one
    of its results files holds every benchmark of the suite. A results file that cannot be read is removed: it
    is no record, and asv cannot add to it."""
    args = [rev_range] if rev_range else [f"--max-count={recent}", "HEAD"]
    done = subprocess.run(["git", "rev-list", *args], cwd=root, capture_output=True, text=True)
    commits = done.stdout.split()
    if done.returncode != 0 or not commits:
        why = done.stderr.strip().splitlines()[-1:] or ["no commits"]
        raise RecordingError(f"{rev_range or 'HEAD'}: not a range of {root} ({why[0]})")
    folder = root / "results" / "asv" / machine
    suite = suite_benchmarks(root / "results" / "asv")
    record, notes = [], []
    for commit in commits:
        gaps = []
        for path in sorted(p for p in folder.glob(f"{commit[:8]}-*.json") if p.name not in NOT_RESULTS):
            try:
                gaps.append(missing_benchmarks(path, suite))
            except RecordingError as exc:
                path.unlink()
                notes.append(f"{exc}: removed, {commit[:8]} is recorded again")
        if commit != commits[0] and [] in gaps:
            continue  # recorded completely before
        record.append(commit)
        if commit != commits[0] and gaps:
            notes.append(f"{commit[:8]} was recorded only in part ({_gap(gaps)}); recorded again")
    return record, notes


def _gap(gaps: list[list[str] | None]) -> str:
    """What the most complete of a commit's results files lacks, in a few words."""
    known = [gap for gap in gaps if gap is not None]
    if not known:
        return "no results/asv/benchmarks.json says what a complete record holds"
    least = min(known, key=len)
    return f"{len(least)} of the suite's benchmarks missing, {least[0]} first"



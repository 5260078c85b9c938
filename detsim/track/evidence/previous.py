"""Earlier bundles of an area: their stamps, the previous one and the history, and what changed since the
previous one (docs/evidence.md, "Comparison with the previous bundle" and "Hashes")."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Sequence

from detsim.track.base.hashing import sha256_bytes
from detsim.track.base.output import utc_stamp
from detsim.track.evidence import pytest_runs as pr
from detsim.track.evidence.durations import HISTORY, judge_durations
from detsim.track.evidence.manifest import check_bundle
from detsim.track.compare.outputs import compare_outputs
from detsim.track.base.status import Status
from detsim.track.base.exitcodes import BadInput
from detsim.track.evidence.outcomes import (ArtifactChange, BundleChanges, Fixed, NewFailure,
                                           OutcomeChange, Outcomes, RunChange, TestPresence, TestResult)

STAMP_RE = re.compile(r"^(\d{8}T\d{6}Z)(?:-(\d+))?$")
STABLE_ARTIFACTS = ("collect.log", "commands.txt", "env.json")
DETAIL_LINES = 10  # differing keys or lines kept per changed artifact


@dataclass(frozen=True)
class PastBundle:
    """An earlier bundle that measured something."""

    name: str  # its stamp
    path: Path
    outcomes: Outcomes


def stamp_key(name: str) -> tuple[str, int] | None:
    """The order of bundle names (stamp, then suffix); None for a name that is not a stamp."""
    match = STAMP_RE.fullmatch(name)
    return (match.group(1), int(match.group(2) or 1)) if match else None


def free_stamp(area_dir: Path) -> str:
    """The current UTC stamp, suffixed ``-2``, ``-3``... when a bundle (or one in progress) has it."""
    base = utc_stamp()
    taken = {p.name for p in area_dir.iterdir()} if area_dir.is_dir() else set()
    for n in range(1, 10_000):
        name = base if n == 1 else f"{base}-{n}"
        if name not in taken and not any(t.startswith(f".{name}.") for t in taken):
            return name
    raise BadInput(f"no free bundle name for stamp {base} in {area_dir}")


def _read(path: Path) -> Outcomes | None:
    """The outcomes of the bundle at ``path``, None when it measured nothing. Raises :class:`BadInput` when
    its results.json cannot be read: passing it over would silently compare with an older bundle."""
    file = path / "results.json"
    try:
        results = json.loads(file.read_text())
        if not isinstance(results, dict):
            raise TypeError("not a JSON object")
        return Outcomes.from_record(results) if results.get("measured") else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
        raise BadInput(f"{file}: the previous bundle's results cannot be read ({why}); check the bundle with "
                       f"`detsim-track evidence --verify {path}`, then repair it or move it out of the area") from None


def history(area_dir: Path, stamp: str) -> list[PastBundle]:
    """Earlier bundles of the area that measured something, newest first (at most :data:`HISTORY`)."""
    if not area_dir.is_dir():
        return []
    current = stamp_key(stamp)
    older = sorted((p for p in area_dir.iterdir() if p.is_dir() and stamp_key(p.name)
                    and stamp_key(p.name) < current), key=lambda p: stamp_key(p.name), reverse=True)
    found = []
    for path in older:
        outcomes = _read(path)
        if outcomes is not None:
            found.append(PastBundle(path.name, path, outcomes))
            if len(found) == HISTORY:
                break
    return found


def compare(current: Outcomes, previous: Outcomes, history: Sequence[Sequence[TestResult]]) -> BundleChanges:
    """What changed from ``previous`` to ``current`` (durations are also judged against ``history``): their
    tests, warnings and runs compared by :func:`~detsim.track.compare.outputs.compare_outputs` (run A: now, run B: before)."""
    tests = compare_outputs(current.outputs(), previous.outputs(), lambda now, was: now.outcome != was.outcome)
    new_failures, fixed, changed = [], [], []
    for d in tests.differences:
        if d.only == "B":
            continue  # removed, below
        test, before = d.a, d.b and d.b.outcome
        if test.failing and before not in pr.FAILING:
            new_failures.append(NewFailure(*d.name, test.outcome, test.message, before))
        elif before in pr.FAILING and not test.failing:
            fixed.append(Fixed(*d.name, test.outcome, before))
        elif before is not None:
            changed.append(OutcomeChange(*d.name, test.outcome, before, test.skip_reason))
    measured = {d for d, r in previous.runs.items() if r.status == Status.OK}
    warnings = compare_outputs(current.warning_texts(), previous.warning_texts(), lambda now, was: False)
    devices = sorted(set(current.runs) | set(previous.runs))
    runs = compare_outputs({d: current.status(d) for d in devices}, {d: previous.status(d) for d in devices})
    return BundleChanges(
        new_failures=tuple(new_failures), fixed=tuple(fixed), outcome_changes=tuple(changed),
        added=tuple(TestPresence(*d.name) for d in tests.differences if d.only == "A" and d.name[0] in measured),
        removed=tuple(TestPresence(*d.name) for d in tests.differences
                      if d.only == "B" and current.status(d.name[0]) == Status.OK),
        new_warnings=tuple(d.a for d in warnings.differences if d.only == "A"),
        gone_warnings=tuple(d.b for d in warnings.differences if d.only == "B"),
        run_changes=tuple(RunChange(d.name, d.a, d.b) for d in runs.differences),
        **judge_durations(current.tests, previous.tests, history),
    )


def stable_text(name: str, data: bytes) -> str:
    """The part of a bundle artifact meant to be identical run to run (docs/evidence.md, "Hashes")."""
    text = data.decode(errors="replace")
    if name == "collect.log":
        return pr.normalised_collect_log(text)
    if name == "commands.txt":
        commands = text.split(pr.RETIME_HEADER, 1)[0]
        return "".join(line for line in commands.splitlines(keepends=True) if not line.startswith("#"))
    return text


def _flatten(value, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        return {key: text for k, v in value.items() for key, text in _flatten(v, f"{prefix}{k}.").items()}
    return {prefix.rstrip("."): json.dumps(value)}


def _differences(name: str, old: str, new: str) -> list[str]:
    """The differing keys (env.json) or lines (the others) of two stable texts."""
    if name == "env.json":
        try:
            a, b = _flatten(json.loads(old)), _flatten(json.loads(new))
        except ValueError:
            return ["not valid JSON"]
        return [f"{k}: {a.get(k, '(absent)')} -> {b.get(k, '(absent)')}"
                for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
    return [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def changed_artifacts(previous: Path, current: Path) -> tuple[ArtifactChange, ...]:
    """The stable artifacts whose normalised content differs (or that one bundle lacks), with the differing
    keys or lines (run A: now, run B: before, as in :func:`compare`)."""
    now, was = ({name: stable_text(name, (folder / name).read_bytes()) if (folder / name).is_file() else None
                 for name in STABLE_ARTIFACTS} for folder in (current, previous))
    out = []
    for d in compare_outputs(now, was).differences:
        new, old = d.a, d.b
        if old is None or new is None:
            missing = "missing now" if new is None else "missing in the previous bundle"
            out.append(ArtifactChange(d.name, None, None, (missing,)))
        else:
            out.append(ArtifactChange(d.name, sha256_bytes(old.encode()), sha256_bytes(new.encode()),
                                      tuple(_differences(d.name, old, new)[:DETAIL_LINES])))
    return tuple(out)


def compare_with(previous: PastBundle, current: Outcomes, folder: Path, older: Sequence[PastBundle]) -> BundleChanges:
    """:func:`compare`, plus the artifacts changed since ``previous`` and its problems against its sha256.txt."""
    comparison = compare(current, previous.outcomes, [b.outcomes.tests for b in older])
    return replace(comparison, previous=previous.name, changed_artifacts=changed_artifacts(previous.path, folder),
                   previous_problems=tuple(check_bundle(previous.path)))

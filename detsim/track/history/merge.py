"""Merge one asv results folder into another: ``.ci/track`` records a commit's exact benchmarks in two asv
processes at once, each with a results folder of its own (docs/tracking.md). A benchmark recorded in both keeps
the second folder's, later value; what cannot be merged is named in a :class:`~.jsonc.ResultsError` and left
where it was."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from detsim.files import atomic_write
from detsim.track.history.jsonc import ResultsError, read_json

SAME = ("commit_hash", "env_name", "result_columns", "version")  # what two parts of one recording share
MERGED = ("results", "durations")  # the per-benchmark maps that are joined
NOT_RESULTS = ("machine.json", "benchmarks.json")


def merge_file(part: Path, into: Path) -> None:
    """Fold the results file ``part`` into ``into`` (both of one commit and environment), then remove ``part``."""
    ours, theirs = read_json(into), read_json(part)
    for data, path in ((ours, into), (theirs, part)):
        if not isinstance(data, dict) or not all(isinstance(data.get(key), dict) for key in MERGED):
            raise ResultsError(f"{path}: not an asv results file")
    differ = [key for key in SAME if ours.get(key) != theirs.get(key)]
    if differ:
        raise ResultsError(f"{part}: another recording than {into} ({', '.join(differ)} differ)")
    for key in MERGED:
        ours[key].update(theirs[key])
    text = json.dumps(ours).encode()  # asv's own layout: one line, keys in its order
    atomic_write(into, lambda handle: handle.write(text))
    part.unlink()


def merge_results(source: Path, target: Path) -> list[Path]:
    """Every results file under ``source/<machine>/`` merged into or moved to ``target/<machine>/``; the
    target files written, in name order."""
    written = []
    for part in sorted(source.glob("*/*.json")):
        if part.name in NOT_RESULTS:
            continue
        into = target / part.parent.name / part.name
        if into.exists():
            merge_file(part, into)
        else:
            into.parent.mkdir(parents=True, exist_ok=True)
            shutil.move(part, into)
        written.append(into)
    return written

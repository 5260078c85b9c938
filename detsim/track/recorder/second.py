"""The second recording of detsim's exact families (one asv process per core): its asv configuration, and its
results files merged into the first's (``results/asv``), each file replaced whole so that a failure leaves
every file valid. Standard library only."""

from __future__ import annotations

import json
from pathlib import Path

from ..base.files import RecordingError, read_json, write_aside
from .plan import NOT_RESULTS

CONFIG = "asv.conf.json"
SAME = ("commit_hash", "env_name", "result_columns", "version")  # what two parts of one recording share
MERGED = ("results", "durations")  # the per-benchmark maps that are joined



def second_config(root: Path, out: Path, results: str) -> str:
    """Write ``out``: asv.conf.json with its environments, results and page folders suffixed -second
    (``results`` for the results); return the first environment folder."""
    config = read_json(root / CONFIG, comments=True)
    if not isinstance(config, dict):
        raise RecordingError(f"{root / CONFIG}: not a JSON object")
    first = config.get("env_dir", ".asv/env")
    config.update(env_dir=first + "-second", results_dir=results, html_dir=".asv/html-second")
    write_aside(out, json.dumps(config, indent=1).encode())
    return first


def merge_file(part: Path, into: Path) -> None:
    """Fold the results file ``part`` into ``into`` (both of one commit and environment), then remove ``part``."""
    ours, theirs = read_json(into), read_json(part)
    for data, path in ((ours, into), (theirs, part)):
        if not isinstance(data, dict) or not all(isinstance(data.get(key), dict) for key in MERGED):
            raise RecordingError(f"{path}: not an asv results file")
    differ = [key for key in SAME if ours.get(key) != theirs.get(key)]
    if differ:
        raise RecordingError(f"{part}: another recording than {into} ({', '.join(differ)} differ)")
    for key in MERGED:
        ours[key].update(theirs[key])
    write_aside(into, json.dumps(ours).encode())  # asv's own layout: one line, keys in its order
    part.unlink()


def merge_results(source: Path, target: Path) -> list[Path]:
    """Every results file under ``source/<machine>/`` merged into or moved to ``target/<machine>/``; the
    target files written, in name order. Each file is replaced whole; a failure leaves every file valid."""
    written = []
    for part in sorted(source.glob("*/*.json")):
        if part.name in NOT_RESULTS:
            continue
        into = target / part.parent.name / part.name
        try:
            if into.exists():
                merge_file(part, into)
            else:
                into.parent.mkdir(parents=True, exist_ok=True)
                write_aside(into, part.read_bytes())
                part.unlink()
        except OSError as exc:
            raise RecordingError(f"{part} could not be merged into {into} ({exc.strerror or exc}); every results "
                              "file is whole, and the commits not merged are recorded again") from None
        written.append(into)
    return written



"""The divergence finder across two commits: each side's op stream recorded in that commit's own package.

:func:`record_at` records one run in a fresh interpreter (``python -P -m
detsim.track.commands.diverge --record-worker ...``) whose ``detsim`` comes first from
``package_dir`` (a commit's exported package, :func:`~detsim.track.base.commits.export_package`, that
carries this recorder); :func:`compare_commits` compares two such records as
:func:`~detsim.track.divergence.firstdiff.compare_records` does, after dropping the line numbers and
folders from every call site (:func:`without_lines`): between commits, code moves up and down a file
without the computation changing, and a line number alone must not read as a change of path.
"""

from __future__ import annotations

import copy
import re
import subprocess
from pathlib import Path

from detsim.track.base.commits import child_env
from detsim.track.divergence.firstdiff import Report, compare_records
from detsim.track.divergence.events import Record

WORKER = "detsim.track.commands.diverge"
_LINE = re.compile(r":\d+(?= in )")


class RecordError(RuntimeError):
    """A side whose run could not be recorded (one line)."""


def record_at(package_dir: Path, python: str, target_args: list[str], out: Path, *, run: str = "A",
              threads: int = 1, cwd: Path | None = None, env: dict | None = None, timeout: float = 900) -> Record:
    """Record ``target_args`` (``diverge``'s own target arguments, e.g. ``--case c02``) with the ``detsim``
    of ``package_dir``; the record is also left in ``out`` (JSON)."""
    argv = [python, "-P", "-m", WORKER, "--record-worker", str(out), str(threads), run, *target_args]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, cwd=cwd or out.parent,
                              env=child_env(package_dir, **(env or {})), timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RecordError(f"recording at {package_dir} ran past {timeout:.0f} s") from None
    if done.returncode != 0 or not out.exists():
        tail = [line for line in done.stderr.strip().splitlines() if line.strip()]
        raise RecordError(f"recording at {package_dir} exited {done.returncode}: {tail[-1] if tail else 'no message'}")
    return Record.load(out)


def without_lines(record: Record, *, views: bool = True) -> Record:
    """A copy of ``record`` whose call sites name file and function only (``render_paths.py in f``).

    ``views=False`` also drops the ops that only alias their input (``unsqueeze``, ``slice``...: they move no
    data) and numbers the remaining events from 0, so that a finding lands on the op that computes.
    """
    stripped = copy.deepcopy(record)
    if not views:
        stripped.events = [e for e in stripped.events if not e.view]
        for index, event in enumerate(stripped.events):
            event.index = index
    for event in stripped.events:
        event.where = _LINE.sub("", re.sub(r"[^\s:()]*[/\\]", "", event.where or ""))
    return stripped


def compare_commits(old: Record, new: Record, *, max_items: int = 3, views: bool = False) -> Report:
    """The first op or kernel where the new commit's run departs from the old one's (line numbers ignored;
    view ops left out unless ``views``: event numbers then count the ops that compute)."""
    return compare_records(without_lines(old, views=views), without_lines(new, views=views), max_items=max_items)

"""The divergence finder across two commits: each side's op stream recorded in that commit's own package.

:func:`record_at` records one run in a fresh interpreter (a job of :mod:`.record_job`, through
:func:`~detsim.track.base.fresh.run_job`) whose ``detsim`` comes first from the given package folder (a
commit's exported package, :func:`~detsim.track.base.commits.export_package`, that carries this
recorder; by default this package); :func:`compare_commits` compares two such records as
:func:`~detsim.track.divergence.firstdiff.compare_records` does, after dropping the line numbers and
folders from every call site (:func:`without_lines`): between commits, code moves up and down a file
without the computation changing, and a line number alone must not read as a change of path.
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Mapping, Sequence

from detsim.track.base.fresh import HERE, ChildError, run_job
from detsim.track.divergence.firstdiff import Report, compare_records, site
from detsim.track.divergence.events import Record
from detsim.track.divergence.record_job import LAYERS

RECORD_JOB = "detsim.track.divergence.record_job:run"
_LINE = re.compile(r":\d+(?= in )")


class RecordError(RuntimeError):
    """A side whose run could not be recorded (one line)."""


def record_at(target: dict, out: Path, *, path: Sequence[Path] = (HERE,), python: str | None = None,
              run: str = "A", threads: int = 1, layers: Sequence[str] = LAYERS, interpret: str = "auto",
              cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float | None = 900,
              what: str | None = None) -> Record:
    """Record run ``run`` of ``target`` (:mod:`.record_job`) at ``threads`` torch threads in a fresh interpreter,
    ``path`` first on its ``PYTHONPATH`` and ``env`` pinning it; the record is also left in ``out`` (JSON).

    Raises :class:`RecordError` (one line, starting with ``what``) when the process fails, and also when
    the run ends the process (``os._exit``) before a record is made.
    """
    job = {"target": target, "layers": list(layers), "interpret": interpret, "threads": threads, "run": run,
           "out": str(out)}
    try:
        answer = run_job(RECORD_JOB, job, python=python, path=path, cwd=cwd or out.parent, env=env,
                         timeout=timeout, what=what or f"recording at {path[0]}").result
    except ChildError as exc:
        raise RecordError(str(exc)) from None
    if "ended" in answer:
        raise RecordError(answer["ended"])
    return Record.load(out)


def without_lines(record: Record) -> Record:
    """A copy of ``record`` whose call sites name file and function only (``render_paths.py in f``), without
    the ops that only alias their input (``unsqueeze``, ``slice``...: they move no data), the remaining events
    numbered from 0, so that a finding lands on the op that computes."""
    stripped = copy.deepcopy(record)
    stripped.events = [e for e in stripped.events if not e.view]
    for index, event in enumerate(stripped.events):
        event.index, event.where = index, _LINE.sub("", site(event.where))
    return stripped


def compare_commits(old: Record, new: Record) -> Report:
    """The first op or kernel where the new commit's run departs from the old one's (line numbers and view
    ops ignored: event numbers count the ops that compute)."""
    return compare_records(without_lines(old), without_lines(new))

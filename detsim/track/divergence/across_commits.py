"""Recording one run in a fresh interpreter (a commit's exported package first on its path), and comparing
the records of two commits with call sites stripped of folders and line numbers: between commits, code
moves up and down a file without the computation changing."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Mapping, Sequence

from detsim.track.base.fresh import HERE, ChildError, run_job
from detsim.track.divergence.firstdiff import Report, compare_records, site
from detsim.track.divergence.events import Record
from detsim.track.divergence.record_job import LAYERS

_LINE = re.compile(r":\d+(?= in )")


class RecordError(RuntimeError):
    """A side whose run could not be recorded (one line)."""


def record_at(target: dict, out: Path, *, path: Sequence[Path] = (HERE,), python: str | None = None,
              run: str = "A", threads: int = 1, layers: Sequence[str] = LAYERS, interpret: str = "auto",
              cwd: Path | None = None, env: Mapping[str, str] | None = None, timeout: float | None = 900,
              what: str | None = None) -> Record:
    """Record run ``run`` of ``target`` in a fresh interpreter, ``path`` first on its ``PYTHONPATH``; the
    record is also left in ``out``. Raises :class:`RecordError` when the process fails or the run ends it."""
    job = {"target": target, "layers": list(layers), "interpret": interpret, "threads": threads, "run": run,
           "out": str(out)}
    try:
        answer = run_job("detsim.track.divergence.record_job:run", job, python=python, path=path,
                         cwd=cwd or out.parent, env=env, timeout=timeout, what=what or f"recording at {path[0]}").result
    except ChildError as exc:
        raise RecordError(str(exc)) from None
    if "ended" in answer:
        raise RecordError(answer["ended"])
    return Record.load(out)


def without_lines(record: Record) -> Record:
    """A copy of ``record`` whose call sites name file and function only, without the view ops (they move
    no data), renumbered from 0, so that a finding lands on the op that computes."""
    stripped = copy.deepcopy(record)
    stripped.events = [e for e in stripped.events if not e.view]
    for index, event in enumerate(stripped.events):
        event.index, event.where = index, _LINE.sub("", site(event.where))
    return stripped


def compare_commits(old: Record, new: Record) -> Report:
    """The first op or kernel where the new commit's run departs from the old one's."""
    return compare_records(without_lines(old), without_lines(new))

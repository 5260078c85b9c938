"""One step of the device check: its outcome, the budget it runs under, and running it as a time-boxed child.

Every step but the few pure comparisons runs in a child process of its own (:mod:`detsim.track.base.fresh`),
killed with its whole process group when its box runs out: a hang in one step costs that step's box, never
the rest of the run. A job is told its own soft deadline too, so that it stops starting new work before it is
killed and returns what it measured; and it keeps what it has measured so far in a file (:func:`keep_partial`),
which the step reads back where the job was killed all the same.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from detsim.track.base.fresh import ChildError, Finished, Job, run, run_job
from detsim.track.base.status import Status

MIN_STEP_S = 5.0  # below this much budget left, a step is not started
GRACE = 0.85  # a job's soft deadline, as a share of its box: it returns what it has before it is killed


@dataclass(frozen=True)
class StepResult:
    """A step's outcome: ``data`` is what it measured (JSON-ready), ``reason`` one line where it was not ok."""

    name: str
    status: Status
    seconds: float = 0.0
    reason: str = ""
    data: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {**asdict(self), "status": self.status.value, "seconds": round(self.seconds, 2)}


class Budget:
    """The seconds the whole check may take, counted from its start."""

    def __init__(self, total_s: float, clock: Callable[[], float] = time.monotonic):
        self.total_s, self._clock = total_s, clock
        self._start = clock()

    def box(self, box_s: float) -> float | None:
        """The seconds a step with box ``box_s`` may take now, or None when too little is left to start one."""
        left = self.total_s - (self._clock() - self._start)
        return None if left < MIN_STEP_S else min(box_s, left)


Judge = Callable[[dict], tuple["Status", str]]  # a job's answer -> (status, reason)


@dataclass(frozen=True)
class StepJob(Job):
    """A step's job: what each step's own fields ask, and, set by :func:`run_job_step`, its soft deadline and the
    file where it keeps what it has measured so far (:func:`keep_partial`)."""

    deadline_s: float = field(default=0.0, kw_only=True)
    partial: str = field(default="", kw_only=True)


def not_run(name: str) -> StepResult:
    return StepResult(name, Status.NOT_RUN, reason="the check's time budget was spent before this step")


def run_job_step(name: str, entry: str, job: StepJob, judge: Judge, *, budget: Budget, box_s: float, root: Path,
                 env: Mapping[str, str] | None = None) -> StepResult:
    """Run ``entry`` (``module:function``) on ``job`` in a fresh interpreter of this Python, time-boxed, and
    judge its answer. The job gets ``deadline_s``, its soft deadline."""
    box = budget.box(box_s)
    if box is None:
        return not_run(name)
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="detsim-gpu-step-") as scratch:
        partial = Path(scratch) / "partial.json"
        try:
            done = run_job(entry, replace(job, deadline_s=round(box * GRACE, 1), partial=str(partial)),
                           python=sys.executable, path=(root,), cwd=root, timeout=box, env=env, what=name,
                           check=False)
        except ChildError as exc:
            unfinished = _unfinished(name, exc, time.monotonic() - started, box)
            if partial.is_file():  # what it measured before it was killed
                return replace(unfinished, data=json.loads(partial.read_text()))
            return unfinished
    seconds = time.monotonic() - started
    if done.returncode != 0 or done.result is None:
        why = done.last_line() or f"exited {done.returncode} without an answer"
        return StepResult(name, Status.CRASHED, seconds, f"the job exited {done.returncode}: {why}")
    status, reason = judge(done.result)
    return StepResult(name, status, seconds, reason, done.result)


def keep_partial(job: StepJob, answer: dict) -> None:
    """Inside a job: replace the file of what it has measured so far with ``answer`` (whole or not at all)."""
    if job.partial:
        partial = f"{job.partial}.{os.getpid()}.tmp"
        with open(partial, "w") as handle:
            json.dump(answer, handle)
        os.replace(partial, job.partial)


def run_command(name: str, argv: Sequence[str], *, budget: Budget, box_s: float, root: Path,
                env: Mapping[str, str] | None = None) -> tuple[Finished | None, StepResult | None, float]:
    """Run a command time-boxed: ``(how it ended, None, seconds)``, or ``(None, the step's outcome, seconds)``
    where it could not start, ran past its box or the budget was spent (the caller judges the rest)."""
    box = budget.box(box_s)
    if box is None:
        return None, not_run(name), 0.0
    started = time.monotonic()
    try:
        done = run(argv, cwd=root, env=env, timeout=box, what=name)
    except ChildError as exc:
        seconds = time.monotonic() - started
        return None, _unfinished(name, exc, seconds, box), seconds
    return done, None, time.monotonic() - started


def _unfinished(name: str, exc: ChildError, seconds: float, box: float) -> StepResult:
    """A child that could not start, or ran past its box (and was killed)."""
    status = Status.TIMED_OUT if seconds >= box else Status.CRASHED
    return StepResult(name, status, seconds, str(exc))


def tail(text: str, lines: int = 20) -> list[str]:
    """The last ``lines`` non-blank lines of a child's output (what a record keeps of a log)."""
    kept = [line.rstrip() for line in text.splitlines() if line.strip()]
    return kept[-lines:]

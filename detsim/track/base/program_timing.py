"""A whole program timed as a user runs it, the suite's one way (nanoBragg.c in the device check and in
``detsim-track speed``, the ``detsim`` command in the latter): :func:`timed_runs` runs the timer
(:func:`process_job`) in a fresh process, which waits for each run blocked in ``wait4`` (no CPU taken from the
program, its end seen at once), kills a run past its limit, and reads wall seconds (start-up included), CPU
seconds (user + system, all threads and children), the exit status and the last line of stderr."""

from __future__ import annotations

import os
import signal
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from detsim.track.base.fresh import ChildError, Job, TimedOut, run_job

RUN_LIMIT_S = 120.0  # the longest one timed run may take (nanoBragg.c on P2, one thread: ~24 s); killed past it
PROCESS_JOB = f"{__name__}:process_job"  # the timer, in a process of its own
TAIL_BYTES = 4096  # of the program's stderr kept for the last line


@dataclass(frozen=True)
class ProcessJob(Job):
    """Run ``argv`` up to ``repeats`` times (``env`` added, in ``cwd``), each killed past ``limit_s``, stopping at a
    run that fails, or, with ``enough_s``, takes that long; ``output`` (its file) removed before each run."""

    argv: tuple[str, ...]
    repeats: int = 1
    env: dict[str, str] = field(default_factory=dict)
    cwd: str | None = None
    output: str | None = None
    enough_s: float | None = None
    limit_s: float = RUN_LIMIT_S


@dataclass(frozen=True)
class ProgramRuns:
    """Every run timed (the last the one that failed, where one did) and ``error``, one line, where one failed."""

    runs: tuple[dict, ...] = ()
    error: str = ""
    timed_out: bool = False  # a run, or the timer, was killed past its time limit


def timed_runs(job: ProcessJob, *, box_s: float | None = None) -> ProgramRuns:
    """``job`` run by the timer in a fresh process, the timer killed past ``box_s`` (a caller's budget)."""
    try:
        done = run_job(PROCESS_JOB, job, cwd=Path(job.cwd) if job.cwd else None, timeout=box_s, what="the timer",
                       check=False)
    except ChildError as exc:
        return ProgramRuns(error=str(exc), timed_out=isinstance(exc, TimedOut))
    if done.result is None:
        return ProgramRuns(error=done.last_line() or f"the timer exited {done.returncode}")
    runs = tuple(done.result["runs"])
    if runs[-1]["timed_out"]:
        return ProgramRuns(runs, f"ran past {job.limit_s:g} s", timed_out=True)
    if runs[-1]["returncode"] != 0:
        tail = runs[-1]["stderr_tail"]
        return ProgramRuns(runs, f"exited {runs[-1]['returncode']}" + (f": {tail}" if tail else ""))
    return ProgramRuns(runs)


def process_job(job: ProcessJob) -> dict:
    """Inside the timer's process: ``{"runs": [{"wall_s", "cpu_s", "returncode", "stderr_tail", "timed_out"}...]}``."""
    runs = []
    for _ in range(job.repeats):
        runs.append(_timed(job))
        if runs[-1]["returncode"] != 0 or runs[-1]["timed_out"] or \
                (job.enough_s is not None and runs[-1]["wall_s"] >= job.enough_s):
            break
    return {"runs": runs}


def _timed(job: ProcessJob) -> dict:
    """One run of the program, timed, killed past ``job.limit_s``."""
    env = {**os.environ, **job.env}
    if job.output:
        Path(job.output).unlink(missing_ok=True)
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(job.argv, cwd=job.cwd, env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err)
        killer = threading.Timer(job.limit_s, os.kill, (process.pid, signal.SIGKILL))
        killer.start()
        os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOWAIT)  # ended, not reaped: its pid is not reused yet
        wall = time.perf_counter() - started
        killer.cancel()
        killer.join()  # a kill already under way lands on the unreaped program, never on a reused pid
        _, status, usage = os.wait4(process.pid, 0)
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(max(0, err.seek(0, os.SEEK_END) - TAIL_BYTES))
        tail = err.read().decode(errors="replace").strip().splitlines()
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "returncode": process.returncode,
            "stderr_tail": tail[-1] if tail else "", "timed_out": wall >= job.limit_s}

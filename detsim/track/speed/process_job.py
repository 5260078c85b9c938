"""The timer of a whole program, as a user runs it: a job of :func:`detsim.track.base.fresh.run_job`.

It runs ``job["argv"]`` ``repeats`` times, blocked in ``wait4`` (so it takes no CPU from the program and sees
its end at once), in its own process group (a kill of the job's group ends it too). Per run: ``wall_s`` (start
to exit, interpreter start included), ``cpu_s`` (user + system of the program and its children, all threads),
``returncode`` and ``stderr_tail``; it stops at the first run that fails. ``job["output"]`` is removed before
each run, so that what is read back is the last run's.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

TAIL_BYTES = 4096  # of the program's stderr kept for the last line


def process_job(job: dict) -> dict:
    """Inside the timer's process: run ``job["argv"]`` ``job["repeats"]`` times; ``{"runs": [record...]}``."""
    runs = []
    for _ in range(job.get("repeats", 1)):
        runs.append(_timed(job))
        if runs[-1]["returncode"] != 0:
            break
    return {"runs": runs}


def _timed(job: dict) -> dict:
    """One run of the program, timed."""
    env = {**os.environ, **job.get("env", {})}
    if job.get("output"):
        Path(job["output"]).unlink(missing_ok=True)
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(job["argv"], cwd=job.get("cwd"), env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(max(0, err.seek(0, os.SEEK_END) - TAIL_BYTES))
        tail = err.read().decode(errors="replace").strip().splitlines()
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "returncode": process.returncode,
            "stderr_tail": tail[-1] if tail else ""}

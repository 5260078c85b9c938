"""The timer of a whole program, as a user runs it: a job of :func:`detsim.track.base.fresh.run_job`.

A **job** is a JSON object: ``argv`` (the program and its arguments), ``env`` (variables added to this
process's environment: the thread count), ``cwd``, ``repeats`` and ``output`` (a file the program
writes, removed before each run so that what is read back is the last run's). The timer runs the program
``repeats`` times, one after the other, waiting for each blocked in ``wait4`` (so it takes no CPU from
the program, and sees its end at once, where a polling parent would see it up to a poll later), and
answers one record per run: ``wall_s`` (from start to exit: what a user waits, interpreter start and
imports included), ``cpu_s`` (user + system seconds of the program and the children it waited for, all
threads together), ``returncode`` and ``stderr_tail`` (its last line); it stops at the first run that
fails. The program runs in the timer's process group, so a kill of the job's group ends it too.
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

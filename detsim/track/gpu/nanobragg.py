"""nanoBragg.c on the speed workloads, for the same pixel·steps per second as detsim's paths: the given binary
with the workload's command line, every host core its OpenMP threads, its float image written to a scratch
folder. The check never fetches or builds nanoBragg.c: without a binary this step is skipped."""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from detsim.track.gpu.plan import workload
from detsim.track.gpu.steps import Budget, StepResult, StepStatus, run_command, tail


def time_nanobragg(binary: Path, workloads: tuple[str, ...], *, budget: Budget, box_s: float,
                   root: Path) -> StepResult:
    """Each workload once, wall-timed (start-up included, as a user runs it); ``box_s`` for all of them."""
    name = "nanobragg"
    cores = os.cpu_count() or 1
    env = {**os.environ, "OMP_NUM_THREADS": str(cores)}
    data = {"binary": str(binary), "threads": cores, "workloads": {}}
    deadline = time.monotonic() + box_s
    with tempfile.TemporaryDirectory(prefix="detsim-nanobragg-") as scratch:
        for wname in workloads:
            load = workload(wname)
            argv = [str(binary), *load.argv(), "-floatfile", str(Path(scratch) / f"{wname}.bin")]
            done, unfinished, seconds = run_command(name, argv, budget=budget,
                                                    box_s=max(0.0, deadline - time.monotonic()), root=root, env=env)
            if unfinished is not None:
                return StepResult(name, unfinished.status, seconds, f"{wname}: {unfinished.reason}", data)
            if done.returncode != 0:
                return StepResult(name, StepStatus.ERROR, seconds, f"{wname}: exited {done.returncode}: "
                                  f"{(tail(done.stderr or done.stdout) or ['no output'])[-1]}", data)
            data["workloads"][wname] = {"wall_s": round(seconds, 4), "pixel_steps": load.pixel_steps,
                                        "pixel_steps_per_s": load.pixel_steps / seconds}
    return StepResult(name, StepStatus.OK, sum(w["wall_s"] for w in data["workloads"].values()), data=data)


def skipped() -> StepResult:
    return StepResult("nanobragg", StepStatus.SKIPPED,
                      reason="no nanoBragg.c binary given (--nanobragg PATH); the check never builds one")

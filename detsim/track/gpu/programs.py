"""The steps that run other programs than detsim's paths: the test suite and nanoBragg.c.

The test suite's device-parametrized tests on CUDA: every test that takes the ``device`` fixture
(tests/conftest.py), run with ``--device cuda`` and selected by its ``cuda`` parameter. Without a CUDA device
they are only collected, which proves the selection still finds them.

nanoBragg.c on the speed workloads, for the same pixel·steps per second as detsim's paths: the given binary
with the workload's command line, every host core its OpenMP threads, its float image written to a scratch
folder. The check never fetches or builds nanoBragg.c: without a binary this step is skipped."""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

from detsim.track.gpu.plan import workload
from detsim.track.gpu.steps import Budget, StepResult, run_command, tail
from detsim.track.base.status import Status


SUMMARY = re.compile(r"(\d+) (passed|failed|error|errors|skipped|deselected|xfailed|xpassed)\b")
COLLECTED = re.compile(r"^(\d+)(?:/\d+)? tests? collected", re.M)


def pytest_argv(run: bool, workers: int) -> list[str]:
    """pytest on the ``cuda`` parameter of every device-parametrized test (``-k cuda`` also takes a test whose
    own name says cuda: those are about CUDA too); ``run`` False: collect them only. A module that cannot be
    imported does not stop the others' tests (it is reported)."""
    argv = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider", "--device", "cuda",
            "-k", "cuda", "--continue-on-collection-errors", "tests", "-rfE"]
    if not run:
        return argv + ["--collect-only"]
    return argv + (["-n", str(workers)] if workers > 1 else [])


def read_run(name: str, returncode: int, stdout: str, seconds: float) -> StepResult:
    """A run's counts and failures from pytest's output: FAILED on a failing test or an error."""
    counts = _counts(stdout)
    failures = [line.split(" ", 1)[1].split(" - ")[0] for line in stdout.splitlines()
                if line.startswith(("FAILED ", "ERROR "))]
    data = {"counts": counts, "failures": failures, "exit": returncode}
    if returncode == 0 and counts.get("passed"):
        return StepResult(name, Status.OK, seconds, data=data)
    if returncode == 1 or failures:
        return StepResult(name, Status.FAILED, seconds, f"{len(failures)} failing: {', '.join(failures[:5])}",
                          data)
    data["log"] = tail(stdout)
    return StepResult(name, Status.CRASHED, seconds, f"pytest exited {returncode}: "
                      + (data["log"][-1] if data["log"] else "no output"), data)


def read_collection(name: str, returncode: int, stdout: str, seconds: float, why_not_run: str) -> StepResult:
    """A collection's count: SKIPPED (not run, with ``why_not_run``) when it found tests, FAILED where a test
    module could not be collected (its tests are lost on a GPU too), else ERROR."""
    found = COLLECTED.search(stdout)
    broken = [line.split(" ", 1)[1].split(" - ")[0] for line in stdout.splitlines() if line.startswith("ERROR ")]
    if found and int(found[1]) > 0 and broken:
        return StepResult(name, Status.FAILED, seconds, f"{len(broken)} test module(s) could not be collected: "
                          f"{', '.join(broken[:4])}", {"collected": int(found[1]), "collection_errors": broken})
    if returncode == 0 and found and int(found[1]) > 0:
        return StepResult(name, Status.SKIPPED, seconds, f"{why_not_run}: {found[1]} tests collected, not run",
                          {"collected": int(found[1])})
    return StepResult(name, Status.CRASHED, seconds, f"collecting the cuda tests failed (pytest exited "
                      f"{returncode}): {(tail(stdout) or ['no output'])[-1]}", {"log": tail(stdout)})


def _counts(stdout: str) -> dict:
    """pytest's final counts (``{"passed": 160, "failed": 2}``) from its last summary line."""
    lines = [line for line in stdout.splitlines() if SUMMARY.search(line)]
    if not lines:
        return {}
    return {word.rstrip("s") if word == "errors" else word: int(n) for n, word in SUMMARY.findall(lines[-1])}


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
                return StepResult(name, Status.CRASHED, seconds, f"{wname}: exited {done.returncode}: "
                                  f"{(tail(done.stderr or done.stdout) or ['no output'])[-1]}", data)
            data["workloads"][wname] = {"wall_s": round(seconds, 4), "pixel_steps": load.pixel_steps,
                                        "pixel_steps_per_s": load.pixel_steps / seconds}
    return StepResult(name, Status.OK, sum(w["wall_s"] for w in data["workloads"].values()), data=data)


def skipped() -> StepResult:
    return StepResult("nanobragg", Status.SKIPPED,
                      reason="no nanoBragg.c binary given (--nanobragg PATH); the check never builds one")

"""The device check's steps that run other programs than detsim's paths, each time-boxed (:func:`~.steps.run_command`)
and judged from its exit status and output into a :class:`~.steps.StepResult`.

- The test suite's device-parametrized tests: every test that takes the ``device`` fixture (tests/conftest.py),
  run with ``--device cuda`` and selected by its ``cuda`` parameter; without a CUDA device they are only
  collected, which proves the selection still finds them.
- The first-divergence finder (``detsim-track diverge``, docs/determinism.md) on a path whose images differ from
  run to run: the culprit read off its report.
- nanoBragg.c on the fixed-cost and speed workloads, for the same pixel·steps per second as detsim's paths: the
  given binary with the workload's command line, every host core its OpenMP threads, its float image written to a
  scratch folder, timed as ``detsim-track speed`` times it (:mod:`detsim.track.base.program_timing`). The check
  never fetches or builds nanoBragg.c: without a binary that step is skipped.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
import tempfile
import time
from pathlib import Path

from detsim.track.base.program_timing import RUN_LIMIT_S, ProcessJob, timed_runs
from detsim.track.base.status import Status
from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.steps import Budget, StepResult, not_run, run_command, tail

NANOBRAGG_CALLS = 3  # a nanoBragg.c run is timed this many times at most, its best kept
NANOBRAGG_LONG_S = 1.0  # ... and once where a run takes this many seconds or more
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


def device_tests(name: str, on_cuda: bool, workers: int, **box) -> StepResult:
    """The device tests run on CUDA (``workers`` pytest-xdist workers), else collected only; ``box``:
    :func:`~.steps.run_command`'s budget, box_s, root and env."""
    done, unfinished, seconds = run_command(name, pytest_argv(on_cuda, workers), **box)
    if unfinished is not None:
        return unfinished
    if on_cuda:
        return read_run(name, done.returncode, done.stdout, seconds)
    return read_collection(name, done.returncode, done.stdout, seconds, "no CUDA device")


def _listed(stdout: str, *starts: str) -> list[str]:
    """The tests or modules pytest's ``-rfE`` lines name (``FAILED tests/x.py::t - why``: ``tests/x.py::t``)."""
    return [line.split(" ", 1)[1].split(" - ")[0] for line in stdout.splitlines() if line.startswith(starts)]


def _reasons(stdout: str) -> dict[str, str]:
    """Why each listed test or module failed, as ``-rfE`` says it (``ERROR tests/x.py - ModuleNotFoundError: …``)."""
    return dict(line.split(" ", 1)[1].split(" - ", 1) for line in stdout.splitlines()
                if line.startswith(("FAILED ", "ERROR ")) and " - " in line)


def read_run(name: str, returncode: int, stdout: str, seconds: float) -> StepResult:
    """A run's counts and failures from pytest's output: FAILED on a failing test or an error."""
    summaries = [line for line in stdout.splitlines() if SUMMARY.search(line)]
    counts = {word.rstrip("s") if word == "errors" else word: int(n)
              for n, word in SUMMARY.findall(summaries[-1])} if summaries else {}
    failures = _listed(stdout, "FAILED ", "ERROR ")
    data = {"counts": counts, "failures": failures, "why": _reasons(stdout), "exit": returncode}
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
    module could not be collected (its tests are lost on a GPU too), else CRASHED."""
    found = COLLECTED.search(stdout)
    broken = _listed(stdout, "ERROR ")
    if found and int(found[1]) > 0 and broken:
        return StepResult(name, Status.FAILED, seconds, f"{len(broken)} test module(s) could not be collected: "
                          f"{', '.join(broken[:4])}", {"collected": int(found[1]), "collection_errors": broken})
    if returncode == 0 and found and int(found[1]) > 0:
        return StepResult(name, Status.SKIPPED, seconds, f"{why_not_run}: {found[1]} tests collected, not run",
                          {"collected": int(found[1])})
    return StepResult(name, Status.CRASHED, seconds, f"collecting the cuda tests failed (pytest exited "
                      f"{returncode}): {(tail(stdout) or ['no output'])[-1]}", {"log": tail(stdout)})


def diverge_argv(path: GpuPath, workload_name: str, device: str, across_processes: bool) -> list[str]:
    """The finder's command for ``path`` on the workload: compiled code is recorded by its kernels (a dispatch
    mode would make torch.compile fall back to eager); each run in its own process when only processes differed."""
    argv = [sys.executable, "-m", "detsim.track.cli", "diverge", "--nanobragg",
            shlex.join(workload(workload_name).argv()), "--device", device, "--dtype", path.dtype,
            "--mode", path.mode]
    if path.mode != "eager":
        argv += ["--layers", "kernels"]
    if across_processes:
        argv.append("--processes")
    return argv


def divergence(name: str, path: GpuPath, workload_name: str, device: str, across_processes: bool,
               **box) -> StepResult:
    """The finder run on ``path`` (``box``: as :func:`device_tests`'s), its report read."""
    done, unfinished, seconds = run_command(name, diverge_argv(path, workload_name, device, across_processes), **box)
    return unfinished or read_report(name, done.returncode, done.stdout, done.stderr, seconds)


def read_report(name: str, returncode: int, stdout: str, stderr: str, seconds: float) -> StepResult:
    """The finder's verdict: its exit 1 means it named where the runs differ (the culprit is the first line of
    its FIRST DIVERGENCE block), 0 that the recorded runs did not differ, anything else that it could not tell."""
    lines = stdout.splitlines()
    verdict = next((line.removeprefix("VERDICT").strip() for line in lines if line.startswith("VERDICT")), "")
    first = []
    if "FIRST DIVERGENCE" in lines:
        for line in lines[lines.index("FIRST DIVERGENCE") + 1:]:
            if not line.startswith("  "):
                break
            first.append(line.strip())
    data = {"exit": returncode, "verdict": verdict, "culprit": first[0] if first else None, "first_divergence": first}
    if returncode == 1:
        return StepResult(name, Status.FAILED, seconds, f"culprit: {data['culprit'] or verdict}", data)
    if returncode == 0:
        return StepResult(name, Status.OK, seconds, "the finder's two runs did not differ: " + verdict, data)
    data["log"] = tail(stderr or stdout)
    return StepResult(name, Status.CRASHED, seconds, f"the finder exited {returncode}: "
                      + (data["log"][-1] if data["log"] else "no output"), data)


def time_nanobragg(binary: Path, workloads: tuple[str, ...], *, budget: Budget, root: Path) -> StepResult:
    """Each workload on its nanoBragg command line (the one detsim's speed step reads) with ``OMP_NUM_THREADS`` =
    every core, wall-timed as a user runs it (start-up and writing its float image included) by the suite's one
    timer of a program (:mod:`detsim.track.base.program_timing`, each call killed past its time limit): the best
    of up to :data:`NANOBRAGG_CALLS` calls, fewer where a call takes :data:`NANOBRAGG_LONG_S` or more."""
    name = "nanobragg"
    cores = os.cpu_count() or 1
    data = {"binary": str(binary), "threads": cores, "workloads": {}}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="detsim-nanobragg-") as scratch:
        for wname in workloads:
            load = workload(wname)
            output = str(Path(scratch) / f"{wname}.bin")
            job = ProcessJob((str(binary), *load.argv(), "-floatfile", output), NANOBRAGG_CALLS,
                             {"OMP_NUM_THREADS": str(cores)}, str(root), output, enough_s=NANOBRAGG_LONG_S)
            box = budget.box(NANOBRAGG_CALLS * RUN_LIMIT_S)
            if box is None:
                unrun = not_run(name)
                return StepResult(name, unrun.status, time.monotonic() - started, f"{wname}: {unrun.reason}", data)
            done = timed_runs(job, box_s=box)
            if done.error:
                return StepResult(name, Status.TIMED_OUT if done.timed_out else Status.CRASHED,
                                  time.monotonic() - started, f"{wname}: {done.error}", data)
            best = min(r["wall_s"] for r in done.runs)
            data["workloads"][wname] = {"wall_s": round(best, 4), "calls": len(done.runs),
                                        "pixel_steps": load.pixel_steps, "pixel_steps_per_s": load.pixel_steps / best}
    return StepResult(name, Status.OK, time.monotonic() - started, data=data)

"""A window of a target's history recorded with a Dask cluster (``detsim-track record --workers/--scheduler``,
docs/cluster.md): what no load changes on the cluster's workers, the timings here, alone.

Three steps. (1) Here, commit after commit, :class:`~detsim.track.target.build.Reuse` decides as in a recording on one machine:
a commit whose sources or installed files are a measured commit's takes its results; every other is built
once, into a folder of its own (``builds/<commit>``: the workers read it, so a cluster's workers share this
checkout's file system), and its cases' renders, reproducibility runs, departures and instruction counts
(:func:`~detsim.track.target.outcomes.measure_cases`) go to the cluster as one task, while the next commit builds. (2) The
tasks are gathered (a progress line on stderr) and the cluster let go: a LocalCluster ends, its cores are
free. (3) Here, with nothing of the recording running beside it, asv records each measured commit in history
order: its suite takes the task's outcomes and times one render of each case, so the timings are this
machine's only (asv's ``--machine``, the history they belong to), and its results go into the project's one
series (:func:`~detsim.track.target.project.in_series`); each twin then takes its commit's results, as on one machine.

A commit's row and results are written only in step 3, whole (temporary file, then rename), so a run that
dies leaves each commit recorded or not at all; a task lost with its worker ran again (:mod:`detsim.track.target.cluster`).
Each case's record names the worker that measured it (:data:`WORKER`) and the recording (:data:`RUN`), which the
verdict reads (:func:`measured_where`).
"""

from __future__ import annotations

import shutil
import socket
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Sequence

from detsim.track.base.where import TARGET_FAMILIES, Taken, new_run, where_note

from detsim.track.target.build import Builder, BuildError, Installation, Measured
from detsim.track.target.cluster import Cluster, Outcome, Tasks, client
from detsim.track.target.outcomes import measure_cases
from detsim.track.recorder.target import TargetRecorder
from detsim.track.recorder.window import Window, how
from detsim.track.target.project import Project
from detsim.track.target.spec import target_cases

BUILDS = "builds"  # in the project folder: one folder per built commit, until asv has timed it
COUNTS = "counts"  # in the project folder: a counted render's work folder per commit (one length for all)
TASK = "measure"  # the tasks' name on the cluster (with the commit)
WORKER = "dask_worker"  # in a case's record: the address of the worker that measured it (none: measured here)
RUN = "dask_run"  # in a case's record measured by a worker: the recording's name (base.where.new_run)


@dataclass(frozen=True)
class Pending:
    """The results of ``commit``, measured by a task not yet gathered (what :class:`Reuse` stores meanwhile)."""

    commit: str


class NotShared(RuntimeError):
    """A worker that does not see the checkout's files (a task fails rather than record every case as broken)."""


def measure_on_worker(spec, cases, bin_dir: Path, count_work: Path, run: str | None = None) -> dict:
    """A task: :func:`~.outcomes.measure_cases` of the commit built in ``bin_dir``, on a worker that sees it."""
    for needed in (Path(bin_dir), Path(spec.root)):
        if not needed.is_dir():
            raise NotShared(f"this worker ({socket.gethostname()}) does not see {needed}: a cluster's workers must "
                            "share this checkout's file system (docs/cluster.md)")
    worker = worker_address()
    measured = measure_cases(spec, cases, bin_dir, count_work)
    return {case: {**record, WORKER: worker, RUN: run} for case, record in measured.items()}


def worker_address() -> str:
    """The address of the Dask worker running this task (this host's name, called outside a worker)."""
    try:
        from distributed import get_worker

        return get_worker().address
    except (ImportError, ValueError):
        return socket.gethostname()


def measured_where(project: Project, machine: str, commits: Sequence[str]) -> str | None:
    """Where the measures of ``commits`` recorded on ``machine`` were taken, as their rows store it, in one
    line (:func:`~detsim.track.base.where.where_note`); None where no Dask worker measured any of them."""
    judged = set(commits)
    measured = [Taken(row["commit"], rec.get(RUN), rec[WORKER]) for row in project.rows(machine)
                if row["commit"] in judged for rec in row["cases"].values() if rec.get(WORKER)]
    return where_note(machine, commits, measured, TARGET_FAMILIES)


def where(cluster: Cluster, machine: str) -> str:
    """Where a cluster's recording measured what (one line, printed and in the record)."""
    return (f"timings: measured here (asv machine {machine}), alone, after the cluster's tasks; parity, image "
            f"hashes, reproducibility, instruction counts, peak memory: {cluster.describe()}")


def record_on_cluster(recorder: TargetRecorder, commits: Sequence[str], cluster: Cluster, window: Window,
                      say: Callable[[str], None]) -> None:
    """Record ``commits`` (oldest first) into ``window`` (module docstring)."""
    project, spec = recorder.project, recorder.spec
    cases = target_cases(spec, recorder.root)
    builder = Builder(spec, project.folder / BUILDS)
    built: dict[str, Installation] = {}
    plan: list[tuple[str, dict | Measured]] = []  # commit -> its row recorded before, or what Reuse made of it
    window.where = where(cluster, recorder.machine)
    run = new_run()
    try:
        with client(cluster) as running:
            tasks = Tasks(running, TASK)

            def submit(installed: Installation) -> Pending:
                tasks.submit(installed.commit, measure_on_worker, spec, cases, installed.bin_dir,
                             project.folder / COUNTS / installed.commit[:12], run)
                return Pending(installed.commit)

            for i, commit in enumerate(commits, 1):
                row = recorder.recorded(commit)
                if row is not None:
                    say(f"[{i}/{len(commits)}] {commit[:8]}: recorded before")
                    plan.append((commit, row))
                    continue
                got = recorder.reuse.measure(builder, commit, submit,
                                             done=lambda installed: built.__setitem__(installed.commit, installed))
                if got.reused_from is not None and commit in built:
                    builder.discard(built.pop(commit))  # a twin by its installed files: nothing to time
                done = how({"build_error": got.build_error, "reused_from": got.reused_from, "reused_by": got.reused_by})
                say(f"[{i}/{len(commits)}] {commit[:8]}: "
                    + (done or f"built in {got.build_s:.1f} s, measured on the cluster"))
                plan.append((commit, got))
            say(f"{len(tasks.futures)} commit(s) to measure on {cluster.describe()}")
            outcomes = tasks.results()
        say("the cluster's tasks are done; the timings, here, one commit at a time")
        _time_and_store(recorder, builder, plan, outcomes, built, window, say)
    finally:
        shutil.rmtree(project.folder / BUILDS, ignore_errors=True)
        shutil.rmtree(project.folder / COUNTS, ignore_errors=True)


def _time_and_store(recorder: TargetRecorder, builder: Builder, plan: Sequence[tuple[str, dict | Measured]],
                    outcomes: dict[str, Outcome], built: dict[str, Installation], window: Window,
                    say: Callable[[str], None]) -> None:
    """Step 3 (module docstring): each commit's row, in history order; a measured commit timed by asv first."""
    failed: dict[str, str] = {}  # measured commit -> why it has no results (its task, or asv)
    timed = 0
    for commit, got in plan:
        if isinstance(got, dict):
            window.already += 1
            window.rows.append(got)
            continue
        if got.build_error is None and isinstance(got.results, Pending):
            measured = got.results.commit
            outcome = outcomes[measured]
            if measured == commit:
                try:
                    if outcome.failed is not None:
                        raise BuildError(f"its task failed on the cluster: {outcome.failed}")
                    timed += 1
                    say(f"timing [{timed}] {commit[:8]}")
                    got = replace(got, results=recorder.measure(built[commit], outcome.value))
                except BuildError as exc:
                    failed[commit] = str(exc)
                    got = replace(got, results=None, build_error=str(exc))
                finally:
                    builder.discard(built.pop(commit))
            elif measured in failed:
                got = replace(got, results=None, build_error=f"not measured: {measured[:8]}, whose results it "
                                                             f"takes, was not ({failed[measured]})")
            else:
                got = replace(got, results=outcome.value)
        window.rows.append(recorder.store(commit, got))

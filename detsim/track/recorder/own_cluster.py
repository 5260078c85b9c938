"""detsim's own exact families (:data:`~.own.EXACT_1` and :data:`~.own.EXACT_2`) recorded as Dask tasks, one per
commit on any worker (``detsim-track record --workers/--scheduler`` without ``--target``, docs/cluster.md).

Run by :class:`~.own.OwnRecording` as a child of .venv's interpreter (``python -m``), so that the recording's own
steps stay standard library only: ``--check`` says in one line, exit 2, when no cluster can be had; ``--commits
FILE`` records them. The checkout's environment (``asv setup``'s, in asv's ``env_dir``) is made before.

A task (:func:`exact_task`, on a worker that sees this checkout's files) takes the first free slot of this
checkout (a lock file held while it and its asv run: the system lets it go when both are gone), and in that
slot's own asv environment (a hard-linked copy of the checkout's, made once per slot:
:func:`~.own.copy_environments`), own home, own asv configuration and a results folder of the task's own (a new
one each time it runs), runs asv on its commit; nothing two tasks do collides. Only this process, the client,
writes into ``results/asv`` (:func:`~.second.merge_results`, whole files, idempotent) and, for each commit
merged, which worker measured it (:func:`~detsim.track.base.where.write_where`): a task lost with its worker runs
again and leaves a folder nobody merges, so nothing is recorded twice or half.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterator, Sequence

from detsim.track.base.files import RecordingError, read_json, validate_machine_name, write_aside
from detsim.track.base.where import Taken, new_run, write_where
from detsim.track.recorder.cluster import NotShared, worker_address
from detsim.track.recorder.own import EXACT_1, EXACT_2, SETTINGS, VENV_BIN, copy_environments
from detsim.track.recorder.second import CONFIG, merge_results
from detsim.track.target.cluster import INSTALL_HINT, Cluster, ClusterError, Outcome, Tasks, client

EXACT = f"{EXACT_1}|{EXACT_2}"  # a task's benchmarks: every exact one of its commit
CLUSTER = Path(".asv") / "cluster"  # in the checkout: the slots' locks and homes, the tasks' folders
TASK = "exact"  # the tasks' name on the cluster (with the commit)
LOG = "asv.log"  # in a task's folder: what its asv said
FAILED = "failed"  # in CLUSTER: the log of each commit whose task failed last, kept after the recording


@dataclass(frozen=True)
class ExactTask:
    """Commit ``commit`` of the checkout ``root`` to record on ``machine`` from the environments made in
    ``env_dir`` (absolute), with the recording's ``settings`` for asv (:data:`~.own.SETTINGS`)."""

    root: str
    machine: str
    commit: str
    env_dir: str
    settings: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Done:
    """A task's end: the asv results folder it wrote (``<machine>/<commit>-<env>.json``) and the worker."""

    results: str
    worker: str


def env_dir(root: Path) -> Path:
    """The checkout's asv environments folder, absolute (asv.conf.json's ``env_dir``)."""
    config = read_json(root / CONFIG, comments=True)
    if not isinstance(config, dict):
        raise RecordingError(f"{root / CONFIG}: not a JSON object")
    return root / config.get("env_dir", ".asv/env")


@contextlib.contextmanager
def slot(folder: Path) -> Iterator[tuple[int, int]]:
    """(the first slot, 1, 2, ..., whose lock in ``folder`` no running task holds; the lock's descriptor),
    held for the block, and by the processes the descriptor is passed to (an asv that outlives a killed
    worker keeps its slot until it ends: no other task uses its environment meanwhile)."""
    folder.mkdir(parents=True, exist_ok=True)
    number = 1
    while True:
        lock = open(folder / f"slot-{number}.lock", "a")
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            number += 1
            continue
        try:
            yield number, lock.fileno()
        finally:
            lock.close()
        return


def task_config(root: Path, label: str, env: Path, folder: Path) -> Path:
    """asv.conf.json for the task in ``folder`` running in slot ``label``: its environments ``env``, its results
    and page in ``folder``. It is written in the checkout (``.asv-<label>.conf.json``, the slot's: one task at a
    time): the suite finds the checkout as the folder of asv's configuration (benchmarks/common.py)."""
    config = read_json(root / CONFIG, comments=True)
    config.update(env_dir=str(env), results_dir=str(folder / "results"), html_dir=str(folder / "html"))
    path = root / f".asv-{label}.conf.json"
    write_aside(path, json.dumps(config, indent=1).encode())
    return path


def exact_task(task: ExactTask) -> Done:
    """On a worker: every exact benchmark of ``task.commit`` recorded by asv into a results folder of this run's
    own (module docstring). Raises :class:`NotShared`, or RuntimeError when asv recorded nothing (one line)."""
    root, first = Path(task.root), Path(task.env_dir)
    worker = worker_address()
    for needed in (root / CONFIG, root / VENV_BIN / "asv", first):
        if not needed.exists():
            raise NotShared(f"this worker ({socket.gethostname()}) does not see {needed}: a cluster's workers must "
                            "share this checkout's file system (docs/cluster.md)")
    with slot(root / CLUSTER) as (number, lock):
        label = f"slot{number}"
        copy_environments(first, f"-{label}")
        home = root / CLUSTER / f"home-{label}"
        home.mkdir(parents=True, exist_ok=True)
        folder = root / CLUSTER / "tasks" / f"{task.commit[:12]}-{uuid.uuid4().hex[:8]}"
        folder.mkdir(parents=True)
        config = task_config(root, label, first.with_name(first.name + f"-{label}"), folder)
        (folder / "commits.txt").write_text(f"{task.commit}\n")
        env = {**os.environ, **dict(task.settings), "HOME": str(home), "PYTHONUNBUFFERED": "1"}
        asv = str(root / VENV_BIN / "asv")
        with open(folder / LOG, "w") as log:
            made = subprocess.run([asv, "machine", "--yes", "--machine", task.machine], cwd=root, env=env,
                                  stdout=log, stderr=subprocess.STDOUT).returncode
            code = made or subprocess.run(
                [asv, "--config", str(config), "run", "--machine", task.machine, "--record-samples", "--bench",
                 EXACT, f"HASHFILE:{folder / 'commits.txt'}"], cwd=root, env=env, stdout=log,
                stderr=subprocess.STDOUT, pass_fds=(lock,)).returncode
    results = folder / "results"
    if code not in (0, 2) or not list(results.glob(f"*/{task.commit[:8]}-*.json")):  # 2: a benchmark failed
        kept = root / CLUSTER / FAILED / f"{task.commit[:12]}.log"  # the tasks' folders go with the recording
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(folder / LOG, kept)
        said = kept.read_text(errors="replace").strip().splitlines()[-1:] or ["nothing"]
        raise RuntimeError(f"asv recorded nothing of {task.commit[:8]} on {worker} (exit {code}; it said: "
                           f"{said[0].strip()[:200]}; its log: {kept})")
    return Done(str(results), worker)


def gathered(root: Path, machine: str, commits: Sequence[str], outcomes: dict[str, Outcome], run: str,
             say: Callable[[str], None]) -> list[str]:
    """Each finished task's results merged into ``results/asv`` and its worker into the sidecar, in ``commits``'
    order; the lines saying why each other commit has none."""
    measured, failed = [], []
    for commit in commits:
        outcome = outcomes.get(commit, Outcome(failed="never ran"))
        if outcome.failed is not None:
            failed.append(f"{commit[:8]}: its task failed on the cluster: {outcome.failed}")
            continue
        done: Done = outcome.value
        merge_results(Path(done.results), root / "results" / "asv")
        measured.append(Taken(commit, run, done.worker))
    write_where(root / "results" / "asv" / machine, [m.commit for m in measured], measured)
    say(f"{len(measured)} of {len(commits)} commit(s) merged into results/asv")
    return failed


def record_exact(root: Path, machine: str, commits: Sequence[str], cluster: Cluster,
                 say: Callable[[str], None]) -> list[str]:
    """``commits``' exact families recorded on ``cluster`` (module docstring); the lines saying why a commit
    has none (empty: all recorded)."""
    first = env_dir(root)
    settings = tuple((name, os.environ[name]) for name in SETTINGS if name in os.environ)
    run = new_run()
    shutil.rmtree(root / CLUSTER / "tasks", ignore_errors=True)  # what a recording killed outright left
    try:
        with client(cluster) as running:
            tasks = Tasks(running, TASK)
            for commit in commits:
                tasks.submit(commit, exact_task, ExactTask(str(root), machine, commit, str(first), settings))
            say(f"{len(commits)} commit(s) to measure on {cluster.describe()}")
            outcomes = tasks.results()
        return gathered(root, machine, commits, outcomes, run, say)
    finally:
        shutil.rmtree(root / CLUSTER / "tasks", ignore_errors=True)


def check(cluster: Cluster) -> int:
    """0 where ``cluster`` can be had: distributed imports, and an existing scheduler answers (a LocalCluster is
    made only for the tasks)."""
    if cluster.scheduler is None:
        try:
            import distributed  # noqa: F401
        except ImportError:
            raise ClusterError(INSTALL_HINT) from None
        return 0
    with client(cluster):
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m detsim.track.recorder.own_cluster",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--machine", required=True)
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument("--workers", type=int)
    where.add_argument("--scheduler")
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--check", action="store_true", help="only say whether the cluster can be had")
    what.add_argument("--commits", type=Path, help="a file of the commits to record, one a line")
    args = parser.parse_args(argv)

    def say(line: str) -> None:
        print(f"tracking run: {line}", file=sys.stderr, flush=True)

    try:
        cluster = Cluster(args.workers, args.scheduler)
        machine = validate_machine_name(args.machine)
        if args.check:
            return check(cluster)
        commits = args.commits.read_text().split()
        failed = record_exact(Path(args.root).resolve(), machine, commits, cluster, say)
    except (ValueError, ClusterError, RecordingError, OSError) as exc:
        say(str(getattr(exc, "strerror", None) or exc))
        return 2
    for line in failed:
        say(line)
    return 2 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

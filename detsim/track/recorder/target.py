"""A target's commits recorded with asv, as detsim's own are (:mod:`.own`): each commit installed into the project's
one build venv (one interpreter path, so asv keeps one series) and measured by ``asv run --environment
existing:<its python> --set-commit-hash <commit>`` with the suite for targets, or by :mod:`~detsim.track.target.build`'s
reuse rule taking a twin's results (its asv file is the twin's under its own hash and date).

Input: a :class:`~detsim.track.target.spec.TargetSpec`, its commits (oldest first), detsim's checkout, a machine
name. Output: the target's project folder (:class:`~detsim.track.target.project.Project`) with asv's results and a
row per commit, and the window's account (:class:`~.window.Window`). Slices recorded on several machines merge into
one history (:func:`merge_slices`); with a Dask cluster: :mod:`.cluster`.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Callable, Sequence

from detsim.track.base.fresh import ChildError, run
from detsim.track.base.git import query
from detsim.track.base.output import atomic_write_text, write_json
from detsim.track.base.status import Status
from detsim.track.base.files import RecordingError
from detsim.track.recorder.window import Window, how, merge_rows, turns
from detsim.track.target.build import SUITE_VAR, BuildError, Builder, Installation, Measured, Reuse
from detsim.track.target.count import not_counted_reason
from detsim.track.target.project import ASV_TIMEOUT_S, COMMIT_VAR, MEASURED_VAR, Project, in_series
from detsim.track.target.spec import FILE, TargetSpec

MEASURED = "measured"  # in the project folder: a commit's outcomes measured by a Dask task, while asv times it
PATHS_NOT_MEASURED = ("the compiled and Triton paths (detsim's engine's own: a target's command is a process to the "
                      "suite)")


def not_measured(spec: TargetSpec) -> str:
    """What a recording of ``spec``'s target leaves out, and why, in one line (said once per run)."""
    if not spec.count_instructions:
        where = spec.source or FILE
        counts = f"instruction counts (off in {where}; count_instructions = true turns them on: docs/target-counts.md)"
    else:
        reason = not_counted_reason()
        counts = f"instruction counts ({reason})" if reason else None
    return "; ".join(filter(None, [counts, PATHS_NOT_MEASURED]))



class TargetRecorder:
    """Records commits of ``spec.root`` on ``machine`` into ``project`` (see the module docstring)."""

    def __init__(self, spec: TargetSpec, project: Project, root: Path, machine: str):
        self.spec, self.project, self.root, self.machine = spec, project, Path(root), machine
        self.builder = Builder(spec, project.folder)
        self.reuse: Reuse[dict] = Reuse()  # the cases' outcomes by the reuse rule
        self.renders = 0
        self.home = project.folder / ".asv-home"  # asv's machine file lives in $HOME: this one, not the user's
        for row in project.rows(machine):  # a twin's keys lead to the commit it took its results from
            if not row["build_error"]:
                self.reuse.put(row["reused_from"] or row["commit"], row["cases"], *row["keys"])

    def asv(self, *args: str, timeout: float = 600, commit: str = "", measured: Path | None = None):
        env = {**os.environ, "HOME": str(self.home), SUITE_VAR: str(self.project.folder), COMMIT_VAR: commit}
        env.pop(MEASURED_VAR, None)
        if measured is not None:
            env[MEASURED_VAR] = str(measured)
        env.pop("PYTHONPATH", None)
        try:
            return run([sys.executable, "-m", "asv", "--config", str(self.project.config), *args], env=env,
                       cwd=self.project.folder, timeout=timeout, what="asv")
        except ChildError as exc:
            raise RecordingError(str(exc)) from None

    def start(self) -> None:
        self.project.write(self.spec, self.root, self.machine)
        self.home.mkdir(exist_ok=True)
        done = self.asv("machine", "--yes", "--machine", self.machine)
        if done.returncode != 0:
            raise RecordingError(f"asv machine: {done.last_line()}")

    def recorded(self, commit: str) -> dict | None:
        """The row of ``commit`` when it was recorded on this machine before (asv results and all)."""
        path = self.project.outcomes(self.machine) / f"{commit}.json"
        if not path.is_file() or not list(self.project.results(self.machine).glob(f"{commit[:8]}-*.json")):
            return None
        return json.loads(path.read_text())

    def record(self, commit: str) -> dict:
        """Measure ``commit`` (or take a twin's results) and store its row."""
        return self.store(commit, self.reuse.measure(self.builder, commit, self.measure, folder=self.project.build))

    def store(self, commit: str, got: Measured) -> dict:
        """``commit``'s row (and a twin's asv results under its hash) for what :class:`Reuse` made of it."""
        if got.build_error is not None:
            return self._store(commit, {"build_error": got.build_error, "keys": [], "cases": {}})
        if got.reused_from is None:
            return self._store(commit, {"build_error": None, "keys": list(got.keys), "cases": got.results,
                                        "build_s": got.build_s})
        return self._reused(commit, got)

    def _reused(self, commit: str, got: Measured) -> dict:
        """``commit``'s row and asv results: its twin's (``got.reused_from``), under its own hash and date."""
        twin = got.reused_from
        date = query(self.spec.root, "log", "-1", "--format=%at", commit)  # as asv dates a commit: author time
        for path in self.project.results(self.machine).glob(f"{twin[:8]}-*.json"):
            data = json.loads(path.read_text())
            if data.get("commit_hash") != twin:
                continue
            data["commit_hash"] = commit
            if date:
                data["date"] = int(date) * 1000
            # asv's own encoding (a single sample's interval is written -Infinity, Infinity)
            atomic_write_text(path.with_name(f"{commit[:8]}-{path.name.split('-', 1)[1]}"), json.dumps(data))
        return self._store(commit, {"build_error": None, "keys": list(got.keys), "cases": got.results,
                                    "reused_from": twin, "reused_by": got.reused_by, "build_s": got.build_s})

    def measure(self, installed: Installation, cases: dict | None = None) -> dict:
        """The cases' outcomes at the installed commit, measured by asv (its suite writes them to the outcomes
        file). With ``cases`` (measured elsewhere: a Dask task) the suite reads them rather than rendering
        (:data:`MEASURED_VAR`) and times one render of each case, and asv's results are put into the project's
        one series (their interpreter is the commit's own build folder's)."""
        commit = installed.commit
        measured = None if cases is None else self.project.folder / MEASURED / f"{commit}.json"
        if measured is not None:
            write_json(measured, {"commit": commit, "cases": cases})
        outcome_file = self.project.outcomes(self.machine) / f"{commit}.json"
        outcome_file.unlink(missing_ok=True)
        try:
            done = self.asv("run", "--environment", f"existing:{installed.bin_dir / 'python'}", "--set-commit-hash",
                            commit, "--machine", self.machine, "--record-samples", "--show-stderr",
                            timeout=ASV_TIMEOUT_S, commit=commit, measured=measured)
        finally:
            if measured is not None:
                measured.unlink(missing_ok=True)
        ended = f"(exit {done.returncode}: {done.last_line()})"
        if not outcome_file.is_file():  # its setup_cache never finished: asv recorded failures, nothing to reuse
            raise BuildError(f"asv {'measured' if cases is None else 'recorded'} nothing {ended}")
        if cases is None:
            cases = json.loads(outcome_file.read_text())["cases"]
        elif not self._into_series(commit):  # a row without asv's results is no record: recorded again next run
            raise BuildError(f"asv wrote no results {ended}")
        self.renders += renders_of(cases)
        return cases

    def _into_series(self, commit: str) -> bool:
        """asv's results of ``commit`` moved into the project's one series; whether there are any."""
        folder, found = self.project.results(self.machine), False
        for path in sorted(folder.glob(f"{commit[:8]}-*.json")):
            data = json.loads(path.read_text())
            name = in_series(self.project, data)
            if data.get("commit_hash") == commit and name != path.name:
                atomic_write_text(folder / name, json.dumps(data))  # whole, then the original goes
                path.unlink()
            found = found or data.get("commit_hash") == commit
        return found

    def _store(self, commit: str, fields: dict) -> dict:
        row = {"commit": commit, "machine": self.machine,
               "date": query(self.spec.root, "log", "-1", "--format=%cI", commit) or "",
               "subject": query(self.spec.root, "log", "-1", "--format=%s", commit) or "",
               "reused_from": None, "reused_by": None, **fields}
        write_json(self.project.outcomes(self.machine) / f"{commit}.json", row)
        return row

    def close(self) -> None:
        """Remove the build venv (the results stay)."""
        shutil.rmtree(self.project.build, ignore_errors=True)


def record_window(spec: TargetSpec, commits: Sequence[str], root: Path, machine: str,
                  say: Callable[[str], None] = lambda line: None, cluster=None) -> Window:
    """Record ``commits`` (oldest first) on ``machine`` into the target's project folder; the window's rows,
    its turns (against the rows recorded before it on this machine) and the counts. With ``cluster`` (a
    :class:`~.cluster.Cluster`) what no load changes is measured by its workers, the timings here
    (:mod:`.cluster`)."""
    project = Project.of(spec, root)
    recorder = TargetRecorder(spec, project, root, machine)
    recorder.start()
    window = Window(spec.name)
    try:
        if cluster is None:
            _record_here(recorder, commits, window, say)
        else:
            from detsim.track.recorder.cluster import record_on_cluster  # dask only when asked for

            record_on_cluster(recorder, commits, cluster, window, say)
    finally:
        recorder.close()
    history, _ = merge_rows(spec.root, [{"target": spec.name, "rows": project.rows(machine)}])
    window.turns = [t for t in turns(history) if t.commit in set(commits)]
    window.builds, window.renders, window.reused = recorder.reuse.builds, recorder.renders, recorder.reuse.reused
    return window


def _record_here(recorder: TargetRecorder, commits: Sequence[str], window: Window,
                 say: Callable[[str], None]) -> None:
    """Each commit measured here by asv, one after another, into ``window``."""
    for i, commit in enumerate(commits, 1):
        row = recorder.recorded(commit)
        if row is not None:
            window.already += 1
            say(f"[{i}/{len(commits)}] {commit[:8]}: recorded before")
        else:
            row = recorder.record(commit)
            done = how(row) or f"built in {row['build_s']:.1f} s, measured by asv"
            say(f"[{i}/{len(commits)}] {commit[:8]}: {done}")
        window.rows.append(row)


def merge_slices(project: Project, slices: Sequence[Path]) -> list[str]:
    """Copy into ``project`` what other machines recorded in their copies of it (``slices``: project folders):
    asv's results (under this project's environment name: each slice's names its own build venv's path) and
    the rows, per machine, where the project has none for that commit; a note for each
    commit two of them measured whose image hashes disagree (the project's, or the first slice's, is kept)."""
    notes = []
    for other in map(Path, slices):
        if not (other / "results").is_dir():
            raise RecordingError(f"{other}: not a target's recording (no results folder)")
        for machine_dir in sorted(p for p in (other / "results").iterdir() if p.is_dir()):
            machine = machine_dir.name
            mine = project.results(machine)
            mine.mkdir(parents=True, exist_ok=True)
            for path in sorted(machine_dir.glob("*.json")):
                if path.name == "machine.json":
                    if not (mine / path.name).exists():
                        shutil.copy2(path, mine / path.name)
                    continue
                data = json.loads(path.read_text())
                copy = mine / in_series(project, data)
                if not copy.exists():
                    atomic_write_text(copy, json.dumps(data))
            for path in sorted((other / "outcomes" / machine).glob("*.json")):
                have = project.outcomes(machine) / path.name
                if not have.exists():
                    project.outcomes(machine).mkdir(parents=True, exist_ok=True)
                    shutil.copy2(path, have)
                    continue
                kept, theirs = json.loads(have.read_text()), json.loads(path.read_text())
                for case, outcome in theirs["cases"].items():
                    ours = kept["cases"].get(case)
                    if ours and ours.get("sha256") != outcome.get("sha256"):
                        notes.append(f"{path.stem[:10]} {case}: image {str(ours.get('sha256'))[:12]} here, "
                                     f"{str(outcome.get('sha256'))[:12]} in {other} ({machine})")
    return notes


def renders_of(cases: dict) -> int:
    """The processes a commit's recording ran for ``cases`` (records): each image's renders and its one timed
    render; one for a case that failed (a failed run ends its render)."""
    return sum(len(o["hashes"]) + 1 if Status(o["status"]) is Status.OK else 1 for o in cases.values())

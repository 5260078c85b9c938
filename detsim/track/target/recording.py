"""Recording a window of a target's history with asv, as detsim's own tracking run records detsim.

Input: a :class:`~.spec.TargetSpec`, its commits (oldest first), detsim's checkout, a machine name. The
target's project folder (``results/targets/<target>/`` of detsim's checkout: :class:`Project`) holds an
asv.conf.json made here (the target repository as asv's ``repo``, the suite :mod:`.asvsuite.bench_target`,
``environment_type: existing``), asv's results of each machine (``results/<machine>/``, asv's own format,
written by asv), and per machine and commit the row :mod:`.window` reads (``outcomes/<machine>/<commit>.json``:
each case's outcome, with where its image departs, and how the commit was measured).

Each commit is installed into the project's one build venv (:class:`~.build.Builder`; one interpreter path,
so asv keeps one series) and measured by ``asv run --environment existing:<its python> --set-commit-hash
<commit>``. A commit whose exported sources or installed files equal a measured commit's (:mod:`.reuse`)
takes that commit's results: its asv file is the twin's under its own hash and date. ``detsim-track
regressions --repo <project>`` then judges the results and ``detsim-track publish --repo <project>`` draws them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from detsim.track.base.fresh import ChildError, run
from detsim.track.base.git import query
from detsim.track.runtime.output import atomic_write_text, write_json
from detsim.track.target.build import Builder, BuildError
from detsim.track.target.reuse import Reuse, source_key
from detsim.track.target.spec import TargetSpec
from detsim.track.target.merge import merge_rows
from detsim.track.target.window import Window, turns
from detsim.track.verdict.thresholds import TARGET_MEMORY, TARGET_TIMING

SUITE_DIR = Path(__file__).resolve().parent / "asvsuite"
SUITE = "suite.json"  # the suite's facts, in the project folder
SUITE_VAR = "DETSIM_TARGET_SUITE_DIR"  # names that folder to the suite (asv passes its environment on)
COMMIT_VAR = "DETSIM_TARGET_COMMIT"  # the commit measured (asv sets no ASV_COMMIT in an existing environment)
TARGETS = Path("results") / "targets"  # under detsim's checkout: one project folder per target
ASV_TIMEOUT_S = 4 * 3600  # one commit's asv run: every case rendered three times, each within the spec's timeout
NOT_MEASURED = ("instruction counts and the compiled and Triton paths are not measured: they are detsim's engine's "
                "own, and a target's command is a process to the suite")


class RecordingError(RuntimeError):
    """The recording cannot go on (asv does not start, a results folder cannot be written): one line."""


@dataclass(frozen=True)
class Project:
    """A target's asv project folder."""

    folder: Path

    @classmethod
    def of(cls, spec: TargetSpec, root: Path) -> "Project":
        return cls(Path(root).resolve() / TARGETS / spec.name)

    @property
    def config(self) -> Path:
        return self.folder / "asv.conf.json"

    def results(self, machine: str) -> Path:
        return self.folder / "results" / machine

    def outcomes(self, machine: str) -> Path:
        return self.folder / "outcomes" / machine

    def rows(self, machine: str) -> list[dict]:
        """The rows recorded on ``machine`` (any order)."""
        return [json.loads(p.read_text()) for p in sorted(self.outcomes(machine).glob("*.json"))]

    def rows_of(self, commit: str) -> list[dict]:
        """The rows of ``commit`` (a full hash or a prefix) on every machine (ValueError: an unreadable row)."""
        rows = []
        for path in sorted(self.folder.glob(f"outcomes/*/{commit}*.json")):
            try:
                rows.append(json.loads(path.read_text()))
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path}: not a readable row of a target's recording ({exc})") from None
        return rows

    def write(self, spec: TargetSpec, root: Path) -> None:
        """asv.conf.json and suite.json, rewritten every run (they hold paths: the target's, detsim's)."""
        self.folder.mkdir(parents=True, exist_ok=True)
        branch = query(spec.root, "rev-parse", "--abbrev-ref", "HEAD") or "HEAD"
        conf = {
            "version": 1, "project": spec.name, "repo": str(Path(spec.root).resolve()), "dvcs": "git",
            "branches": [branch.strip()], "environment_type": "existing",
            "benchmark_dir": str(SUITE_DIR), "results_dir": "results", "html_dir": "html",
            "launch_method": "forkserver", "default_benchmark_timeout": 3600,
            # 1 - r, the image fingerprint and reproducibility are exact (detsim's own rules); max relative
            # error and sum ratio are drawn, not judged (1 - r judges parity)
            "regressions_thresholds": {r"bench_target\.Case\.track_peak_memory": TARGET_MEMORY.value,
                                       r"bench_target\.Timing\.": TARGET_TIMING.value},
            "regressions_first_commits": {r"bench_target\.Case\.track_(max_relative_error|sum_ratio)": None},
        }
        write_json(self.config, conf)
        write_json(self.folder / SUITE, {
            "target": str(Path(spec.root).resolve()), "spec": str(spec.source) if spec.source else None,
            "root": str(Path(root).resolve()), "outcomes": None})


class Recorder:
    """Records commits of ``spec.root`` on ``machine`` into ``project`` (see the module docstring)."""

    def __init__(self, spec: TargetSpec, project: Project, root: Path, machine: str,
                 say: Callable[[str], None] = lambda line: None):
        self.spec, self.project, self.root, self.machine, self.say = spec, project, Path(root), machine, say
        self.builder = Builder(spec, project.folder)
        self.reuse: Reuse[dict] = Reuse()
        self.builds = self.measured = self.renders = 0
        self.home = project.folder / ".asv-home"  # asv's machine file lives in $HOME: this one, not the user's
        for row in project.rows(machine):
            if not row["build_error"]:
                self.reuse.put(row["commit"], row, *row["keys"])

    def asv(self, *args: str, timeout: float = 600, commit: str = ""):
        env = {**os.environ, "HOME": str(self.home), SUITE_VAR: str(self.project.folder), COMMIT_VAR: commit}
        env.pop("PYTHONPATH", None)
        try:
            return run([sys.executable, "-m", "asv", "--config", str(self.project.config), *args], env=env,
                       cwd=self.project.folder, timeout=timeout, what="asv")
        except ChildError as exc:
            raise RecordingError(str(exc)) from None

    def start(self) -> None:
        self.project.write(self.spec, self.root)
        suite = json.loads((self.project.folder / SUITE).read_text())
        write_json(self.project.folder / SUITE, {**suite, "outcomes": str(self.project.outcomes(self.machine))})
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
        source = source_key(self.spec.root, commit, self.spec.export)
        hit = self.reuse.get(source)
        if hit is not None:
            return self._reused(commit, hit, "sources", (source,))
        self.builds += 1
        try:
            installed = self.builder.install(commit, folder=self.project.folder / "build")
        except BuildError as exc:
            return self._store(commit, {"build_error": str(exc), "keys": [], "cases": {}})
        keys = tuple(k for k in (source, installed.fingerprint) if k is not None)
        hit = self.reuse.get(installed.fingerprint)
        if hit is not None:
            self.reuse.put(hit[0], hit[1], source)
            return self._reused(commit, hit, "installed files", keys, installed.seconds)
        outcome_file = self.project.outcomes(self.machine) / f"{commit}.json"
        outcome_file.unlink(missing_ok=True)
        done = self.asv("run", "--environment", f"existing:{installed.bin_dir / 'python'}", "--set-commit-hash",
                        commit, "--machine", self.machine, "--record-samples", "--show-stderr",
                        timeout=ASV_TIMEOUT_S, commit=commit)
        self.measured += 1
        if not outcome_file.is_file():  # its setup_cache never finished: asv recorded failures, nothing to reuse
            return self._store(commit, {"build_error": f"asv measured nothing (exit {done.returncode}: "
                                                      f"{done.last_line()})", "keys": [], "cases": {}})
        cases = json.loads(outcome_file.read_text())["cases"]
        # setup_cache's runs (a failed run ends a render) and time_render's one run of each image
        self.renders += sum(len(o["hashes"]) + 1 if o["status"] == "image" else 1 for o in cases.values())
        row = self._store(commit, {"build_error": None, "keys": list(keys), "cases": cases,
                                   "build_s": installed.seconds})
        self.reuse.put(commit, row, *keys)
        return row

    def _reused(self, commit: str, hit: tuple[str, dict], by: str, keys: Sequence[str],
                build_s: float | None = None) -> dict:
        twin, row = hit
        date = query(self.spec.root, "log", "-1", "--format=%ct", commit)
        for path in self.project.results(self.machine).glob(f"{twin[:8]}-*.json"):
            data = json.loads(path.read_text())
            if data.get("commit_hash") != twin:
                continue
            data["commit_hash"] = commit
            if date:
                data["date"] = int(date) * 1000
            # asv's own encoding (a single sample's interval is written -Infinity, Infinity)
            atomic_write_text(path.with_name(f"{commit[:8]}-{path.name.split('-', 1)[1]}"), json.dumps(data))
        return self._store(commit, {"build_error": None, "keys": list(keys), "cases": row["cases"],
                                    "reused_from": twin, "reused_by": by, "build_s": build_s})

    def _store(self, commit: str, fields: dict) -> dict:
        row = {"commit": commit, "machine": self.machine,
               "date": query(self.spec.root, "log", "-1", "--format=%cI", commit) or "",
               "subject": query(self.spec.root, "log", "-1", "--format=%s", commit) or "",
               "reused_from": None, "reused_by": None, **fields}
        write_json(self.project.outcomes(self.machine) / f"{commit}.json", row)
        return row

    def close(self) -> None:
        """Remove the build venv (the results stay)."""
        shutil.rmtree(self.project.folder / "build", ignore_errors=True)


def record_window(spec: TargetSpec, commits: Sequence[str], root: Path, machine: str,
                  say: Callable[[str], None] = lambda line: None) -> Window:
    """Record ``commits`` (oldest first) on ``machine`` into the target's project folder; the window's rows,
    its turns (against the rows recorded before it on this machine) and the counts."""
    project = Project.of(spec, root)
    recorder = Recorder(spec, project, root, machine, say)
    recorder.start()
    window = Window(spec.name)
    try:
        for i, commit in enumerate(commits, 1):
            row = recorder.recorded(commit)
            if row is not None:
                window.already += 1
                say(f"[{i}/{len(commits)}] {commit[:8]}: recorded before")
            else:
                row = recorder.record(commit)
                how = (f"does not build: {row['build_error']}" if row["build_error"]
                       else f"reused from {row['reused_from'][:8]} ({row['reused_by']})" if row["reused_from"]
                       else f"built in {row['build_s']:.1f} s, measured by asv")
                say(f"[{i}/{len(commits)}] {commit[:8]}: {how}")
            window.rows.append(row)
    finally:
        recorder.close()
    history, _ = merge_rows(spec.root, [{"target": spec.name, "rows": project.rows(machine)}])
    window.turns = [t for t in turns(history) if t.commit in set(commits)]
    window.builds, window.renders, window.reused = recorder.builds, recorder.renders, recorder.reuse.reused
    return window


def merge_slices(project: Project, slices: Sequence[Path]) -> list[str]:
    """Copy into ``project`` what other machines recorded in their copies of it (``slices``: project folders):
    asv's results and the rows, per machine, where the project has none for that commit; a note for each
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
                if not (mine / path.name).exists():
                    shutil.copy2(path, mine / path.name)
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

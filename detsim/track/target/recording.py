"""Recording a window of a target's history with asv, as detsim's own tracking run records detsim.

Input: a :class:`~.spec.TargetSpec`, its commits (oldest first), detsim's checkout, a machine name. Output: the
target's project folder (:class:`Project`, ``results/targets/<target>/`` of detsim's checkout): an asv.conf.json
made here (the target repository as asv's ``repo``, the suite :mod:`.asvsuite.bench_target`,
``environment_type: existing``), asv's results per machine, and per machine and commit a row (each case's
outcome, with where its image departs, and how the commit was measured); ``detsim-track regressions --repo
<project>`` then judges the results and ``detsim-track publish --repo <project>`` draws them.

Each commit is installed into the project's one build venv (one interpreter path, so asv keeps one series) and
measured by ``asv run --environment existing:<its python> --set-commit-hash <commit>``, or by :mod:`.build`'s
reuse rule takes a twin's results (its asv file is the twin's under its own hash and date). The rows also give
the window's own account (:class:`Window`: its table, and the :class:`Turn` s where a case turns bad, by
:mod:`.criteria`); slices recorded on several machines merge into one history (:func:`merge_slices`,
:func:`merge_rows`).
"""

from __future__ import annotations

import itertools
import json
import os
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence


from detsim.track.base.fresh import ChildError, run
from detsim.track.base.git import GitError, git, query
from detsim.track.base.output import atomic_write_text, write_json
from detsim.track.base.status import Status
from detsim.track.base.recording import RecordingError
from detsim.track.target.build import SUITE_VAR, VENV, BuildError, Builder, Installation, Measured, Reuse
from detsim.track.target.criteria import Criterion, Kind, Mark
from detsim.track.target.render import CaseOutcome
from detsim.track.target.count import not_counted_reason
from detsim.track.target.spec import FILE, TargetSpec
from detsim.track.judge.results_files import TARGET_FOLDER, TARGET_SPEC
from detsim.track.judge.thresholds import TARGET_COST, TARGET_MEMORY, TARGET_PARITY, TARGET_TIMING

SUITE_DIR = Path(__file__).resolve().parent / "asvsuite"
SUITE = "suite.json"  # the suite's facts, in the project folder
MEASURED = "measured"  # in the project folder: a commit's outcomes measured by a Dask task, while asv times it
COMMIT_VAR = "DETSIM_TARGET_COMMIT"  # the commit measured (asv sets no ASV_COMMIT in an existing environment)
# set where a commit's cases were measured elsewhere (a Dask task: :mod:`.cluster_recording`): the file of their
# records ({"commit", "cases"}), which the suite's setup_cache reads rather than rendering; asv times the renders
MEASURED_VAR = "DETSIM_TARGET_MEASURED"
CHECKED_ROWS = 20  # rows whose commits must be the target's before a recording goes on (Project.check)
TARGETS = Path("results") / "targets"  # under detsim's checkout: one project folder per target
ASV_TIMEOUT_S = 4 * 3600  # one commit's asv run: every case rendered three times (and counted once where the spec
# asks: about 50 renders' time), each within the spec's timeout
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

    @property
    def build(self) -> Path:
        """The one folder each commit is installed into (its interpreter path names asv's series)."""
        return self.folder / "build"

    def results(self, machine: str) -> Path:
        return self.folder / "results" / machine

    def outcomes(self, machine: str) -> Path:
        return self.folder / "outcomes" / machine

    @property
    def python(self) -> Path:
        """The interpreter that names the project's one asv series (its build venv's)."""
        return self.build / VENV / "bin" / "python"

    @property
    def count_work(self) -> Path:
        """Where a counted render runs: one path for every commit, as a count depends on its folder's name."""
        return self.folder / "count"

    def rows(self, machine: str) -> list[dict]:
        """The rows recorded on ``machine`` (any order)."""
        return [json.loads(p.read_text()) for p in sorted(self.outcomes(machine).glob("*.json"))]

    def twins(self, machine: str) -> dict[str, str | None] | None:
        """Commit -> the commit whose results it took (None: measured, or it did not build), for every row
        recorded on ``machine``; None where none is (ValueError: an unreadable row). The one record of reuse:
        what a verdict counts, whichever run or slice recorded the commit."""
        found = {}
        for path in sorted(self.outcomes(machine).glob("*.json")):
            try:
                row = json.loads(path.read_text())
                found[row["commit"]] = row.get("reused_from")
            except (OSError, ValueError, KeyError, TypeError) as exc:
                raise ValueError(f"{path}: not a readable row of a target's recording ({exc})") from None
        return found or None

    def rows_of(self, commit: str) -> list[dict]:
        """The rows of ``commit`` (a full hash or a prefix) on every machine (ValueError: an unreadable row)."""
        rows = []
        for path in sorted(self.folder.glob(f"outcomes/*/{commit}*.json")):
            try:
                rows.append(json.loads(path.read_text()))
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path}: not a readable row of a target's recording ({exc})") from None
        return rows

    def check(self, spec: TargetSpec) -> str:
        """The repository asv is to clone for ``spec``: its top folder (a target may be a folder inside its
        repository); a :class:`RecordingError` where this folder records commits that repository does not have
        (two targets whose folders have one name), before anything is written. Another clone of the same
        history may go on with a recording."""
        repo = query(spec.root, "rev-parse", "--show-toplevel") or str(Path(spec.root).resolve())
        foreign = [path.stem for path in sorted(self.folder.glob("outcomes/*/*.json"))[:CHECKED_ROWS]
                   if query(spec.root, "cat-file", "-e", f"{path.stem}^{{commit}}") is None]
        if foreign:
            try:
                recorded = json.loads(self.config.read_text()).get("repo")
            except (OSError, ValueError, AttributeError):
                recorded = "another repository"
            raise RecordingError(f"{self.folder} records commits {repo} does not have (e.g. {foreign[0][:10]}, of "
                                 f"{recorded}): move that recording, or give this target a folder of another name")
        return repo

    def write(self, spec: TargetSpec, root: Path, machine: str) -> None:
        """asv.conf.json and suite.json, rewritten every run (they hold paths: the target's, detsim's, and where
        ``machine``'s rows go); :meth:`check` first."""
        repo = self.check(spec)
        self.folder.mkdir(parents=True, exist_ok=True)
        branch = query(spec.root, "rev-parse", "--abbrev-ref", "HEAD") or "HEAD"
        conf = {
            "version": 1, "project": spec.name, "repo": repo, "dvcs": "git",
            "branches": [branch.strip()], "environment_type": "existing",
            "benchmark_dir": str(SUITE_DIR), "results_dir": "results", "html_dir": "html",
            "launch_method": "forkserver", "default_benchmark_timeout": 3600,
            # 1 - r may grow by TARGET_PARITY's factor (as a rise: the factor less one), as bisect's parity
            # criterion; the image fingerprint and reproducibility are exact (detsim's own rules); max relative
            # error and sum ratio are drawn, not judged (1 - r judges parity)
            "regressions_thresholds": {r"bench_target\.Case\.track_parity_": TARGET_PARITY.value - 1,
                                       r"bench_target\.Case\.track_peak_memory": TARGET_MEMORY.value,
                                       r"bench_target\.Timing\.": TARGET_TIMING.value,
                                       r"bench_target\.Cost\.": TARGET_COST.value},
            "regressions_first_commits": {r"bench_target\.Case\.track_(max_relative_error|sum_ratio)": None},
            TARGET_FOLDER: str(Path(spec.root).resolve()),  # the verdict's bisect advice names these two
            TARGET_SPEC: _given_spec(spec),
        }
        write_json(self.config, conf)
        write_json(self.folder / SUITE, {
            "target": str(Path(spec.root).resolve()), "spec": str(spec.source) if spec.source else None,
            "root": str(Path(root).resolve()), "outcomes": str(self.outcomes(machine))})


def _given_spec(spec: TargetSpec) -> str | None:
    """The spec file, where it is not the repository's own ``detsim-target.toml`` (``--spec`` must name it)."""
    if spec.source is None or Path(spec.source).resolve() == (Path(spec.root) / FILE).resolve():
        return None
    return str(Path(spec.source).resolve())


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
        return self.store(commit, self.reuse.measure(self.builder, commit, self._measure, folder=self.project.build))

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

    def _measure(self, installed: Installation) -> dict:
        """The cases' outcomes at the installed commit, measured by asv (its suite writes them to the outcomes
        file)."""
        commit = installed.commit
        outcome_file = self.project.outcomes(self.machine) / f"{commit}.json"
        outcome_file.unlink(missing_ok=True)
        done = self.asv("run", "--environment", f"existing:{installed.bin_dir / 'python'}", "--set-commit-hash",
                        commit, "--machine", self.machine, "--record-samples", "--show-stderr",
                        timeout=ASV_TIMEOUT_S, commit=commit)
        if not outcome_file.is_file():  # its setup_cache never finished: asv recorded failures, nothing to reuse
            raise BuildError(f"asv measured nothing (exit {done.returncode}: {done.last_line()})")
        cases = json.loads(outcome_file.read_text())["cases"]
        self.renders += renders_of(cases)
        return cases

    def timed(self, installed: Installation, cases: dict) -> dict:
        """``cases`` (the outcomes of ``installed``'s commit, measured elsewhere: a Dask task) recorded by asv
        with the timings it measures here: the suite reads them rather than rendering (:data:`MEASURED_VAR`) and
        times one render of each case. asv's results are then put into the project's one series (its
        interpreter is the commit's own build folder's)."""
        commit = installed.commit
        measured = self.project.folder / MEASURED / f"{commit}.json"
        write_json(measured, {"commit": commit, "cases": cases})
        outcome_file = self.project.outcomes(self.machine) / f"{commit}.json"
        outcome_file.unlink(missing_ok=True)
        try:
            done = self.asv("run", "--environment", f"existing:{installed.bin_dir / 'python'}", "--set-commit-hash",
                            commit, "--machine", self.machine, "--record-samples", "--show-stderr",
                            timeout=ASV_TIMEOUT_S, commit=commit, measured=measured)
        finally:
            measured.unlink(missing_ok=True)
        if not outcome_file.is_file():
            raise BuildError(f"asv recorded nothing (exit {done.returncode}: {done.last_line()})")
        folder, found = self.project.results(self.machine), False
        for path in sorted(folder.glob(f"{commit[:8]}-*.json")):
            data = json.loads(path.read_text())
            name = in_series(self.project, data)
            if data.get("commit_hash") == commit and name != path.name:
                atomic_write_text(folder / name, json.dumps(data))  # whole, then the original goes
                path.unlink()
            found = found or data.get("commit_hash") == commit
        if not found:  # a row without asv's results is no record: the commit is recorded again by the next run
            raise BuildError(f"asv wrote no results (exit {done.returncode}: {done.last_line()})")
        self.renders += renders_of(cases)
        return cases

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
    (:mod:`.cluster_recording`)."""
    project = Project.of(spec, root)
    recorder = TargetRecorder(spec, project, root, machine)
    recorder.start()
    window = Window(spec.name)
    try:
        if cluster is None:
            _record_here(recorder, commits, window, say)
        else:
            from detsim.track.target.cluster_recording import record_on_cluster  # dask only when asked for

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
            how = _how(row) or f"built in {row['build_s']:.1f} s, measured by asv"
            say(f"[{i}/{len(commits)}] {commit[:8]}: {how}")
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


def in_series(project: Project, data: dict) -> str:
    """Put asv's results ``data`` of one commit (recorded with another interpreter: another machine's build
    venv, or a build folder of its own) into ``project``'s one series (its build venv's interpreter); the file
    name they go under in a results folder."""
    from asv.environment import get_env_name  # asv only where results are moved: imports stay light

    python = str(project.python)
    data.update(env_name=get_env_name("existing", python, {}, {}), python=python,
                params={**data.get("params", {}), "python": python})
    return f"{data['commit_hash'][:8]}-{data['env_name']}.json"


def renders_of(cases: dict) -> int:
    """The processes a commit's recording ran for ``cases`` (records): each image's renders and its one timed
    render; one for a case that failed (a failed run ends its render)."""
    return sum(len(o["hashes"]) + 1 if Status(o["status"]) is Status.OK else 1 for o in cases.values())


JUDGED = (Kind.BROKEN, Kind.PARITY, Kind.CHANGED)  # in this order: the first that turns names the change (last)


@dataclass(frozen=True)
class Turn:
    """A case that turns bad at ``commit`` against the commit recorded before it."""

    kind: Kind
    case: str
    commit: str
    previous: str | None  # None: a render that is not reproduced needs no previous commit
    why: str

    def record(self) -> dict:
        return {**asdict(self), "kind": self.kind.value}


@dataclass
class Window:
    target: str
    rows: list[dict] = field(default_factory=list)  # oldest first (:func:`_row`)
    turns: list[Turn] = field(default_factory=list)
    builds: int = 0
    renders: int = 0
    reused: int = 0
    already: int = 0  # commits taken from the earlier record
    where: str = "every measure: here, one commit at a time"  # where the timings and the other measures ran

    def record(self) -> dict:
        return {"report": "record", "target": self.target, "rows": self.rows,
                "turns": [t.record() for t in self.turns], "builds": self.builds, "renders": self.renders,
                "reused": self.reused, "already_recorded": self.already, "where": self.where,
                "unbuilt": [r["commit"] for r in self.rows if r["build_error"]]}

    def table(self) -> list[str]:
        """commit, date, cases rendered, cases at parity, min r, seconds: a line per measured commit or commit
        where a case turns; a run of other commits that took one commit's results is one line."""
        lines = [f"{'commit':<10} {'date':<10} {'rendered':>8} {'parity':>6} {'min r':>12} {'seconds':>8}  note"]
        turned = {t.commit for t in self.turns}
        for twin, rows in itertools.groupby(self.rows, key=lambda row: row["commit"] not in turned
                                            and row["reused_from"]):
            rows = list(rows)
            lines += [_reused_line(rows)] if twin else [self._line(row) for row in rows]
        return lines

    def _line(self, row: Mapping) -> str:
        outcomes = [CaseOutcome.from_record(o) for o in row["cases"].values()]
        images = [o for o in outcomes if not o.status.is_failure]
        rs = [o.r for o in images if o.r is not None]
        seconds = sum(o.seconds for o in images if o.seconds is not None)
        note = _how(row) + "".join(f"; {t.kind.value} {t.case}" for t in self.turns if t.commit == row["commit"])
        return (f"{row['commit'][:10]:<10} {row['date'][:10]:<10} {len(images):>5}/{len(outcomes):<2} "
                f"{sum(o.at_parity for o in outcomes):>6} {min(rs) if rs else float('nan'):>12.8f} "
                f"{seconds:>8.1f}  {note.lstrip('; ')}")


def _how(row: Mapping) -> str:
    """How a commit that was not measured was recorded: it does not build, or took a twin's results ("")."""
    if row["build_error"]:
        return f"does not build: {row['build_error']}"
    return f"reused from {row['reused_from'][:8]} ({row['reused_by']})" if row["reused_from"] else ""


def _reused_line(rows: Sequence[Mapping]) -> str:
    first, last = rows[0], rows[-1]
    span = first["commit"][:8] + ("" if len(rows) == 1 else f"..{last['commit'][:8]}")
    return (f"{'':10} {'':10} {len(rows)} commit(s) {span}: the results of {first['reused_from'][:8]} "
            f"(same {first['reused_by']})")


def turns(rows: Sequence[Mapping]) -> list[Turn]:
    """Where each case turns bad along ``rows``: wherever a second process does not reproduce its image, and
    against the last commit before that rendered it reproducibly (BROKEN, PARITY, CHANGED: the first that
    turns; an image that does not reproduce has no hash to compare, and is no commit to compare with)."""
    found: list[Turn] = []
    last: dict[str, tuple[str, CaseOutcome]] = {}  # case -> the latest commit and outcome that built
    for row in rows:
        for case, rec in row["cases"].items():
            now = CaseOutcome.from_record(rec)
            steady = now.reproduced is not False
            if not steady:
                found.append(Turn(Kind.IRREPRODUCIBLE, case, row["commit"], None,
                                  f"hashes {', '.join(h[:12] for h in now.hashes)}"))
            if case in last:
                previous, before = last[case]
                for kind in JUDGED if steady else JUDGED[:-1]:
                    criterion = Criterion(kind, case)
                    if criterion.unusable_good(before) is None:
                        judged = criterion.judge(before, now)
                        if judged.mark is Mark.BAD:
                            found.append(Turn(kind, case, row["commit"], previous, judged.why))
                            break
            if steady:
                last[case] = (row["commit"], now)
    return found


class MergeError(ValueError):
    """Slices that cannot be merged (one line)."""


def merge_rows(root: Path, records: Sequence[Mapping]) -> tuple[list[dict], list[str]]:
    """The rows of ``records`` as one history of ``root`` (see the module docstring)."""
    targets = {rec.get("target") for rec in records}
    if len(targets) != 1:
        raise MergeError(f"the slices are records of different targets: {', '.join(sorted(map(str, targets)))}")
    by_commit: dict[str, dict] = {}
    notes = []
    for rec in records:
        for row in rec["rows"]:
            have = by_commit.setdefault(row["commit"], row)
            if have is row:
                continue
            for case, outcome in row["cases"].items():
                other = have["cases"].get(case)
                if other and other.get("sha256") != outcome.get("sha256"):
                    notes.append(f"{row['commit'][:10]} {case}: image {str(other.get('sha256'))[:12]} on "
                                 f"{have.get('machine')}, {str(outcome.get('sha256'))[:12]} on {row.get('machine')}")
    if not by_commit:
        return [], notes
    try:
        order = git(root, "rev-list", "--reverse", "--topo-order", *by_commit).split()
    except GitError as exc:
        raise MergeError(f"the slices name commits {root} does not have ({exc})") from None
    position = {commit: i for i, commit in enumerate(order)}
    return sorted(by_commit.values(), key=lambda row: position[row["commit"]]), notes

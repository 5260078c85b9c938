"""A target's asv project folder (``results/targets/<target>/`` of detsim's checkout): an asv.conf.json naming the
target repository as asv's ``repo`` and the suite for targets (:mod:`.asvsuite.bench_target`, ``environment_type:
existing``), the suite's facts (``suite.json``), asv's results per machine, and per machine and commit a row (each
case's outcome, with where its image departs, and how the commit was measured). The recorder writes it
(:mod:`detsim.track.recorder.target`); ``detsim-track regressions --repo <project>`` judges it and ``detsim-track
publish --repo <project>`` draws it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.files import TARGET_PROJECTS, RecordingError
from detsim.track.base.git import query
from detsim.track.base.output import write_json
from detsim.track.judge.results_files import TARGET_FOLDER, TARGET_SPEC
from detsim.track.judge.thresholds import TARGET_COST, TARGET_MEMORY, TARGET_PARITY, TARGET_TIMING
from detsim.track.target.build import VENV
from detsim.track.target.spec import FILE, TargetSpec

SUITE_DIR = Path(__file__).resolve().parent / "asvsuite"
SUITE = "suite.json"  # the suite's facts, in the project folder
MEASURED = "measured"  # in the project folder: a commit's outcomes measured by a Dask task, while asv times it
COMMIT_VAR = "DETSIM_TARGET_COMMIT"  # the commit measured (asv sets no ASV_COMMIT in an existing environment)
# set where a commit's cases were measured elsewhere (a Dask task: :mod:`detsim.track.recorder.cluster`): the file of their
# records ({"commit", "cases"}), which the suite's setup_cache reads rather than rendering; asv times the renders
MEASURED_VAR = "DETSIM_TARGET_MEASURED"
CHECKED_ROWS = 20  # rows whose commits must be the target's before a recording goes on (Project.check)
ASV_TIMEOUT_S = 4 * 3600  # one commit's asv run: every case rendered three times (and counted once where the spec
# asks: about 50 renders' time), each within the spec's timeout


@dataclass(frozen=True)
class Project:
    """A target's asv project folder."""

    folder: Path

    @classmethod
    def of(cls, spec: TargetSpec, root: Path) -> "Project":
        return cls(Path(root).resolve() / TARGET_PROJECTS / spec.name)

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

    def rows(self, machine: str = "*", commit: str = "") -> list[dict]:
        """The rows recorded on ``machine`` (default: every machine), of ``commit`` (a full hash or a prefix;
        default: every commit); ValueError naming an unreadable row."""
        rows = []
        for path in sorted(self.folder.glob(f"outcomes/{machine}/{commit}*.json")):
            try:
                row = json.loads(path.read_text())
                if not isinstance(row, dict) or "commit" not in row:
                    raise ValueError("no commit")
            except (OSError, ValueError) as exc:
                raise ValueError(f"{path}: not a readable row of a target's recording ({exc})") from None
            rows.append(row)
        return rows

    def twins(self, machine: str) -> dict[str, str | None] | None:
        """Commit -> the commit whose results it took (None: measured, or it did not build), for every row
        recorded on ``machine``; None where none is (ValueError: an unreadable row). The one record of reuse:
        what a verdict counts, whichever run or slice recorded the commit."""
        return {row["commit"]: row.get("reused_from") for row in self.rows(machine)} or None

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



def in_series(project: Project, data: dict) -> str:
    """Put asv's results ``data`` of one commit (recorded with another interpreter: another machine's build
    venv, or a build folder of its own) into ``project``'s one series (its build venv's interpreter); the file
    name they go under in a results folder."""
    from asv.environment import get_env_name  # asv only where results are moved: imports stay light

    python = str(project.python)
    data.update(env_name=get_env_name("existing", python, {}, {}), python=python,
                params={**data.get("params", {}), "python": python})
    return f"{data['commit_hash'][:8]}-{data['env_name']}.json"

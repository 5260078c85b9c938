"""detsim.track.recorder.cluster, with light stand-ins for pip (a build is a folder), the renders (a
task returns an outcome made from the commit's planted faults) and asv's timing run (a results file written),
on a cluster of worker threads: a window recorded with two workers gives the rows one worker gives; each
distinct tree is built and measured once, its twins take its results; the timings run here after every task,
in history order; a task that fails leaves its commit and its twins unmeasured (said why) and no results; a
second run records only what the first could not, nothing twice. asv's timing results go whole into the
project's one series (a timing run that wrote none leaves its commit unmeasured), and a slice merged twice is
merged once. The recording through pip and asv:
tests/track/commands/test_commands_record_cluster.py (slow)."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import sys
from pathlib import Path

import pytest

distributed = pytest.importorskip("distributed")
import cloudpickle  # noqa: E402 - distributed's own dependency

from detsim.track.base.status import Status  # noqa: E402
from detsim.track.recorder import cluster as cluster_recording  # noqa: E402
from detsim.track.target.build import Builder, BuildError, Installation, source_key  # noqa: E402
from detsim.track.target.cluster import Cluster  # noqa: E402
from detsim.track.recorder.target import TargetRecorder, merge_slices  # noqa: E402
from detsim.track.recorder.window import Window  # noqa: E402
from detsim.track.target.project import Project, in_series  # noqa: E402
from detsim.track.target.render import CaseOutcome  # noqa: E402
from detsim.track.target.spec import load_spec  # noqa: E402
from planted_history import git  # noqa: E402
from planted_port import CASE, make_port  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])
GOLDEN = Path(__file__).resolve().parents[2] / "golden"
WINDOW = ("base", "docs1", "edge", "docs2", "docs3", "shrink", "unshrink", "docs4")


def fake_measure(spec, cases, bin_dir: Path, count_work: Path) -> dict:
    """The cases' outcomes at the commit built in ``bin_dir``: its planted faults decide the image's hash;
    a commit with a planted edge fails (as a worker that cannot render it)."""
    faults = (bin_dir.parent.parent / "faults.py").read_text()
    if "EDGE = 0.02" in faults and "SHRINK = True" not in faults:
        raise RuntimeError("planted failure of the task")
    sha = hashlib.sha256(faults.encode()).hexdigest()[0]
    return {case.id: CaseOutcome(case.id, Status.OK, seconds=0.5, sha256=sha * 64, hashes=(sha * 64,) * 2,
                                 parity={"r": 1.0}).to_dict() for case in cases}


def _fake_install(self, commit: str, folder: Path | None = None) -> Installation:
    """A build without pip: the commit's faults file in a folder of its own."""
    sha = git(self.spec.root, "rev-parse", commit)
    folder = Path(folder) if folder is not None else self.scratch / sha[:12]
    (folder / "venv" / "bin").mkdir(parents=True)
    (folder / "faults.py").write_text(git(self.spec.root, "show", f"{sha}:fakeport/faults.py"))
    return Installation(sha, folder / "venv" / "bin", folder, "files " + source_key(self.spec.root, sha, ["fakeport"]),
                        0.0)


@pytest.fixture
def fakes(monkeypatch):
    """Stand-ins for pip, the renders and asv; the commits asv timed, in order (cleared per run)."""
    timed: list[str] = []

    def fake_timed(self, installed: Installation, cases: dict | None = None) -> dict:
        assert installed.bin_dir.is_dir()  # its build is still there when it is timed
        data = {"commit_hash": installed.commit, "results": {"bench_target.Timing.time_render": [[0.1]]}}
        folder = self.project.results(self.machine)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / in_series(self.project, data)).write_text(json.dumps(data))
        timed.append(installed.commit)
        return cases

    monkeypatch.setattr(Builder, "install", _fake_install)
    monkeypatch.setattr(TargetRecorder, "measure", fake_timed)
    monkeypatch.setattr(cluster_recording, "measure_cases", fake_measure)
    return timed


def _record(port, root: Path, workers: int, commits) -> tuple[Window, str]:
    spec = load_spec(port.root)
    project = Project.of(spec, root)
    project.write(spec, root, "m1")
    recorder = TargetRecorder(spec, project, root, "m1")

    @contextlib.contextmanager
    def threads(cluster):
        with distributed.LocalCluster(n_workers=cluster.workers, threads_per_worker=1, processes=False,
                                      scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}) as local, \
                distributed.Client(local) as client:
            yield client

    window, said = Window(spec.name), io.StringIO()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(cluster_recording, "client", threads)
        cluster_recording.record_on_cluster(recorder, commits, Cluster(workers=workers), window,
                                            lambda line: print(line, file=said))
    assert not (project.folder / cluster_recording.BUILDS).exists()
    return window, said.getvalue()


def test_two_workers_record_what_one_records_each_tree_once_and_a_failed_task_leaves_its_twins_unmeasured(
        tmp_path, fakes, capsys):
    port = make_port(tmp_path, GOLDEN, render="copy")
    commits = [port.commits[name] for name in WINDOW]
    names = {sha: name for name, sha in port.commits.items()}
    windows = []
    for workers in (1, 2):
        fakes.clear()
        window, said = _record(port, tmp_path / f"w{workers}", workers, commits)
        assert [names[c] for c in fakes] == ["base", "shrink"]  # the distinct trees that measured, in order
        assert "3 commit(s) to measure on" in said  # base, edge, shrink: the rest share their sources
        windows.append(window)
    progress = capsys.readouterr().err.splitlines()
    assert progress[-1].startswith("measure: 2 done, 1 failed, 0 left")
    one, two = ([{**{k: v for k, v in row.items() if k != "machine"}, "cases": _unnamed(row["cases"])}
                 for row in w.rows] for w in windows)
    assert one == two
    rows = {names[row["commit"]]: row for row in windows[0].rows}
    for name in ("base", "docs1", "shrink"):  # each measured case names the worker that measured it
        assert rows[name]["cases"][CASE][cluster_recording.WORKER].startswith("inproc://")
    assert rows["docs1"]["reused_from"] == port.commits["base"] and rows["shrink"]["reused_from"] is None
    assert rows["edge"]["build_error"].startswith("its task failed on the cluster: RuntimeError: planted failure")
    for twin in ("docs2", "docs3", "unshrink", "docs4"):  # edge's sources: not measured, and said why
        assert rows[twin]["build_error"].startswith(f"not measured: {port.commits['edge'][:8]}, whose results")
    results = Project.of(load_spec(port.root), tmp_path / "w2").results("m1")
    assert sorted(p.name[:8] for p in results.glob("*.json")) == sorted(
        port.commits[n][:8] for n in ("base", "docs1", "shrink"))  # nothing for what was not measured


def _unnamed(cases: dict) -> dict:
    """Cases' records without the worker and recording that measured them (which differ from run to run)."""
    return {case: {k: v for k, v in rec.items() if k not in (cluster_recording.WORKER, cluster_recording.RUN)}
            for case, rec in cases.items()}


def test_a_second_run_records_only_what_the_first_could_not(tmp_path, fakes):
    port = make_port(tmp_path, GOLDEN, render="copy")
    commits = [port.commits[name] for name in WINDOW]
    _record(port, tmp_path / "d", 2, commits)
    fakes.clear()
    window, _ = _record(port, tmp_path / "d", 2, commits)
    assert fakes == []  # the edge task fails again: nothing timed, nothing recorded twice
    assert window.already == 3 and sum(1 for row in window.rows if row["build_error"] is None) == 3
    rows = Project.of(load_spec(port.root), tmp_path / "d").rows("m1")
    assert len(rows) == len(WINDOW) == len({row["commit"] for row in rows})


def _tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_a_timed_commits_results_go_whole_into_the_one_series_and_a_slice_merged_twice_is_merged_once(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec, commit = load_spec(port.root), port.commits["base"]
    project = Project.of(spec, tmp_path / "a")
    project.write(spec, tmp_path / "a", "m1")
    recorder = TargetRecorder(spec, project, tmp_path / "a", "m1")
    installed = Installation(commit, project.folder / "builds" / commit[:12] / "venv" / "bin", tmp_path, "fp", 0.0)
    cases = {CASE: CaseOutcome(CASE, Status.OK, sha256="a" * 64, hashes=("a" * 64,) * 2, parity={"r": 1.0}).to_dict()}
    given = []

    def fake_asv(*args, timeout=600, commit="", measured=None):  # asv with the suite: it writes what asv writes
        given.append(json.loads(measured.read_text())["cases"])
        project.outcomes("m1").mkdir(parents=True, exist_ok=True)
        (project.outcomes("m1") / f"{commit}.json").write_text(json.dumps({"commit": commit, "cases": cases}))
        python = str(installed.bin_dir / "python")
        data = {"commit_hash": commit, "env_name": "existing-py_own_build", "python": python,
                "params": {"machine": "m1", "python": python}, "results": {"bench_target.Timing.time_render": [[0.2]]}}
        project.results("m1").mkdir(parents=True, exist_ok=True)
        (project.results("m1") / f"{commit[:8]}-existing-py_own_build.json").write_text(json.dumps(data))
        return type("Done", (), {"returncode": 0, "last_line": lambda self: ""})()

    recorder.asv = fake_asv
    assert recorder.measure(installed, cases) == cases and given == [cases]
    assert not (project.folder / "measured" / f"{commit}.json").exists()
    (only,) = project.results("m1").glob(f"{commit[:8]}-*.json")
    data = json.loads(only.read_text())
    assert only.name == in_series(project, dict(data)) and data["python"] == str(project.python)
    assert data["results"] == {"bench_target.Timing.time_render": [[0.2]]}
    recorder._store(commit, {"build_error": None, "keys": [], "cases": cases})

    mine = Project.of(spec, tmp_path / "b")
    mine.write(spec, tmp_path / "b", "m1")
    merge_slices(mine, [project.folder])
    once = _tree(mine.folder / "results"), _tree(mine.folder / "outcomes")
    merge_slices(mine, [project.folder])
    assert (_tree(mine.folder / "results"), _tree(mine.folder / "outcomes")) == once
    assert list(once[0]) == [f"m1/{in_series(mine, dict(data))}"] and len(once[1]) == 1
    other = port.commits["edge"]
    silent = Installation(other, installed.bin_dir, tmp_path, "fp", 0.0)

    def silent_asv(*args, timeout=600, commit="", measured=None):  # the suite ran, asv wrote no results
        (project.outcomes("m1") / f"{commit}.json").write_text(json.dumps({"commit": commit, "cases": cases}))
        return type("Done", (), {"returncode": 1, "last_line": lambda self: "asv: planted end"})()

    recorder.asv = silent_asv
    with pytest.raises(BuildError, match=r"asv wrote no results \(exit 1: asv: planted end\)"):
        recorder.measure(silent, cases)


def test_a_worker_that_does_not_see_the_build_fails_its_task_rather_than_render_nothing(tmp_path):
    port = make_port(tmp_path, GOLDEN, render="copy")
    with pytest.raises(cluster_recording.NotShared, match="does not see .*nowhere/venv/bin: a cluster's workers must"):
        cluster_recording.measure_on_worker(load_spec(port.root), [], tmp_path / "nowhere" / "venv" / "bin",
                                            tmp_path / "counts")

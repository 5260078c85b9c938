"""detsim.track.recorder.own_cluster, in process, with the stand-in asv of tests/_fake_tools.py (no cluster: each
task function is run directly): a task records every exact benchmark of its commit, and no timing, in its slot's
own environment (a hard-linked copy), home and results folder, the next free slot while one is held; a worker that
does not see the checkout fails in one line; only the client merges, so a task run twice (its worker lost) and a
commit recorded again leave each results file as one run leaves it, and the sidecar names each merged commit's
worker and recording; OwnRecording with a cluster checks it first, sends the exact phase to it and keeps the
timings here. Slow: two worker processes against one, and a worker killed mid-task, on a real LocalCluster."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from detsim.track.base import where
from detsim.track.recorder import own, own_cluster
from detsim.track.recorder.own_cluster import Done, ExactTask
from detsim.track.target.cluster import Outcome

FAKES = Path(__file__).resolve().parents[2] / "_fake_tools.py"
CONFIG = ('// a comment, as asv allows\n{"version": 1, "project": "detsim", "repo": ".", "environment_type": '
          '"virtualenv", "benchmark_dir": "benchmarks", "env_dir": ".asv/env", "results_dir": "results/asv", '
          '"html_dir": "reports/html"}\n')
sys.path.insert(0, str(FAKES.parent))
from _fake_tools import BENCHMARKS  # noqa: E402

EXACT = sorted(name for name in BENCHMARKS if re.search(own_cluster.EXACT, name))


def checkout(tmp_path: Path, commits: int = 0) -> Path:
    """asv.conf.json, the stand-in asv in .venv/bin, an environment asv made; ``commits`` commits of git."""
    root = tmp_path / "detsim"
    made = root / ".asv" / "env" / "abc"
    (made / "lib").mkdir(parents=True)
    (made / "lib" / "torch.so").write_text("big")
    (made / "asv-env-info.json").write_text("{}")
    (root / "asv.conf.json").write_text(CONFIG)
    (root / "benchmarks").mkdir()
    bin_ = root / ".venv" / "bin"
    bin_.mkdir(parents=True)
    (bin_ / "asv").write_text(f"#!{sys.executable} -S\n" + FAKES.read_text())
    (bin_ / "asv").chmod(0o755)
    for n in range(commits):
        (root / "notes.txt").write_text(f"{n}\n")
        for args in (["init", "-q", "-b", "main"] if n == 0 else [], ["add", "notes.txt"], ["commit", "-qm", f"c{n}"]):
            if args:
                subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=root,
                               check=True, capture_output=True)
    return root


@pytest.fixture(autouse=True)
def _stand_in_settings(tmp_path, monkeypatch):
    """The stand-in's log, and a temporary folder of the test's own for its fork servers (a short path)."""
    monkeypatch.setenv("FAKE_LOG", str(tmp_path / "log"))
    folder = tempfile.mkdtemp(prefix="oc", dir="/tmp")
    monkeypatch.setenv("TMPDIR", folder)
    yield
    shutil.rmtree(folder, ignore_errors=True)


def _task(root: Path, commit: str) -> ExactTask:
    return ExactTask(str(root), "box", commit, str(root / ".asv" / "env"), (("TORCHINDUCTOR_COMPILE_THREADS", "1"),))


def _calls(tmp_path: Path) -> list[list[str]]:
    log = tmp_path / "log"
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    log.unlink()
    return calls


def test_a_task_records_its_commits_exact_benchmarks_in_its_slots_own_environment_home_and_folder(tmp_path):
    root = checkout(tmp_path)
    done = own_cluster.exact_task(_task(root, "a" * 40))
    results = Path(done.results)
    assert results.parent.parent == root / own_cluster.CLUSTER / "tasks"
    data = json.loads((results / "box" / "aaaaaaaa-fake.json").read_text())
    assert sorted(data["results"]) == EXACT and len(EXACT) == 6  # every exact benchmark, no timing
    machine, run = _calls(tmp_path)
    # the configuration in the checkout: the suite finds the checkout as its folder (ASV_CONF_DIR)
    assert machine[:2] == ["asv", "machine"] and run[1:4] == ["--config", str(root / ".asv-slot1.conf.json"), "run"]
    config = json.loads((root / ".asv-slot1.conf.json").read_text())
    assert config["env_dir"] == str(root / ".asv" / "env-slot1") and config["results_dir"] == str(results)
    copy = root / ".asv" / "env-slot1" / "abc" / "lib" / "torch.so"
    assert os.stat(copy).st_ino == os.stat(root / ".asv" / "env" / "abc" / "lib" / "torch.so").st_ino
    assert (root / own_cluster.CLUSTER / "home-slot1" / ".asv-machine.json").exists()  # its own home
    with open(root / own_cluster.CLUSTER / "slot-1.lock", "a") as held:  # a task running in slot 1
        fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
        other = own_cluster.exact_task(_task(root, "b" * 40))
    assert json.loads((root / ".asv-slot2.conf.json").read_text())["results_dir"] == other.results
    assert Path(other.results).parent != results.parent


def test_asv_holds_its_slot_so_that_one_outliving_a_killed_worker_keeps_the_slot(tmp_path):
    root = checkout(tmp_path)
    seen = tmp_path / "fds"
    asv = root / ".venv" / "bin" / "asv"
    asv.write_text(f"#!{sys.executable} -S\nimport os, sys\nif 'run' in sys.argv:\n"  # its open files, named
                   f"    open({str(seen)!r}, 'w').write('\\n'.join(os.path.realpath('/proc/self/fd/' + fd) "
                   "for fd in os.listdir('/proc/self/fd')))\n" + FAKES.read_text().replace(
                       "from __future__ import annotations\n", ""))
    own_cluster.exact_task(_task(root, "a" * 40))
    assert str(root / own_cluster.CLUSTER / "slot-1.lock") in seen.read_text().splitlines()


def test_a_worker_that_does_not_see_the_checkout_and_an_asv_that_records_nothing_fail_in_one_line(tmp_path):
    root = checkout(tmp_path)
    with pytest.raises(own_cluster.NotShared, match=r"does not see .*asv.conf.json: a cluster's workers must share"):
        own_cluster.exact_task(_task(tmp_path / "elsewhere", "a" * 40))
    (root / ".venv" / "bin" / "asv").write_text(f"#!{sys.executable} -S\nprint('no such commit'); raise SystemExit(1)\n")
    with pytest.raises(RuntimeError) as failed:
        own_cluster.exact_task(_task(root, "a" * 40))
    assert str(failed.value).startswith("asv recorded nothing of aaaaaaaa on ") and "\n" not in str(failed.value)
    log = root / own_cluster.CLUSTER / own_cluster.FAILED / "aaaaaaaaaaaa.log"
    assert str(failed.value).endswith(f"(exit 1; it said: no such commit; its log: {log})")
    assert log.read_text() == "no such commit\n"


def test_only_the_client_merges_so_a_task_run_twice_or_a_commit_recorded_again_is_recorded_once(tmp_path):
    root = checkout(tmp_path)
    lost = own_cluster.exact_task(_task(root, "a" * 40))  # its worker died before it was gathered: never merged
    again = own_cluster.exact_task(_task(root, "a" * 40))
    b = own_cluster.exact_task(_task(root, "b" * 40))
    said = []
    outcomes = {"a" * 40: Outcome(Done(again.results, "tcp://h:1")), "b" * 40: Outcome(Done(b.results, "tcp://h:2")),
                "c" * 40: Outcome(failed="KilledWorker: lost three times")}
    failed = own_cluster.gathered(root, "box", list(outcomes), outcomes, "r1", said.append)
    assert failed == [f"cccccccc: its task failed on the cluster: KilledWorker: lost three times"]
    assert said == ["2 of 3 commit(s) merged into results/asv"]
    folder = root / "results" / "asv" / "box"
    merged = {p.name: json.loads(p.read_text()) for p in folder.glob("*.json")}
    assert sorted(merged) == ["aaaaaaaa-fake.json", "bbbbbbbb-fake.json"]  # machine.json: asv's, not merged
    assert sorted(merged["aaaaaaaa-fake.json"]["results"]) == EXACT
    assert where.read_where(folder) == (where.Taken("a" * 40, "r1", "tcp://h:1"),
                                        where.Taken("b" * 40, "r1", "tcp://h:2"))
    assert (Path(lost.results) / "box" / "aaaaaaaa-fake.json").exists()  # left for the clean-up, never merged
    recorded_again = own_cluster.exact_task(_task(root, "a" * 40))
    own_cluster.gathered(root, "box", ["a" * 40], {"a" * 40: Outcome(Done(recorded_again.results, "tcp://g:3"))},
                         "r2", said.append)
    assert json.loads((folder / "aaaaaaaa-fake.json").read_text()) == merged["aaaaaaaa-fake.json"]
    assert where.read_where(folder) == (where.Taken("b" * 40, "r1", "tcp://h:2"),
                                        where.Taken("a" * 40, "r2", "tcp://g:3"))


def test_a_bad_cluster_is_refused_in_one_line(tmp_path, capsys):
    for option in (["--workers", "0"], ["--scheduler", "not an address!"]):
        assert own_cluster.main(["--root", str(tmp_path), "--machine", "m", *option, "--check"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("tracking run: --")


def test_with_a_cluster_the_exact_phase_goes_to_it_after_a_check_and_the_timings_stay_here(tmp_path, monkeypatch):
    root = checkout(tmp_path, commits=2)
    asked = []

    def on_cluster(self, *args):
        asked.append(args)
        if args[0] == "--commits":  # as the driver does, each task run here
            commits = Path(args[1]).read_text().split()
            outcomes = {c: Outcome(own_cluster.exact_task(_task(root, c))) for c in commits}
            return 2 if own_cluster.gathered(root, "box", commits, outcomes, "r1", print) else 0
        return 0

    monkeypatch.setattr(own.OwnRecording, "venv", lambda self: None)
    monkeypatch.setattr(own.OwnRecording, "on_cluster", on_cluster)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(root)
    own.OwnRecording(root, "box", ("--workers", "2")).record(2)
    assert [a[0] for a in asked] == ["--check", "--commits"]
    calls = [call for call in _calls(tmp_path) if "run" in call or "setup" in call]
    benches = [call[call.index("--bench") + 1] for call in calls if "run" in call]
    assert benches == [own_cluster.EXACT, own_cluster.EXACT, own.TIMED]  # two tasks, then the timings here
    assert [call[1:4] for call in calls][0] == ["--config", "asv.conf.json", "setup"]
    folder = root / "results" / "asv" / "box"
    files = [json.loads(p.read_text()) for p in folder.glob("*-fake.json")]
    assert len(files) == 2 and all(sorted(data["results"]) == sorted(BENCHMARKS) for data in files)
    assert len(where.read_where(folder)) == 2
    assert not (root / own.SECOND_RESULTS).exists()  # no second asv process here


def test_a_commit_recorded_again_without_a_cluster_is_no_longer_said_to_be_measured_by_one(tmp_path, monkeypatch):
    root = checkout(tmp_path, commits=2)
    commits = subprocess.run(["git", "rev-list", "HEAD"], cwd=root, capture_output=True, text=True).stdout.split()
    folder = root / "results" / "asv" / "box"
    monkeypatch.setattr(own.OwnRecording, "venv", lambda self: None)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(root)
    own.OwnRecording(root, "box").record(2)  # both recorded completely, here
    assert where.read_where(folder) == ()
    where.write_where(folder, [], [where.Taken(c, "r1", "tcp://h:1") for c in commits])
    own.OwnRecording(root, "box").record(2)  # HEAD recorded again, here; the older one is complete
    assert where.read_where(folder) == (where.Taken(commits[1], "r1", "tcp://h:1"),)


def _masked(folder: Path) -> dict:
    """Each merged results file of ``folder``, its durations (times) left out."""
    return {p.name: {k: v for k, v in json.loads(p.read_text()).items() if k != "durations"}
            for p in sorted(folder.glob("*-fake.json"))}


@pytest.mark.slow
def test_two_workers_merge_what_one_merges_each_commit_once(tmp_path):
    pytest.importorskip("distributed")
    from detsim.track.target.cluster import Cluster

    commits = [c * 40 for c in "abcd"]
    got = []
    for workers in (1, 2):
        root = checkout(tmp_path / f"w{workers}")
        said = []
        assert own_cluster.record_exact(root, "box", commits, Cluster(workers=workers), said.append) == []
        folder = root / "results" / "asv" / "box"
        got.append(_masked(folder))
        taken = where.read_where(folder)
        assert sorted(t.commit for t in taken) == commits and len({t.run for t in taken}) == 1
        assert len({t.worker for t in taken}) <= workers
        assert not (root / own_cluster.CLUSTER / "tasks").exists()  # the tasks' folders go with the recording
    assert got[0] == got[1] and len(got[0]) == 4
    assert all(sorted(data["results"]) == EXACT for data in got[0].values())


@pytest.mark.slow
def test_a_worker_killed_mid_task_leaves_nothing_lost_or_doubled(tmp_path, monkeypatch):
    """The stand-in asv kills its worker (its parent) the first time it records commit b, after writing half
    of b's results into that task's folder; the scheduler runs the task again on a new worker."""
    pytest.importorskip("distributed")
    from detsim.track.target.cluster import Cluster

    root = checkout(tmp_path)
    marker = tmp_path / "killed"
    asv = root / ".venv" / "bin" / "asv"
    asv.write_text(f"#!{sys.executable} -S\n" + f"""
import json, os, signal, sys
from pathlib import Path
argv = sys.argv[1:]
if "run" in argv and "bbbbbbbb" in Path(argv[-1].removeprefix("HASHFILE:")).read_text() \\
        and not Path({str(marker)!r}).exists():
    Path({str(marker)!r}).write_text(str(os.getppid()))
    config = json.loads(Path(argv[argv.index("--config") + 1]).read_text())
    half = Path(config["results_dir"]) / "box" / "bbbbbbbb-fake.json"
    half.parent.mkdir(parents=True)
    half.write_text('{{"commit_hash": "' + "b" * 40 + '", "results": {{')  # killed while it wrote
    os.kill(os.getppid(), signal.SIGKILL)
    raise SystemExit(1)
""" + FAKES.read_text().replace("from __future__ import annotations\n", ""))
    commits = [c * 40 for c in "abc"]
    said = []
    assert own_cluster.record_exact(root, "box", commits, Cluster(workers=2), said.append) == []
    assert marker.exists()  # a worker was killed
    folder = root / "results" / "asv" / "box"
    merged = _masked(folder)
    assert sorted(merged) == ["aaaaaaaa-fake.json", "bbbbbbbb-fake.json", "cccccccc-fake.json"]
    assert all(sorted(data["results"]) == EXACT for data in merged.values())  # whole, none half
    taken = where.read_where(folder)
    assert sorted(t.commit for t in taken) == commits  # once each
    assert said[-1] == "3 of 3 commit(s) merged into results/asv"


@pytest.mark.slow
def test_an_existing_schedulers_workers_record_detsims_own_commits(tmp_path):
    """``--scheduler ADDRESS``: a scheduler already running (a LocalCluster's, reached by its address only)."""
    distributed = pytest.importorskip("distributed")
    from detsim.track.target.cluster import Cluster

    root = checkout(tmp_path)
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, protocol="tcp",
                                  host="127.0.0.1", scheduler_kwargs={"dashboard": False, "dashboard_address": ":0"}
                                  ) as running:
        said = []
        cluster = Cluster(scheduler=running.scheduler_address)
        assert own_cluster.record_exact(root, "box", ["a" * 40, "b" * 40], cluster, said.append) == []
    assert said[0] == f"2 commit(s) to measure on the Dask cluster at {running.scheduler_address}"
    taken = where.read_where(root / "results" / "asv" / "box")
    assert sorted(t.commit for t in taken) == ["a" * 40, "b" * 40]
    assert all(t.worker.startswith("tcp://127.0.0.1:") for t in taken)

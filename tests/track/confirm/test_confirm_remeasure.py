"""Re-measuring one benchmark at two commits of a tiny project, interleaved, a fresh process each."""

from __future__ import annotations

import statistics
import subprocess
from pathlib import Path

import pytest

from detsim.track.confirm import remeasure as remeasure_module
from detsim.track.confirm.decision import Status, decide
from detsim.track.confirm.remeasure import RemeasureError, Target, remeasure

BENCH = '''
import time
import detsim


class Work:
    timer = staticmethod(time.process_time)
    params = [[1, 2]]
    param_names = ["scale"]

    def setup(self, scale):
        self.scale = scale

    def time_work(self, scale):
        detsim.work(self.scale)

    def track_rate(self, scale):
        started = time.process_time()
        detsim.work(self.scale)
        return 1.0 / (time.process_time() - started)

    def time_broken(self, scale):
        raise RuntimeError("this benchmark is broken")
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, loops: int, message: str) -> str:
    (repo / "detsim" / "__init__.py").write_text(
        f"def work(scale):\n    total = 0\n    for i in range({loops} * scale):\n        total += i * i\n    return total\n")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(autouse=True)
def no_torch(monkeypatch):
    """The tiny project's benchmarks need no torch: its servers skip the import (torch's preload is tested
    with the fork server itself)."""
    monkeypatch.setattr(remeasure_module, "PRELOADED", ())


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> dict:
    """A project whose second commit makes ``work`` twice as slow, and a third that changes nothing."""
    repo = tmp_path_factory.mktemp("project")
    (repo / "detsim").mkdir()
    (repo / "benchmarks").mkdir()
    (repo / "benchmarks" / "__init__.py").write_text("")
    (repo / "benchmarks" / "bench_work.py").write_text(BENCH)
    _git(repo, "init", "-q")
    fast = _commit(repo, 60_000, "fast")
    slow = _commit(repo, 120_000, "twice the work")
    (repo / "README").write_text("docs only\n")
    same = _commit(repo, 120_000, "docs")
    return {"root": repo, "fast": fast, "slow": slow, "same": same}


def test_a_doubled_cost_is_measured_interleaved_and_confirmed(project):
    m = remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["fast"], project["slow"], rounds=16)
    assert (m.commit_a, m.commit_b) == (project["fast"], project["slow"])
    assert len(m.a) == len(m.b) == 16 and m.order == "AB" * 8  # rounds started by A and by B in turn
    assert decide(m, 0.05).status is Status.CONFIRMED


def test_an_unchanged_cost_is_noise(project):
    m = remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["slow"], project["same"], rounds=8)
    assert decide(m, 0.5).status is Status.NOISE


def test_a_throughput_is_compared_by_its_inverse(project):
    m = remeasure(project["root"], Target("bench_work.Work.track_rate", (1,), larger_is_better=True),
                  project["fast"], project["slow"], rounds=16)
    assert statistics.median(m.b) > 1.5 * statistics.median(m.a)  # slower commit: more seconds per unit
    assert decide(m, 0.05).status is Status.CONFIRMED


def test_more_rounds_are_taken_when_asked(project):
    asked = []

    def more(m):
        asked.append(len(m.a))
        return 2 if len(m.a) < 4 else 0

    m = remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["fast"], project["same"],
                  rounds=2, more=more)
    assert asked == [2, 4] and len(m.a) == 4 and m.order == "ABAB"


def test_a_failing_benchmark_names_itself_and_the_commit(project):
    with pytest.raises(RemeasureError, match=r"bench_work\.Work\.time_broken.*" + project["fast"][:8]
                       + ".*this benchmark is broken"):
        remeasure(project["root"], Target("bench_work.Work.time_broken", (1,)), project["fast"], project["slow"], rounds=1)


def test_a_commit_that_does_not_exist_is_one_line(project):
    with pytest.raises(RemeasureError, match="deadbeef: not a commit"):
        remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), "deadbeef", project["slow"], rounds=1)


def test_no_round_starts_past_the_deadline(project):
    import time

    with pytest.raises(RemeasureError, match="time given to re-measuring ran out after 0 rounds"):
        remeasure(project["root"], Target("bench_work.Work.time_work", (1,)), project["fast"], project["slow"],
                  rounds=4, deadline=time.monotonic() - 1)

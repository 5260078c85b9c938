"""Proof that the performance verdicts can be trusted, on a throwaway history built from the project.

The history: the project as it is, five unchanged commits (a docs line each, the fifth a comment in the
engine instead, so that two unchanged commits are also two different packages), then three planted
ones, each on top of the one before:

    cost3   an extra computation in ``simulate``: ~3 % of P1@64's instructions
    slow10  on top of it, a CPU-time slowdown of 10 % of every render (a busy wait proportional to it)
    slow20  the same at 20 % (instead of 10 %)

and the two deciding steps of the verdict are run on it the way ``detsim-track`` runs them, each commit
measured as its own exported package:

* the **instruction count** (``detsim.track.measure``): the planted computation is flagged at ``cost3``
  in 5 of 5 repeats (a rise over the 2 % threshold), and no unchanged commit is;
* the **timing confirmation** (``detsim.track.judge``): re-measuring ``cost3`` against ``slow10``
  confirms the 10 % slowdown in at least 4 of 5 repeats, against ``slow20`` in 5 of 5, and an unchanged
  commit against its parent in none.

docs/tracking.md ("What the verdicts can see") gives the figures this test measured.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from detsim.track.base.git import export_package
from detsim.track.judge.confirm import Confirmation, decide, extra_rounds
from detsim.track.judge.confirm import Target, remeasure
from detsim.track.measure.cost import not_measured_reason
from detsim.track.measure.cost import CostSpec, count_spec
from detsim.track.judge.benchmarks import threshold_for
from detsim.track.judge.results_files import load_config

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]
REPEATS = 5
TIMED = Target("bench_engine.PathThroughput.track_ns_per_pixel_step", ("P2", "eager", "float64", "cpu"))
COUNTED = CostSpec("P1@64")
ENGINE = Path("detsim") / "rendering" / "engine.py"
RENDER = "    image, _ = render(prepare(config, device=device, dtype=dtype), chunk_pixels=chunk_pixels, mode=mode)\n"
# ~3 % of P1@64's 16.17 M instructions (measured +2.14 % for 13,000 elements, +4.08 % for 26,000)
EXTRA_WORK = ("    torch.exp(torch.linspace(0.0, 1.0, 8_000, dtype=torch.float64)).sum()"
              "  # planted: extra computation\n")
UNCHANGED_LINE = "    # an unchanged commit: this line changes the package, not the work\n"
SLOWDOWN = '''    _planted_end = time.process_time() + {share} * (time.process_time() - _planted_start)  # planted
    while time.process_time() < _planted_end:
        sum(range(1000))  # plain work between clock reads: the plant's own syscalls stay a small part
'''


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


def _commit(repo: Path, message: str) -> str:
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=proof", "-c", "user.email=proof@example.invalid", "commit", "-q", "--allow-empty", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


def _plant_slowdown(repo: Path, share: float) -> None:
    path = repo / ENGINE
    text = path.read_text()
    if "_planted_start" not in text:
        text = text.replace(RENDER, "    _planted_start = time.process_time()  # planted\n" + RENDER
                            + SLOWDOWN.format(share=share))
        text = text.replace("\nimport torch\n", "\nimport time\n\nimport torch\n", 1)
    else:
        text = text.replace(SLOWDOWN.format(share=0.10), SLOWDOWN.format(share=share))
    path.write_text(text)


@pytest.fixture(scope="module")
def history(tmp_path_factory) -> dict:
    """The throwaway history (see the module docstring): name -> commit, and the repository."""
    repo = tmp_path_factory.mktemp("proof") / "project"
    subprocess.run(["git", "clone", "-q", "--no-local", str(ROOT), str(repo)], check=True)
    for path in ("detsim", "benchmarks"):  # this working tree's code, committed or not
        shutil.rmtree(repo / path)
        shutil.copytree(ROOT / path, repo / path, ignore=shutil.ignore_patterns("__pycache__"))
    commits = {"base": _commit(repo, "the project as it is")}
    for i in range(4):
        with (repo / "README.md").open("a") as handle:
            handle.write(f"\nAn unchanged commit, number {i}.\n")
        commits[f"same{i}"] = _commit(repo, f"docs only {i}")
    engine = (repo / ENGINE).read_text()
    assert RENDER in engine, "simulate() no longer renders with this line: update the plants"
    (repo / ENGINE).write_text(engine.replace(RENDER, RENDER + UNCHANGED_LINE))
    commits["same4"] = _commit(repo, "a comment in the engine: other code, the same work")
    engine = (repo / ENGINE).read_text()
    (repo / ENGINE).write_text(engine.replace(RENDER, RENDER + EXTRA_WORK))
    commits["cost3"] = _commit(repo, "planted: ~3% more instructions")
    _plant_slowdown(repo, 0.10)
    commits["slow10"] = _commit(repo, "planted: 10% slower")
    _plant_slowdown(repo, 0.20)
    commits["slow20"] = _commit(repo, "planted: 20% slower")
    return {"repo": repo, "commits": commits}


def _count(repo: Path, commit: str, work: Path) -> int:
    package = export_package(repo, commit, work)
    return count_spec(COUNTED, root=repo, keep=False, cwd=work, env={"PYTHONPATH": str(package)}).instructions


@pytest.mark.skipif(not_measured_reason() is not None, reason=str(not_measured_reason()))
def test_a_three_percent_extra_computation_is_flagged_by_the_counts_and_unchanged_commits_are_not(history, tmp_path):
    repo, commits = history["repo"], history["commits"]
    threshold = threshold_for("bench_cost.InstructionCounts.track_instructions", load_config(ROOT)["regressions_thresholds"])
    base = _count(repo, commits["base"], tmp_path / "base")
    unchanged = [_count(repo, commits[f"same{i}"], tmp_path / f"same{i}") for i in range(5)]
    assert all(abs(n / base - 1) < threshold / 4 for n in unchanged), (base, unchanged)
    rises = [_count(repo, commits["cost3"], tmp_path / f"cost3-{i}") / base - 1 for i in range(REPEATS)]
    print(f"counts: base {base}, unchanged {unchanged}, cost3 rises {[f'{r:.4%}' for r in rises]}")  # -s shows it
    assert all(0.02 < rise < 0.06 for rise in rises), rises  # "about 3 %", and each above the threshold
    assert sum(rise > threshold for rise in rises) == REPEATS, rises


def _confirmations(history: dict, a: str, b: str) -> list:
    repo, commits = history["repo"], history["commits"]
    threshold = threshold_for(TIMED.benchmark, load_config(ROOT)["regressions_thresholds"])
    outcomes = [decide(remeasure(repo, TIMED, commits[a], commits[b], more=extra_rounds(threshold)), threshold)
                for _ in range(REPEATS)]
    print(f"{a} -> {b}:", *(c.evidence for c in outcomes), sep="\n  ")  # -s shows the figures
    return outcomes


def test_an_unchanged_commit_is_never_confirmed_slower(history):
    outcomes = _confirmations(history, "same3", "same4")
    assert [c.status for c in outcomes] == [Confirmation.NOISE] * REPEATS, [c.evidence for c in outcomes]


def test_a_ten_percent_slowdown_is_confirmed_at_least_four_times_in_five(history):
    outcomes = _confirmations(history, "cost3", "slow10")
    assert sum(c.status is Confirmation.CONFIRMED for c in outcomes) >= 4, [c.evidence for c in outcomes]


def test_a_twenty_percent_slowdown_is_always_confirmed(history):
    outcomes = _confirmations(history, "cost3", "slow20")  # slow20's plant replaces slow10's
    assert [c.status for c in outcomes] == [Confirmation.CONFIRMED] * REPEATS, [c.evidence for c in outcomes]

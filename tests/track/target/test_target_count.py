"""detsim.track.target.count: a target's render counted under callgrind in an environment pinned to what decides a
count; the verdict judging a target's counts by detsim's cost rule (TARGET_COST) on a stored history of the
planted port, naming the 15 % slowdown at its commit and nothing at the docs-only commits; and (slow) the counts
themselves: equal for two separately built commits of the same files, the planted slowdown far above them, and
a recording through asv whose verdict names it.

The stored history's counts are the ones the slow tests count (copy mode: numpy's import and a copied image,
no torch), so the fixture is what a recording writes."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from detsim.track.base.callgrind import CountError
from detsim.track.base.golden import find_case
from detsim.track.cli import main
from detsim.track.judge.thresholds import TARGET_COST
from detsim.track.target import count as counting
from detsim.track.target.build import Builder
from detsim.track.target.count import count_env, count_render
from detsim.track.target.project import Project
from detsim.track.target.spec import load_spec
from planted_history import git
from planted_port import CASE, make_port, start_results, write_results

ROOT = Path(__file__).resolve().parents[3]
GOLDEN = ROOT / "tests" / "golden"
MACHINE = "m1"
COST = "bench_target.Cost.track_instructions"
PARITY = "bench_target.Case.track_parity_one_minus_r"
# copy mode, counted as the slow tests count them (separate builds): base; edge and every commit after it that keeps
# its change (docs4, steady, docs5: equal to the instruction); slow (its plant spins on CPU time: 471-494 M)
UNCHANGED, EDGE, SLOW = 375_592_502, 375_681_514, 494_441_381


def test_a_counted_render_runs_in_an_environment_of_its_own(tmp_path, monkeypatch):
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec = load_spec(port.root)
    monkeypatch.setenv("DETSIM_TARGET_COMMIT", "a" * 40)  # differs per commit: it must not reach the process
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    env = count_env(spec, tmp_path / "bin")
    assert env["PATH"].split(":")[0] == str(tmp_path / "bin") and "DETSIM_TARGET_COMMIT" not in env
    assert (env["PYTHONHASHSEED"], env["OMP_NUM_THREADS"], env["OPENBLAS_NUM_THREADS"]) == ("0", "1", "1")
    assert env["PYTHONDONTWRITEBYTECODE"] == "1" and env["FAKEPORT_GOLDEN"] == str(GOLDEN)  # the spec's env


def test_a_counted_render_reads_the_specs_env_and_command_as_the_render_does(tmp_path, monkeypatch):
    port = make_port(tmp_path, GOLDEN, render="copy")
    spec = dataclasses.replace(load_spec(port.root), env={"PATH": "/opt/port/bin:$PATH"}, command=("./nb.py",))
    env = count_env(spec, tmp_path / "bin")
    assert env["PATH"].split(":")[:2] == ["/opt/port/bin", str(tmp_path / "bin")]  # $PATH expanded, not kept
    seen = []
    monkeypatch.setattr(counting, "command_words", lambda spec, bin_dir, path: seen.append(path))  # not found
    with pytest.raises(CountError, match=r"^not counted: command not found: \./nb\.py$"):
        count_render(spec, find_case(CASE, GOLDEN), tmp_path / "bin", tmp_path / "work")
    assert seen == [env["PATH"]]  # the script is looked up as the render looks it up, in the commit's tree


def test_without_valgrind_a_count_is_refused_in_one_line(tmp_path, monkeypatch):
    port = make_port(tmp_path, GOLDEN, render="copy")
    monkeypatch.setattr(counting.shutil, "which", lambda name, path=None: None)
    with pytest.raises(CountError, match=r"^not counted: valgrind is not installed \(Debian package `valgrind`\)$"):
        count_render(load_spec(port.root), find_case(CASE, GOLDEN), tmp_path / "bin", tmp_path / "work")
    assert not (tmp_path / "work").exists()


def _history(tmp_path: Path, tip: str) -> tuple:
    """The planted port recorded on m1 up to ``tip`` as a recording with counts writes it: measured commits
    with their counts, each docs commit taking its twin's results."""
    port = make_port(tmp_path, GOLDEN, render="copy")
    git(port.root, "checkout", "-q", port.commits[tip])
    spec = load_spec(port.root)
    project = Project.of(spec, tmp_path / "detsim")
    project.write(spec, tmp_path / "detsim", MACHINE)
    results, outcomes = project.results(MACHINE), project.outcomes(MACHINE)
    start_results(results, MACHINE, {COST: ("track", "instructions"), PARITY: ("track", "1 - r")})
    outcomes.mkdir(parents=True)
    plan = [("base", None, UNCHANGED), ("docs1", "base", UNCHANGED), ("edge", None, EDGE), ("steady", None, EDGE),
            ("docs5", "steady", EDGE), ("slow", None, SLOW), ("docs6", "slow", SLOW)]
    names = [name for name, _, _ in plan]
    for i, (name, twin, instructions) in enumerate(plan[:names.index(tip) + 1]):
        commit = port.commits[name]
        write_results(results, MACHINE, commit, 1_700_000_000_000 + i * 1000, {
            COST: instructions, PARITY: 0.0 if name in ("base", "docs1") else 1e-5})
        (outcomes / f"{commit}.json").write_text(json.dumps({
            "commit": commit, "machine": MACHINE, "reused_from": port.commits[twin] if twin else None,
            "reused_by": "sources" if twin else None, "build_error": None, "keys": [],
            "cases": {CASE: {"status": "image", "instructions": instructions}}}))
    return port, project


def _judged(project: Project, capsys) -> tuple[int, list[dict], str]:
    """The verdict's exit, its cost findings and its text (the screen's lines are cut to its width)."""
    code = main(["regressions", "--repo", str(project.folder), "--machine", MACHINE, "--remeasure", "0"])
    capsys.readouterr()
    latest = project.folder / "reports" / "latest"
    [verdict] = json.loads((latest / "verdict.json").read_text())["machines"].values()
    return code, [f for f in verdict["regressions"] if f["family"] == "cost"], (latest / "verdict.txt").read_text()


def test_the_verdict_names_the_planted_slowdown_at_its_commit_by_the_cost_rule(tmp_path, capsys):
    port, project = _history(tmp_path, "docs6")
    code, [cost], text = _judged(project, capsys)
    assert code == 1 and (cost["last_good"], cost["first_bad"]) == (port.commits["docs5"], port.commits["slow"])
    assert (cost["label"], cost["benchmark"], cost["new"]) == ("REGRESSED", COST, SLOW)
    assert f"above the best by more than {TARGET_COST.value:.0%}" in cost["evidence"]  # the target's row
    [line] = [x for x in text.splitlines() if x.startswith("REGRESSED cost")]
    assert line.startswith(f"REGRESSED cost {COST}(case='{CASE}'): 375,681,514 instructions -> 494,441,381")
    assert line.endswith(f'since {port.commits["slow"][:8]} "slow", last good {port.commits["docs5"][:8]} "docs5"')


@pytest.mark.parametrize("tip", ["docs5", "edge"])
def test_unchanged_and_docs_only_commits_and_a_tiny_change_are_no_cost_finding(tmp_path, capsys, tip):
    _, project = _history(tmp_path, tip)  # edge's image change moves its count by 0.024 %
    code, costs, _ = _judged(project, capsys)
    assert costs == [] and code == 1  # the parity change at edge is the verdict's finding, not a cost


@pytest.mark.slow
def test_separately_built_commits_of_the_same_files_count_the_same_and_the_slowdown_far_more(tmp_path):
    """Measured: steady and docs5 (the same installed files) built one after the other into one folder, as a
    recording builds; each counted once (a count repeats exactly: docs/targets.md)."""
    port = make_port(tmp_path, GOLDEN, render="copy", export=False)
    spec, case = load_spec(port.root), find_case(CASE, GOLDEN)
    builder, build = Builder(spec, tmp_path / "scratch"), tmp_path / "project" / "build"
    counts = {}
    for name in ("steady", "docs5", "slow"):
        installed = builder.install(port.commits[name], folder=build)
        counts[name] = count_render(spec, case, installed.bin_dir, tmp_path / "project" / "count")
        shutil.rmtree(build)
    assert counts["steady"] == counts["docs5"]
    assert counts["slow"] > counts["docs5"] * (1 + TARGET_COST.value)


@pytest.mark.slow
def test_a_recording_with_asv_counts_each_measured_commit_and_its_verdict_names_the_slowdown(tmp_path, capsys):
    """docs4..docs6 of the planted port (8 commits: a crash, a render that varies, the slowdown, docs-only
    commits between them) recorded with counts on: the verdict's one cost finding is the slowdown, at its
    commit; no finding starts at a docs-only commit; the counts are in the rows."""
    port = make_port(tmp_path, GOLDEN, render="copy")
    names = {sha: name for name, sha in port.commits.items()}
    root = tmp_path / "detsim"
    root.mkdir()
    git(port.root, "checkout", "-q", port.commits["docs6"])
    code = main(["record", "--target", str(port.root), "--recent", "8", "--root", str(root), "--machine", MACHINE,
                 "--json", str(tmp_path / "record.json")])
    printed = capsys.readouterr().out
    assert code == 1 and printed.count("skipped for a target: ") == 1
    assert "skipped for a target: the compiled and Triton paths" in printed  # counts were made
    project = root / "results" / "targets" / "port"
    [verdict] = json.loads((project / "reports" / "latest" / "verdict.json").read_text())["machines"].values()
    [cost] = [f for f in verdict["regressions"] if f["family"] == "cost"]
    assert (names[cost["last_good"]], names[cost["first_bad"]], cost["label"]) == ("docs5", "slow", "REGRESSED")
    assert not [f for f in verdict["regressions"] if names.get(f["first_bad"], "").startswith("docs")]
    text = (project / "reports" / "latest" / "verdict.txt").read_text()
    assert f'since {port.commits["slow"][:8]} "slow"' in text
    rows = {names[r["commit"]]: r for r in json.loads((tmp_path / "record.json").read_text())["rows"]}
    counted = {name: row["cases"][CASE].get("instructions") for name, row in rows.items()}
    assert counted["crash"] is None and counted["docs4"] == counted["steady"] == counted["docs5"]
    assert counted["slow"] == counted["docs6"] > counted["docs5"] * (1 + TARGET_COST.value)

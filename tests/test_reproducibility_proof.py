"""Proof (slow) that a commit whose images vary run to run is named NONDETERMINISTIC, never CHANGED, and the
other way round, on a throwaway history built from the project, recorded by asv as the tracking run does:

    base (golden baseline refreshed) -> docs only -> a reproducible bit change of every image
        -> images that vary with the process (the same in every run of one process, different in the next)

``detsim-track regressions`` must report the third commit's image-hash changes as ``CHANGED`` at that commit
and the fourth as ``NONDETERMINISTIC`` along the process axis (a second fresh process) at that commit,
nothing else; ``detsim-track explain`` at the fourth names the planted op; ``detsim-track baselines
--refresh`` there refuses to store the images.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from planted_history import append, commit, copy_project, run, start

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parent.parent
MACHINE = "planted-repro"
BENCHMARKS = r"bench_determinism|bench_reproducibility"

# Each plant is appended to detsim/rendering/engine.py and wraps the render() of the commit before it.
CHANGE = '''
_render_before_change = render


def render(setup, **kwargs):  # planted: every image scaled by 1 + 2^-40, the same in every run
    image, info = _render_before_change(setup, **kwargs)
    return image * (1 + 2.0 ** -40), info
'''
VARIES = '''
import os as _planted_os

_render_before_variation = render


def render(setup, **kwargs):  # planted: the image depends on the process it is rendered in (its id)
    image, info = _render_before_variation(setup, **kwargs)
    return image.mul(1 + 2.0 ** -45 * (_planted_os.getpid() % 1000 + 1)), info
'''


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The throwaway repository after ``asv run`` over the planted commits, the verdict and the commit ids."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    pytest.importorskip("asv", reason="asv is not installed (pip install -e '.[dev]')")
    work = tmp_path_factory.mktemp("reproducible")
    root, env, log = start(work)
    copy_project(root)

    track = [sys.executable, "-m", "detsim.track.cli"]
    run([*track, "baselines", "--refresh", "--allow-dirty"], root, env, log)
    commits = {"base": commit(root, "Base: the project as it is, golden baseline refreshed here")}
    append(root / "README.md", "\nA line of documentation.\n")
    commits["unchanged"] = commit(root, "Docs only")
    append(root / "detsim" / "rendering" / "engine.py", CHANGE)
    commits["changed"] = commit(root, "Plant a reproducible change of every image's bits")
    append(root / "detsim" / "rendering" / "engine.py", VARIES)
    commits["varies"] = commit(root, "Plant images that vary with the process")

    hashfile = work / "commits.txt"
    hashfile.write_text("\n".join(commits.values()) + "\n")
    asv = [sys.executable, "-m", "asv"]
    run([*asv, "machine", "--yes", "--machine", MACHINE], root, env, log)
    run([*asv, "run", "--machine", MACHINE, "--show-stderr", "-b", BENCHMARKS, f"HASHFILE:{hashfile}"], root, env,
         log, ok=(0, 2))
    report_path = work / "report.json"
    code = run([*track, "regressions", "--remeasure", "0", "--json", str(report_path)], root, env, log,
                ok=(0, 1, 2))
    lines = [line for line in log.read_text().splitlines() if line.startswith(("NONDETERMINISTIC", "CHANGED"))]
    return {"root": root, "env": env, "log": log, "commits": commits, "exit": code, "lines": lines,
            "report": next(iter(json.loads(report_path.read_text())["machines"].values()))}


def test_the_reproducible_change_is_changed_and_the_varying_images_are_nondeterministic(planted):
    commits, report = planted["commits"], planted["report"]
    name = {sha: key for key, sha in commits.items()}
    found = sorted({(r["label"], r["family"], name.get(r["first_bad"]), r.get("axis"))
                    for r in report["regressions"]})
    summary = "\n".join(map(str, found)) + f"\nnotes: {report['notes']}\nlines: {planted['lines']}"
    assert planted["exit"] == 1 and report["unmeasured"] == [], summary
    nondeterministic = [r for r in report["regressions"] if r["label"] == "NONDETERMINISTIC"]
    changed = [r for r in report["regressions"] if r["label"] == "CHANGED"]
    # the varying commit: every checked case, along the process axis (and the compiled path's two processes);
    # never along the threads axis (one process, one id)
    assert {(name[r["first_bad"]], r["axis"]) for r in nondeterministic} == {("varies", "process"),
                                                                           ("varies", "compiled")}, summary
    assert len([r for r in nondeterministic if r["axis"] == "process"]) == 4, summary
    # the reproducible change: every golden image's hash, at its own commit, never at the varying one
    assert changed and {name[r["first_bad"]] for r in changed} == {"changed"}, summary
    assert {r["family"] for r in changed} <= {"determinism", "hash count"}, summary
    assert any(line.startswith("NONDETERMINISTIC images of 4 golden cases") and "two runs (process)" in line
               and commits["varies"][:8] in line for line in planted["lines"]), summary
    assert any(line.startswith("CHANGED image hash of ") and commits["changed"][:8] in line
               for line in planted["lines"]), summary


def test_explain_names_the_planted_op_of_the_varyingcommit(planted):
    out = planted["root"] / "reports" / "explain-varies"
    command = [sys.executable, "-m", "detsim.track.cli", "explain", planted["commits"]["varies"], "--kind",
               "nondeterministic", "--case", "s01_noise_intfile_scale", "--axis", "process", "--out", str(out)]
    done = subprocess.run(command, cwd=planted["root"], env=planted["env"], capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 1, done.stdout + done.stderr
    answer = (out / "answer.md").read_text()
    assert "first differ at #" in answer and "op aten.mul.Tensor at detsim/rendering/engine.py:" in answer, answer
    assert "in render: DIVERGED" in answer and "a Python value computed differently in the two runs" in answer, answer
    assert "refresh the baselines with" not in answer, answer


def test_baselines_refuse_the_varying_images(planted):
    root, env = planted["root"], planted["env"]
    baselines = sorted((root / "results" / "baselines").rglob("*.json"))
    before = {path: path.read_text() for path in baselines}
    done = subprocess.run([sys.executable, "-m", "detsim.track.cli", "baselines", "--refresh"], cwd=root, env=env,
                          capture_output=True, text=True, timeout=1800)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "do not reproduce" in done.stderr and "process (a render in a second fresh process" in done.stderr
    assert {path: path.read_text() for path in sorted((root / "results" / "baselines").rglob("*.json"))} == before

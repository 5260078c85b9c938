"""Proof (slow) that the whole tracking run (``bash .ci/track``) confirms a time-only slowdown at its commit.

The history, built from the project: the project as it is, three docs-only commits, then one planted commit
that makes every 1-step render about 10 % slower in time alone. After each render it touches fresh pages,
8 bytes' worth a pixel, one byte a page, unmapping them again: the kernel's page faults cost the time, and
valgrind counts no instruction of them worth a step (a few per page against thousands per pixel). Renders of
many steps per pixel (P2) barely move: the plant is per pixel, not per step.

``.ci/track`` records the five commits as a user's run would (both phases, its own environments), then judges
them: the planted commit's ``PathThroughput`` P1 step must be re-measured and **confirmed** at that commit
(exit 1), no docs-only commit may be flagged, and no step may be left undecided.
"""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from planted_history import append, commit, copy_project, link_project_venv, start

pytestmark = pytest.mark.slow

MACHINE = "planted-timing"
SLOWDOWN = '''
import mmap as _planted_mmap

import numpy as _planted_np

_render_before_slowdown = render
_PLANTED_CHUNK = 1 << 20  # bytes unmapped at a time, so that the plant's own memory stays small


def render(setup, **kwargs):  # planted: fresh pages after each render, 8 bytes a pixel: time, not instructions
    image, info = _render_before_slowdown(setup, **kwargs)
    for _ in range(-(-8 * image.numel() // _PLANTED_CHUNK)):
        pages = _planted_mmap.mmap(-1, _PLANTED_CHUNK)
        view = _planted_np.frombuffer(pages, dtype=_planted_np.uint8)
        view[::_planted_mmap.PAGESIZE] = 1
        del view
        pages.close()
    return image, info
'''


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """The throwaway repository after ``bash .ci/track`` over it: its exit, output, report and commits."""
    if shutil.which("git") is None or shutil.which("make") is None:
        pytest.skip("git and make are needed")
    work = tmp_path_factory.mktemp("timing")
    root, env, log = start(work)
    copy_project(root)
    link_project_venv(root)  # the project's environment, up to date: make leaves it alone
    commits = {"base": commit(root, "Base: the project as it is")}
    for n in (1, 2, 3):
        append(root / "README.md", f"\nA line of documentation ({n}).\n")
        commits[f"docs{n}"] = commit(root, f"Docs only ({n})")
    append(root / "detsim" / "rendering" / "engine.py", SLOWDOWN)
    commits["slow"] = commit(root, "Plant a time-only slowdown of every 1-step render")
    env = {**env, "RECENT": str(len(commits)), "ASV_MACHINE": MACHINE}
    done = subprocess.run(["bash", ".ci/track"], cwd=root, env=env, capture_output=True, text=True, timeout=3600)
    log.write_text(done.stdout + done.stderr)
    report = next(iter(json.loads(max((root / "reports").glob("*/verdict.json")).read_text())["machines"].values())) \
        if list((root / "reports").glob("*/verdict.json")) else None
    return {"exit": done.returncode, "out": done.stdout, "err": done.stderr, "commits": commits, "root": root,
            "report": report}


def test_the_time_only_slowdown_is_confirmed_at_its_commit_and_nothing_else_is_flagged(tracked):
    name = {sha: key for key, sha in tracked["commits"].items()}
    shown = f"exit {tracked['exit']}\n{tracked['out']}\n{tracked['err'][-3000:]}"
    assert tracked["exit"] == 1, shown
    regressions = tracked["report"]["regressions"]
    confirmed = [r for r in regressions if r.get("confirmation") == "confirmed"]
    assert any(r["benchmark"] == "bench_engine.PathThroughput.track_ns_per_pixel_step" and "'P1'" in r["params"]
               and name.get(r["first_bad"]) == "slow" and r["ratio"] > 1.05 for r in confirmed), shown
    flagged = [r for r in regressions if r.get("confirmation") in (None, "confirmed")]
    assert {name.get(r["first_bad"]) for r in flagged} == {"slow"}, shown  # no docs-only commit, ever
    assert not [r for r in flagged if r["family"] in ("cost", "parity", "determinism", "reproducibility")], shown
    assert not [r for r in regressions if r.get("confirmation") == "undecided"], shown

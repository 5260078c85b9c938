"""A side: a commit's core with this checkout's suite over it, run in a fresh interpreter; measuring there:
1 - r against nanoBragg's image, a render in a fresh process."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

from detsim.track.base.fresh import PINNED, pinned_env, run
from detsim.track.base.golden import find_case, golden_dir
from detsim.track.explain import sides
from detsim.track.explain.sides import SideError, commits_between, image_at, one_minus_r, prepare_side, \
    run_side_job, subject

from explain_history import git

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def tiny_repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """Three commits whose detsim/__init__.py say which they are (and an old detsim/track of their own)."""
    repo = tmp_path / "repo"
    (repo / "detsim" / "track").mkdir(parents=True)
    git(tmp_path, "init", "-q", str(repo))
    shas = []
    for tag in ("first", "second", "third"):
        (repo / "detsim" / "__init__.py").write_text(f"WHICH = {tag!r}\n")
        (repo / "detsim" / "track" / "__init__.py").write_text("OLD_SUITE = True\n")
        git(repo, "add", "detsim")
        git(repo, "commit", "-q", "-m", f"commit {tag}")
        shas.append(git(repo, "rev-parse", "HEAD"))
    return repo, shas


def test_a_side_runs_the_commits_core_with_this_checkouts_suite(tiny_repo, tmp_path):
    repo, shas = tiny_repo
    side = prepare_side(repo, shas[0], tmp_path / "side", python=sys.executable)
    assert side.commit == shas[0]
    code = ("import detsim, detsim.track, detsim.track.explain.sides as s; "
            "print(detsim.WHICH, hasattr(detsim.track, 'OLD_SUITE'), s.__file__)")
    done = run([side.python, "-P", "-c", code], env=pinned_env(side.package_dir), cwd=tmp_path).check("python")
    which, old_suite, where = done.stdout.split()
    assert (which, old_suite) == ("first", "False")
    assert Path(where).resolve().is_relative_to((tmp_path / "side").resolve())


def test_a_side_job_is_pinned_and_a_failing_one_is_one_line_naming_the_commit(tiny_repo, tmp_path, monkeypatch):
    repo, shas = tiny_repo
    side = prepare_side(repo, shas[1], tmp_path / "side", python=sys.executable)
    with pytest.raises(SideError, match=f"^{shas[1][:8]}: image P1@8 exited 1: [A-Za-z]*Error: "):
        run_side_job(side, {"job": "image", "workload": "P1@8", "out": str(tmp_path / "i.npy")}, cwd=tmp_path)
    asked = {}
    monkeypatch.setattr(sides, "run_job", lambda entry, job, **how: asked.update(how, entry=entry))
    run_side_job(side, {"job": "ops", "workload": "c02"}, cwd=tmp_path, timeout=5)
    assert asked["entry"] == sides.SIDE_JOB and asked["path"] == (side.package_dir,) and asked["env"] == PINNED
    assert (asked["python"], asked["cwd"], asked["timeout"]) == (sys.executable, tmp_path, 5)


def test_commits_between_are_oldest_first_and_end_at_the_first_bad(tiny_repo):
    repo, shas = tiny_repo
    assert commits_between(repo, shas[0], shas[2]) == shas[1:]
    assert commits_between(repo, shas[1], shas[2]) == shas[2:]
    assert subject(repo, shas[2]) == "commit third"
    with pytest.raises(SideError, match="not a descendant"):
        commits_between(repo, shas[2], shas[0])


def test_one_minus_r_is_zero_for_nanobraggs_own_image_and_rises_with_a_change():
    golden = golden_dir(ROOT)
    reference = find_case("c02", golden).reference().astype(np.float64)
    assert abs(one_minus_r(reference, "c02", golden)) < 1e-12
    changed = reference.copy()
    changed[0, 0] += reference.max()
    assert one_minus_r(changed, "c02", golden) > 1e-6


def test_a_side_renders_in_its_own_process(tmp_path):
    side = prepare_side(ROOT, "HEAD", tmp_path / "side", python=sys.executable)
    image = image_at(side, "P1@8", golden_dir(ROOT), tmp_path / "i.npy", cwd=tmp_path)
    assert image.shape == (8, 8) and (tmp_path / "i.npy").is_file()

"""A side: a commit's core with this checkout's suite over it, run in a fresh interpreter."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from detsim.track.explain.sides import SideError, commits_between, prepare_side, run_python, subject

from explain_history import git


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
    done = run_python(side, ["-c", code], cwd=tmp_path)
    which, old_suite, where = done.stdout.split()
    assert (which, old_suite) == ("first", "False")
    assert Path(where).resolve().is_relative_to((tmp_path / "side").resolve())


def test_a_failing_side_process_is_one_line_naming_the_commit(tiny_repo, tmp_path):
    repo, shas = tiny_repo
    side = prepare_side(repo, shas[1], tmp_path / "side", python=sys.executable)
    with pytest.raises(SideError, match=f"^{shas[1][:8]}: .*exited 3: SystemExit"):
        run_python(side, ["-c", "import sys; sys.stderr.write('SystemExit\\n'); sys.exit(3)"], cwd=tmp_path)


def test_commits_between_are_oldest_first_and_end_at_the_first_bad(tiny_repo):
    repo, shas = tiny_repo
    assert commits_between(repo, shas[0], shas[2]) == shas[1:]
    assert commits_between(repo, shas[1], shas[2]) == shas[2:]
    assert subject(repo, shas[2]) == "commit third"
    with pytest.raises(SideError, match="not a descendant"):
        commits_between(repo, shas[2], shas[0])


def test_a_side_process_past_its_time_limit_is_one_line(tiny_repo, tmp_path):
    repo, shas = tiny_repo
    side = prepare_side(repo, shas[0], tmp_path / "side", python=sys.executable)
    with pytest.raises(SideError, match=r"ran past 1 s$"):
        run_python(side, ["-c", "import time; time.sleep(30)"], cwd=tmp_path, timeout=1)

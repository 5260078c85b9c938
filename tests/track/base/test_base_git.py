"""detsim.track.base.git: read-only git in a folder, its output, its one-line error, no index lock taken;
exporting another commit's package and importing it in a fresh interpreter.
"""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from detsim.track.base.fresh import pinned_env, run
from detsim.track.base.git import (
    CommitError, GitError, benchmark_python, export_package, git, output, package_tree, query, resolve,
)


def _repo(path: Path) -> str:
    """A repository with one committed file; its commit."""
    path.mkdir(parents=True, exist_ok=True)
    run = lambda *args: subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=path,
                                       check=True, capture_output=True, text=True).stdout.strip()
    run("init", "-q")
    (path / "f.txt").write_text("one\n")
    run("add", "f.txt")
    run("commit", "-q", "-m", "first")
    return run("rev-parse", "HEAD")


def test_git_answers_in_its_folder_as_text_or_bytes(tmp_path):
    sha = _repo(tmp_path / "repo")
    assert git(tmp_path / "repo", "rev-parse", "HEAD") == sha
    assert output(tmp_path / "repo", "show", "HEAD:f.txt") == b"one\n"
    assert query(tmp_path / "repo", "log", "-1", "--format=%s") == "first"


def test_a_failure_is_one_line_naming_the_folder_and_query_says_none(tmp_path):
    with pytest.raises(GitError) as raised:
        git(tmp_path, "rev-parse", "HEAD")
    message = str(raised.value)
    assert message.startswith("git rev-parse exited 128: fatal: not a git repository") and "\n" not in message
    assert message.endswith(f"(in {tmp_path})")
    assert query(tmp_path, "rev-parse", "HEAD") is None


def test_a_missing_git_is_a_git_error(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(GitError, match="git status could not start"):
        git(tmp_path, "status")
    assert query(tmp_path, "status") is None


def test_a_status_query_never_rewrites_the_index(tmp_path):
    """Plain ``git status`` refreshes stale stat data and writes the index (through ``index.lock``)."""
    repo = tmp_path / "repo"
    _repo(repo)
    index = repo / ".git" / "index"
    before = index.stat().st_mtime_ns
    time.sleep(0.01)
    os.utime(repo / "f.txt")  # same content, newer stat data: a refresh would rewrite the index
    assert git(repo, "status", "--porcelain") == ""
    assert index.stat().st_mtime_ns == before and not (repo / ".git" / "index.lock").exists()
    subprocess.run(["git", "status", "--porcelain"], cwd=repo, check=True, capture_output=True)
    assert index.stat().st_mtime_ns != before  # what the option prevents


# ---- another commit's package

ROOT = Path(__file__).resolve().parents[3]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def tiny_repo(tmp_path: Path) -> Path:
    """Two commits whose detsim/__init__.py say which commit they are."""
    repo = tmp_path / "repo"
    (repo / "detsim").mkdir(parents=True)
    _git(tmp_path, "init", "-q", str(repo))
    for tag in ("first", "second"):
        (repo / "detsim" / "__init__.py").write_text(f"WHICH = {tag!r}\n")
        _git(repo, "add", "detsim")
        _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", tag)
    return repo


def test_a_commit_exports_its_own_package_and_a_fresh_interpreter_imports_it(tiny_repo, tmp_path):
    dest = export_package(tiny_repo, "HEAD~1", tmp_path / "old")
    assert (dest / "detsim" / "__init__.py").read_text() == "WHICH = 'first'\n"
    done = run([benchmark_python(ROOT), "-P", "-c", "import detsim; print(detsim.WHICH, detsim.__file__)"],
               env=pinned_env(dest), cwd=ROOT).check("python")
    which, path = done.stdout.split()
    assert which == "first"
    assert Path(path).resolve().is_relative_to(dest.resolve())


def test_resolve_names_the_commit_and_refuses_what_is_not_one(tiny_repo):
    assert resolve(tiny_repo, "HEAD") == _git(tiny_repo, "rev-parse", "HEAD")
    with pytest.raises(CommitError, match="nope"):
        resolve(tiny_repo, "nope")


def test_an_existing_destination_is_never_written_into(tiny_repo, tmp_path):
    (tmp_path / "taken").mkdir()
    with pytest.raises(FileExistsError):
        export_package(tiny_repo, "HEAD", tmp_path / "taken")


def test_a_commit_without_the_package_is_one_line_naming_it(tmp_path):
    repo = tmp_path / "docs-only"
    repo.mkdir()
    _git(repo, "init", "-q")
    (repo / "README").write_text("no package here\n")
    _git(repo, "add", "README")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "docs")
    sha = _git(repo, "rev-parse", "HEAD")
    with pytest.raises(CommitError, match=rf"^{sha[:8]}: has no detsim/ package \(git archive exited 128: .*detsim"):
        export_package(repo, "HEAD", tmp_path / "out")


def test_the_package_tree_names_the_code_a_commit_runs(tiny_repo):
    first, second = package_tree(tiny_repo, "HEAD~1"), package_tree(tiny_repo, "HEAD")
    assert first and second and first != second
    (tiny_repo / "README").write_text("docs only\n")
    _git(tiny_repo, "add", "README")
    _git(tiny_repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "docs")
    assert package_tree(tiny_repo, "HEAD") == second
    assert package_tree(tiny_repo, "nope") is None

"""detsim.track.base.git: read-only git in a folder, its output, its one-line error, no index lock taken."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from detsim.track.base.git import GitError, git, output, query


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

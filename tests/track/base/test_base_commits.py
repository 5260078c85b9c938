"""Exporting another commit's package and importing it in a fresh interpreter."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from detsim.track.base.commits import CommitError, benchmark_python, export_package, package_tree, resolve
from detsim.track.base.fresh import pinned_env, run

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

"""detsim.track.target.build: a commit installed into a throwaway venv layered over this one (numpy and the
build backend found, never installed), its installed files fingerprinted; a commit that does not build is
one line naming it; the repository is only read."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from detsim.track.target.build import Builder, BuildError
from detsim.track.target.spec import TargetSpec
from planted_history import commit, git

PYPROJECT = ('[build-system]\nrequires = ["setuptools>=68"]\nbuild-backend = "setuptools.build_meta"\n'
             '[project]\nname = "tinyport"\nversion = "1.0"\n[project.scripts]\ntiny-nb = "tinyport:main"\n'
             '[tool.setuptools]\npackages = ["tinyport"]\n')


@pytest.fixture(scope="module")
def repo(tmp_path_factory) -> tuple[Path, dict]:
    root = tmp_path_factory.mktemp("target") / "tinyport"
    (root / "tinyport").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "pyproject.toml").write_text(PYPROJECT)
    (root / "tinyport" / "__init__.py").write_text("import numpy\ndef main():\n    print(numpy.float32(1) + 1)\n")
    shas = {"v1": commit(root, "v1")}
    (root / "NOTES.md").write_text("a plan\n")
    shas["docs"] = commit(root, "docs")
    (root / "pyproject.toml").write_text("[project\n")
    shas["broken"] = commit(root, "broken pyproject")
    return root, shas


def test_a_commit_installs_with_its_command_and_the_heavy_layer(repo, tmp_path):
    root, shas = repo
    builder = Builder(TargetSpec("tinyport", root, ("tiny-nb",)), tmp_path)
    one = builder.install(shas["v1"])
    ran = subprocess.run([str(one.bin_dir / "tiny-nb")], capture_output=True, text=True, cwd=tmp_path)
    assert (ran.returncode, ran.stdout) == (0, "2.0\n")  # numpy came from this interpreter's site-packages
    assert not any(p.name.startswith("numpy") for p in one.site_packages.iterdir())
    docs = builder.install(shas["docs"])  # another tree, the same installed files (differing ones: test_target_probing)
    assert one.fingerprint == docs.fingerprint and one.commit == shas["v1"] and one.bin_dir != docs.bin_dir
    builder.discard(one)
    assert not one.bin_dir.exists() and docs.bin_dir.exists()
    assert git(root, "status", "--porcelain") == "" and git(root, "worktree", "list").count("\n") == 0


def test_a_commit_that_does_not_build_or_lacks_its_paths_is_one_line(repo, tmp_path):
    root, shas = repo
    with pytest.raises(BuildError) as caught:
        Builder(TargetSpec("tinyport", root, ("tiny-nb",)), tmp_path).install(shas["broken"])
    assert str(caught.value).startswith(f"{shas['broken'][:8]}: does not install") and "\n" not in str(caught.value)
    with pytest.raises(BuildError, match=f"^{shas['v1'][:8]}: cannot export src"):
        Builder(TargetSpec("tinyport", root, ("tiny-nb",), export=("src",)), tmp_path).install(shas["v1"])
    with pytest.raises(BuildError, match="not a commit"):
        Builder(TargetSpec("tinyport", root, ("tiny-nb",)), tmp_path).install("no-such-rev")


def test_blobs_missing_outside_the_exported_paths_do_not_stop_the_export(tmp_path):
    """A partial copy of a repository (a mirror without some evidence files): the package still exports."""
    root = tmp_path / "partial"
    (root / "src" / "tinyport").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "pyproject.toml").write_text(PYPROJECT)
    (root / "src" / "tinyport" / "__init__.py").write_text("def main():\n    print('ran')\n")
    (root / "evidence.bin").write_text("large\n")
    sha = commit(root, "package and evidence")
    blob = git(root, "rev-parse", f"{sha}:evidence.bin")
    (root / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    builder = Builder(TargetSpec("partial", root, ("x",), export=("src",), install="src"), tmp_path / "scratch")
    installed = builder.install(sha)
    assert subprocess.run([str(installed.bin_dir / "tiny-nb")], capture_output=True, text=True).stdout == "ran\n"
    with pytest.raises(BuildError, match="cannot export its tree"):
        Builder(TargetSpec("partial", root, ("x",)), tmp_path / "scratch2").install(sha)
    assert not (tmp_path / "scratch2" / sha[:12]).exists()  # a failed build leaves nothing behind

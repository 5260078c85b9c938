"""detsim.track.target.build: a commit installed into a throwaway venv layered over this one (numpy and the
build backend found, never installed), its installed files fingerprinted; a commit that does not build is
one line naming it; the repository is only read.

Also installed files fingerprinted byte for byte (pip's bookkeeping and byte code
aside), the source shortcut, and the table that hands a measured commit's results to its twins."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from detsim.track.target.build import BuildError, Builder, Reuse, installed_fingerprint, source_key
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


@pytest.mark.slow  # the slow record and bisect tests install every planted commit this way
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


def _install(site: Path, code: str, where: str) -> Path:
    (site / "pkg" / "__pycache__").mkdir(parents=True)
    (site / "pkg" / "__init__.py").write_text(code)
    (site / "pkg" / "__pycache__" / "__init__.cpython-311.pyc").write_bytes(where.encode())
    info = site / "pkg-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Name: pkg\n")
    (info / "direct_url.json").write_text(f'{{"url": "file://{where}"}}')
    (info / "RECORD").write_text(f"{where}\n")
    return site


def test_the_same_files_installed_from_two_places_have_one_fingerprint(tmp_path):
    one = _install(tmp_path / "a", "X = 1\n", "/tmp/build-a")
    two = _install(tmp_path / "b", "X = 1\n", "/tmp/build-b")
    (two / "layer.pth").write_text("/elsewhere\n")
    assert installed_fingerprint(one) == installed_fingerprint(two, ignore=("layer.pth",))
    assert installed_fingerprint(one) != installed_fingerprint(two)  # unless told, every file counts


def test_one_changed_byte_or_an_added_file_changes_the_fingerprint(tmp_path):
    base = installed_fingerprint(_install(tmp_path / "a", "X = 1\n", "/a"))
    assert installed_fingerprint(_install(tmp_path / "b", "X = 2\n", "/a")) != base
    extra = _install(tmp_path / "c", "X = 1\n", "/a")
    (extra / "pkg" / "data.txt").write_text("")
    assert installed_fingerprint(extra) != base


def test_the_source_key_follows_the_exported_paths_only(tmp_path):
    root = tmp_path / "repo"
    (root / "src").mkdir(parents=True)
    git(root, "init", "-q", "-b", "main")
    (root / "src" / "m.py").write_text("A = 1\n")
    first = commit(root, "package")
    (root / "notes.md").write_text("plans\n")
    docs = commit(root, "docs")
    (root / "src" / "m.py").write_text("A = 2\n")
    code = commit(root, "code")
    key = source_key(root, first, ["src"])
    assert key and key == source_key(root, docs, ["src"]) != source_key(root, code, ["src"])
    assert source_key(root, first, None) is None and source_key(root, first, ["src", "absent"]) is None


def test_the_table_answers_from_the_first_key_it_knows_and_counts_reuses():
    table: Reuse[str] = Reuse()
    assert table.get("f1", None) is None and table.reused == 0
    table.put("c1", "results of c1", "f1", None, "s1")
    table.put("c2", "results of c2", "f1")  # the first measurement under a key stays
    assert table.get(None, "f1") == ("c1", "results of c1") and table.get("s1") == ("c1", "results of c1")
    assert table.reused == 2

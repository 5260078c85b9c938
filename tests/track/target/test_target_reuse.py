"""detsim.track.target.reuse: installed files fingerprinted byte for byte (pip's bookkeeping and byte code
aside), the source shortcut, and the table that hands a measured commit's results to its twins."""

from __future__ import annotations

from pathlib import Path

from detsim.track.target.reuse import Reuse, installed_fingerprint, source_key
from planted_history import commit, git


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

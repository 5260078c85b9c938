"""sha256.txt: written over every other file of a bundle, and every later change to them found."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess

import pytest

from detsim.track.evidence import manifest


@pytest.fixture
def bundle(tmp_path):
    folder = tmp_path / "bundle"
    (folder / "retime").mkdir(parents=True)
    (folder / "results.json").write_text("{}\n")
    (folder / "summary.md").write_text("# Evidence\n")
    (folder / "retime" / "cpu-1.log").write_bytes(b"\x00binary\xff")
    manifest.write_manifest(folder)
    return folder


def test_every_other_file_is_listed_in_sha256sum_format(bundle):
    lines = (bundle / manifest.MANIFEST).read_text().splitlines()
    assert [line.split("  ", 1)[1] for line in lines] == ["results.json", "retime/cpu-1.log", "summary.md"]
    digest = hashlib.sha256(b"\x00binary\xff").hexdigest()
    assert f"{digest}  retime/cpu-1.log" in lines
    assert manifest.listed_count(bundle) == 3
    assert manifest.check_bundle(bundle) == []
    if shutil.which("sha256sum"):
        assert subprocess.run(["sha256sum", "--quiet", "-c", manifest.MANIFEST], cwd=bundle).returncode == 0


def test_check_names_modified_missing_and_extra_files(bundle):
    (bundle / "summary.md").write_text("# Evidence, edited\n")
    (bundle / "retime" / "cpu-1.log").unlink()
    (bundle / "retime" / "cpu-2.log").write_text("added later\n")
    assert manifest.check_bundle(bundle) == ["missing: retime/cpu-1.log", "modified: summary.md",
                                             "extra: retime/cpu-2.log"]


def test_check_reads_binary_mode_lines_and_names_malformed_ones(bundle):
    listing = bundle / manifest.MANIFEST
    text = listing.read_text().replace("  results.json", " *results.json")  # sha256sum -b writes this
    listing.write_text(text + "not a digest line\n")
    assert manifest.check_bundle(bundle) == ["malformed: sha256.txt line 4"]


def test_a_folder_without_a_listing_is_not_a_bundle(tmp_path):
    assert manifest.check_bundle(tmp_path) == ["missing: sha256.txt"]


def _unreadable(monkeypatch, *names: str) -> None:
    """Reading these files fails as under mode 000 for a user other than root (root reads them anyway)."""
    real = manifest.sha256_file

    def sha256_file(path):
        if path.name in names:
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(manifest, "sha256_file", sha256_file)


def test_a_file_that_cannot_be_read_is_named_not_a_traceback(bundle, monkeypatch):
    _unreadable(monkeypatch, "summary.md")
    assert manifest.check_bundle(bundle) == ["unreadable: summary.md (Permission denied)"]


def test_an_unreadable_listing_is_named(bundle, monkeypatch):
    def denied(self, *a, **k):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(manifest.Path, "read_text", denied)
    assert manifest.check_bundle(bundle) == ["unreadable: sha256.txt (Permission denied)"]


def test_a_listed_name_outside_the_bundle_is_malformed_and_not_read(bundle, tmp_path):
    outside = tmp_path / "secret.txt"
    outside.write_text("x")
    digest = hashlib.sha256(b"x").hexdigest()
    listing = bundle / manifest.MANIFEST
    listing.write_text(listing.read_text() + f"{digest}  ../secret.txt\n{digest}  {outside}\n")
    assert manifest.check_bundle(bundle) == ["malformed: sha256.txt line 4", "malformed: sha256.txt line 5"]


def test_a_listed_file_that_is_not_a_regular_file_is_unreadable_and_never_opened(bundle):
    (bundle / "summary.md").unlink()
    (bundle / "summary.md").mkdir()
    (bundle / "results.json").unlink()
    os.mkfifo(bundle / "results.json")  # opening it would block until a writer came
    (bundle / "retime" / "cpu-1.log").unlink()
    (bundle / "retime" / "cpu-1.log").symlink_to(bundle / "gone")
    assert manifest.check_bundle(bundle) == ["unreadable: results.json (a FIFO (named pipe))",
                                             "unreadable: retime/cpu-1.log (a symlink to nothing)",
                                             "unreadable: summary.md (a directory)"]


def test_a_listing_that_is_not_a_regular_file_is_unreadable(bundle):
    (bundle / manifest.MANIFEST).unlink()
    (bundle / manifest.MANIFEST).mkdir()
    assert manifest.check_bundle(bundle) == ["unreadable: sha256.txt (a directory)"]

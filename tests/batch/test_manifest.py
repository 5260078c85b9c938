"""The manifest: entries written whole and read back, a damaged one refused with its line."""

from __future__ import annotations

import pytest

from detsim.batch import manifest
from detsim.batch.frames import BatchInputError
from detsim.batch.manifest import Entry, FrameStatus, OutputFile
from detsim.fileio.digest import sha256_file


def test_entries_round_trip_in_name_order_and_no_temporary_file_is_left(tmp_path):
    ok = Entry("line0002", "l.txt:2", "-detpixels 16", FrameStatus.OK, 0.5, 1,
               (OutputFile("-floatfile", "line0002/floatimage.bin", "ab" * 32),))
    bad = Entry("line0001", "l.txt:1", "-distance -5", FrameStatus.FAILED, 0.1, 2, reason="-distance must be > 0")
    late = Entry("line10000", "l.txt:10000", "-detpixels 16", FrameStatus.OK, 0.5, 1, ())
    manifest.write(str(tmp_path), {"line10000": late, "line0002": ok, "line0001": bad})
    assert manifest.read(str(tmp_path)) == {"line0001": bad, "line0002": ok, "line10000": late}
    lines = (tmp_path / manifest.MANIFEST_NAME).read_text().splitlines()
    assert [line.split('"')[3] for line in lines] == ["line0001", "line0002", "line10000"]
    assert sorted(p.name for p in tmp_path.iterdir()) == [manifest.MANIFEST_NAME]


def test_no_manifest_is_no_entry_and_a_damaged_one_names_its_line(tmp_path):
    assert manifest.read(str(tmp_path)) == {}
    (tmp_path / manifest.MANIFEST_NAME).write_text('{"name": "line0001"}\n')
    with pytest.raises(BatchInputError, match=f"{manifest.MANIFEST_NAME}:1: not a manifest entry"):
        manifest.read(str(tmp_path))


def test_sha256_is_the_files_digest(tmp_path):
    (tmp_path / "f").write_bytes(b"abc")
    assert sha256_file(str(tmp_path / "f")) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"

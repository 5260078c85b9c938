"""Tests for detsim.fileio.safe_write: output paths checked before the work, atomic replacement, nothing clobbered.

The writers of :mod:`detsim.fileio.images` and :mod:`detsim.fileio.smv` go through these; tests/fileio/test_images.py
checks them on real image files.
"""

import errno
import os
import re

import pytest

from detsim.fileio import safe_write
from detsim.fileio.safe_write import OutputError, StagedOutputs, atomic_write, check_output_path, check_outputs, file_identity


def test_atomic_write_creates_the_file_with_what_was_written(tmp_path):
    path = tmp_path / "out.bin"
    atomic_write(path, lambda handle: handle.write(b"payload"))
    assert path.read_bytes() == b"payload"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_a_failing_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    path = tmp_path / "out.bin"
    path.write_bytes(b"old")

    def half_then_fail(handle):
        handle.write(b"new but incomplete")
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        atomic_write(path, half_then_fail)
    assert path.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin"]


def test_atomic_write_refuses_an_empty_name_before_calling_the_writer(tmp_path):
    called = []
    with pytest.raises(OutputError, match="empty"):
        atomic_write("", lambda handle: called.append(handle))
    assert called == []


@pytest.mark.parametrize("name,fragment", [
    ("", "empty"),
    ("nodir/out.bin", "does not exist"),
    ("adir", "is a directory"),
    ("afile/out.bin", "is not a directory"),
])
def test_check_output_path_names_the_path_in_one_line(tmp_path, monkeypatch, name, fragment):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_bytes(b"")
    with pytest.raises(OutputError, match=fragment) as info:
        check_output_path(name, "-floatfile")
    assert "-floatfile" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write into a read-only directory")
def test_check_output_path_refuses_a_read_only_directory(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with pytest.raises(OutputError, match="not writable"):
            check_output_path(str(locked / "out.bin"), "-intfile")
    finally:
        locked.chmod(0o755)


@pytest.mark.parametrize("name", ["afile/", "newdir/", "afile/.", "adir/..", "adir/"])
def test_a_path_ending_in_a_slash_names_a_directory_and_is_refused(tmp_path, monkeypatch, name):
    # os.path.realpath drops the slash: 'afile/' would replace afile and 'newdir/' create a file newdir
    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_bytes(b"keep")
    with pytest.raises(OutputError, match=f"^-floatfile {re.escape(name)}: names a directory") as info:
        check_output_path(name, "-floatfile")
    assert "\n" not in str(info.value)
    with pytest.raises(OutputError):
        atomic_write(name, lambda handle: handle.write(b"new"))
    assert (tmp_path / "afile").read_bytes() == b"keep" and sorted(os.listdir(tmp_path)) == ["adir", "afile"]


def test_file_identity_follows_symlinks_and_sees_hard_links(tmp_path):
    (tmp_path / "a").write_bytes(b"a")
    os.link(tmp_path / "a", tmp_path / "hard")
    (tmp_path / "soft").symlink_to("a")
    assert file_identity(tmp_path / "a") == file_identity(tmp_path / "hard") == file_identity(tmp_path / "soft")
    assert file_identity(tmp_path / "missing") is None


@pytest.mark.parametrize("output", ["in.hkl", "./in.hkl", "hard.hkl", "soft.hkl"])
def test_an_output_naming_an_input_file_is_refused_naming_both(tmp_path, monkeypatch, output):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "in.hkl").write_text("0 0 0 1\n")
    os.link("in.hkl", "hard.hkl")
    os.symlink("in.hkl", "soft.hkl")
    message = f"-floatfile {output} is the -hkl input file in.hkl; an output may not overwrite an input"
    with pytest.raises(OutputError, match=f"^{re.escape(message)}$"):
        check_outputs([("-intfile", "out.img"), ("-floatfile", output)], [("-mat", "A.mat"), ("-hkl", "in.hkl")])


def test_two_outputs_that_are_hard_links_of_one_file_are_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "one.img").write_bytes(b"x")
    os.link("one.img", "other.img")
    with pytest.raises(OutputError, match="^-noisefile other.img and -intfile one.img name the same file"):
        check_outputs([("-intfile", "one.img"), ("-noisefile", "other.img")])
    check_outputs([("-intfile", "one.img"), ("-noisefile", "new.img")])  # distinct files are fine


def _full(handle):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_staged_outputs_replace_nothing_unless_every_output_is_written(tmp_path):
    first, second = tmp_path / "float.bin", tmp_path / "int.img"
    first.write_bytes(b"old float")
    with pytest.raises(OSError) as info:
        with StagedOutputs() as staged:
            staged.add(first, lambda handle: handle.write(b"new float"))
            staged.add(second, _full)
    assert info.value.errno == errno.ENOSPC and info.value.filename == str(second)  # the output, not a temporary
    assert first.read_bytes() == b"old float" and sorted(os.listdir(tmp_path)) == ["float.bin"]


def test_a_failed_rename_names_the_output_and_removes_every_temporary(tmp_path, monkeypatch):
    first, second = tmp_path / "float.bin", tmp_path / "int.img"
    first.write_bytes(b"old float")

    def no_rename(src, dst):
        raise OSError(errno.EXDEV, "Invalid cross-device link", str(src), str(dst))

    monkeypatch.setattr(safe_write.os, "replace", no_rename)
    with pytest.raises(OSError) as info:
        with StagedOutputs() as staged:
            staged.add(first, lambda handle: handle.write(b"new float"))
            staged.add(second, lambda handle: handle.write(b"new int"))
    assert info.value.filename == str(first) and info.value.filename2 is None
    assert first.read_bytes() == b"old float" and sorted(os.listdir(tmp_path)) == ["float.bin"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_device_among_the_outputs_replaces_no_file(tmp_path):
    path = tmp_path / "float.bin"
    path.write_bytes(b"old float")
    with pytest.raises(OSError) as info:
        with StagedOutputs() as staged:
            staged.add(path, lambda handle: handle.write(b"new float"))
            staged.add("/dev/full", lambda handle: handle.write(b"x" * 100000))
    assert info.value.errno == errno.ENOSPC and info.value.filename == "/dev/full"
    assert path.read_bytes() == b"old float" and os.listdir(tmp_path) == ["float.bin"]

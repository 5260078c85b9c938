"""Input files read within bounds (detsim.fileio.bounded_read): regular files only, lines under a cap."""

from __future__ import annotations

import io
import os
import re
import socket

import pytest

from detsim.fileio.bounded_read import DIRECTORY, MAX_LINE_BYTES, MISSING, REGULAR_FILE, describe, open_regular, read_lines, read_prefix, what_is


class Refused(ValueError):
    pass


def test_describe_says_what_a_path_is(tmp_path):
    (tmp_path / "adir").mkdir()
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "full").write_bytes(b"x")
    os.mkfifo(tmp_path / "fifo")
    assert describe(tmp_path / "adir") == "a directory"
    assert describe(tmp_path / "empty") == "an empty file"
    assert describe(tmp_path / "full") is None
    assert describe(tmp_path / "fifo") == "a FIFO (named pipe)"
    assert describe(tmp_path / "missing") == "no such file"
    if os.path.exists("/dev/zero"):
        assert describe("/dev/zero") == "a character device"


@pytest.mark.parametrize("name,kind", [("adir", "a directory"), ("fifo", "a FIFO (named pipe)")])
def test_open_regular_refuses_anything_but_a_regular_file_without_blocking(tmp_path, name, kind):
    (tmp_path / "adir").mkdir()
    os.mkfifo(tmp_path / "fifo")  # no writer: a blocking open would wait forever
    with pytest.raises(Refused, match=re.escape(f"{name}: is {kind}; the HKL file must be a regular file")):
        open_regular(tmp_path / name, "HKL file", Refused)


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_an_endless_device_is_refused_before_it_is_read():
    with pytest.raises(Refused, match="^/dev/zero: is a character device; the matrix file must be a regular file$"):
        read_prefix("/dev/zero", "matrix file", 4096, Refused)


def test_a_missing_file_cannot_be_read(tmp_path):
    with pytest.raises(Refused, match=r"missing: cannot read the source file \(No such file or directory\)$"):
        open_regular(tmp_path / "missing", "source file", Refused)


def test_read_prefix_says_whether_the_file_goes_on(tmp_path):
    (tmp_path / "f").write_bytes(b"0123456789")
    assert read_prefix(tmp_path / "f", "matrix file", 4, Refused) == (b"0123", True)
    assert read_prefix(tmp_path / "f", "matrix file", 10, Refused) == (b"0123456789", False)


def test_read_lines_numbers_lines_and_says_which_ended():
    lines = list(read_lines(io.BytesIO(b"a\n\nb\r\nc"), "f", "HKL file", Refused))
    assert lines == [(1, b"a", True), (2, b"", True), (3, b"b\r", True), (4, b"c", False)]


def test_a_line_longer_than_the_cap_is_refused_without_reading_it_whole():
    class Endless(io.RawIOBase):  # like a file of zeros without a newline, of any size
        read_bytes = 0

        def readable(self):
            return True

        def readinto(self, buffer):
            buffer[:] = b"0" * len(buffer)
            Endless.read_bytes += len(buffer)
            return len(buffer)

    handle = io.BufferedReader(Endless())
    with pytest.raises(Refused, match=f"^f line 1: longer than {MAX_LINE_BYTES} bytes, too long for a line of the HKL"):
        list(read_lines(handle, "f", "HKL file", Refused))
    assert Endless.read_bytes < 4 * MAX_LINE_BYTES


def test_a_line_of_exactly_the_cap_is_read():
    line = b"1" * MAX_LINE_BYTES
    assert list(read_lines(io.BytesIO(line + b"\n" + line), "f", "x", Refused)) == [(1, line, True), (2, line, False)]


def test_what_is_names_each_kind_of_path(tmp_path):
    (tmp_path / "file").write_text("x")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "dangling").symlink_to(tmp_path / "gone")
    (tmp_path / "to-dir").symlink_to(tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "sock"))
        assert what_is(tmp_path / "sock") == "a socket"
    assert what_is(tmp_path / "file") == REGULAR_FILE
    assert what_is(tmp_path) == DIRECTORY and what_is(tmp_path / "to-dir") == DIRECTORY
    assert what_is(tmp_path / "fifo") == "a FIFO (named pipe)"
    assert what_is("/dev/null") == "a character device"
    assert what_is(tmp_path / "dangling") == "a symlink to nothing"
    assert what_is(tmp_path / "nope") == MISSING
    assert what_is(tmp_path / "file" / "under") == MISSING
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert what_is(tmp_path / "loop") == "unreachable (Too many levels of symbolic links)"

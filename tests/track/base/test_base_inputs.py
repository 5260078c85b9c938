"""detsim.track.base.inputs: counts refused at parse time, and what is at a path, in words."""

from __future__ import annotations

import argparse
import os
import socket

import pytest

from detsim.track.base.inputs import DIRECTORY, MISSING, REGULAR_FILE, count, positive_int, what_is


@pytest.mark.parametrize("check, text, value", [(positive_int, "1", 1), (positive_int, "64", 64),
                                                (count, "0", 0), (count, "7", 7)])
def test_counts_in_range_are_whole_numbers(check, text, value):
    assert check(text) == value


@pytest.mark.parametrize("check, text, why", [
    (positive_int, "0", "must be 1 or more, got 0"), (positive_int, "-3", "must be 1 or more, got -3"),
    (count, "-1", "must be 0 or more, got -1"), (positive_int, "2.5", "'2.5' is not a whole number"),
    (count, "many", "'many' is not a whole number"),
])
def test_counts_out_of_range_are_refused_with_the_reason(check, text, why):
    with pytest.raises(argparse.ArgumentTypeError, match=f"^{why}$"):
        check(text)


def test_a_bad_count_is_a_parse_error_naming_the_option(capsys):
    parser = argparse.ArgumentParser(prog="p")
    parser.add_argument("--repeats", type=positive_int)
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["--repeats", "0"])
    assert stop.value.code == 2
    assert "argument --repeats: must be 1 or more, got 0" in capsys.readouterr().err


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
    assert what_is(tmp_path / "fifo") == "a FIFO"
    assert what_is("/dev/null") == "a character device"
    assert what_is(tmp_path / "dangling") == "a symlink to nothing"
    assert what_is(tmp_path / "nope") == MISSING
    assert what_is(tmp_path / "file" / "under") == MISSING
    (tmp_path / "loop").symlink_to(tmp_path / "loop")
    assert what_is(tmp_path / "loop") == "unreachable (Too many levels of symbolic links)"

"""detsim.track.base.output: atomic files and folders, strict JSON, the output-option convention."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import stat
from pathlib import Path

import pytest

from detsim.track.base.output import (
    REPORTS, OutputError, add_json_option, add_report_options, atomic_directory, atomic_write_bytes,
    atomic_write_text, check_new_folder, check_output_file, is_report_of, json_text, report_folder, utc_stamp,
    write_json,
)


@pytest.fixture
def umask_022():
    before = os.umask(0o022)
    yield
    os.umask(before)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_utc_stamp_is_a_folder_name():
    assert utc_stamp(dt.datetime(2026, 11, 22, 2, 9, 11, tzinfo=dt.timezone.utc)) == "20261122T020911Z"
    assert len(utc_stamp()) == 16 and utc_stamp().endswith("Z")


def test_atomic_writes_create_folders_replace_whole_files_and_are_0644(tmp_path, umask_022):
    path = tmp_path / "a" / "b" / "file.txt"
    atomic_write_text(path, "first")
    atomic_write_bytes(path, b"second")
    assert path.read_bytes() == b"second" and _mode(path) == 0o644
    assert os.listdir(path.parent) == ["file.txt"]  # no temporary file left behind


def test_a_failed_write_leaves_the_old_file(tmp_path):
    path = tmp_path / "kept.json"
    write_json(path, {"a": 1})
    with pytest.raises(ValueError):
        write_json(path, {"a": float("nan")})  # strict JSON refuses NaN before anything is replaced
    assert json.loads(path.read_text()) == {"a": 1} and os.listdir(tmp_path) == ["kept.json"]


def test_json_text_is_sorted_indented_and_strict():
    assert json_text({"b": 1, "a": [1, 2]}) == '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}\n'
    with pytest.raises(ValueError):
        json_text({"x": float("inf")})


def test_atomic_directory_appears_only_when_complete(tmp_path, umask_022):
    final = tmp_path / "reports" / "run"
    with atomic_directory(final) as tmp:
        assert not final.exists() and tmp.parent == final.parent and tmp.name.endswith(".partial")
        atomic_write_text(tmp / "summary.md", "done\n")
    assert (final / "summary.md").read_text() == "done\n"
    assert _mode(final) == 0o755 and _mode(final / "summary.md") == 0o644
    assert os.listdir(final.parent) == ["run"]


def test_atomic_directory_refuses_an_existing_folder(tmp_path):
    final = tmp_path / "run"
    final.mkdir()
    (final / "old.txt").write_text("old")
    with pytest.raises(FileExistsError, match="refusing to overwrite"):
        with atomic_directory(final):
            pytest.fail("the block must not run")
    assert os.listdir(final) == ["old.txt"]


def test_atomic_directory_cleans_up_on_an_exception(tmp_path):
    final = tmp_path / "run"
    with pytest.raises(KeyboardInterrupt):
        with atomic_directory(final) as tmp:
            (tmp / "half.txt").write_text("half")
            raise KeyboardInterrupt
    assert not final.exists() and os.listdir(tmp_path) == []


def test_atomic_directory_removes_the_parent_folders_it_made_when_nothing_is_written(tmp_path):
    (tmp_path / "reports").mkdir()
    final = tmp_path / "reports" / "new-root" / "20000101T000000Z" / "parity"
    with pytest.raises(KeyboardInterrupt):
        with atomic_directory(final) as tmp:
            (tmp / "half.txt").write_text("half")
            raise KeyboardInterrupt
    assert os.listdir(tmp_path / "reports") == []  # made before: kept; made for the report: removed


def test_atomic_directory_keeps_a_parent_folder_something_else_wrote_in(tmp_path):
    final = tmp_path / "root" / "stamp" / "parity"
    with pytest.raises(RuntimeError):
        with atomic_directory(final):
            (tmp_path / "root" / "other").mkdir()  # another run's report, meanwhile
            raise RuntimeError("failed")
    assert sorted(os.listdir(tmp_path / "root")) == ["other"]


def _parse(argv: list[str], optional: bool = False) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_json_option(parser, "the verdicts")
    add_report_options(parser, "speed", optional=optional)
    return parser.parse_args(argv)


def test_json_option():
    assert _parse([]).json is None and _parse(["--json", "x.json"]).json == Path("x.json")


def test_report_folder_from_out_or_out_root(tmp_path, monkeypatch):
    monkeypatch.setattr("detsim.track.base.output.utc_stamp", lambda: "20000101T000000Z")
    assert report_folder(_parse([]), "speed", tmp_path) == tmp_path / REPORTS / "20000101T000000Z" / "speed"
    assert report_folder(_parse(["--out-root", "r"]), "speed") == Path("r/20000101T000000Z/speed")
    assert report_folder(_parse(["--out", "x/{stamp}"]), "speed") == Path("x/20000101T000000Z")
    assert report_folder(_parse(["--out", "x/<STAMP>/y"]), "speed") == Path("x/20000101T000000Z/y")
    monkeypatch.chdir(tmp_path)
    assert report_folder(_parse([]), "speed") == tmp_path / REPORTS / "20000101T000000Z" / "speed"


def test_an_optional_report_is_written_only_when_asked_for(tmp_path, monkeypatch):
    monkeypatch.setattr("detsim.track.base.output.utc_stamp", lambda: "20000101T000000Z")
    assert report_folder(_parse([], optional=True), "speed", tmp_path) is None
    assert report_folder(_parse(["--out"], optional=True), "speed", tmp_path) == \
        tmp_path / REPORTS / "20000101T000000Z" / "speed"
    assert report_folder(_parse(["--out", "mine"], optional=True), "speed", tmp_path) == Path("mine")


READ_ONLY = Path("/sys/detsim-track-check")  # a place nothing can be created in, even as root


def test_an_output_file_is_new_or_a_previous_report_of_the_same_command(tmp_path):
    check_output_file(tmp_path / "new" / "r.json", "--json", "tool a")  # new, parent created later: fine
    ours = tmp_path / "ours.json"
    write_json(ours, {"report": "tool a", "x": 1})
    check_output_file(ours, "--json", "tool a")
    assert is_report_of(ours, "tool a") and not is_report_of(ours, "tool b")
    with pytest.raises(OutputError, match="not a previous `tool b` report; refusing to replace it"):
        check_output_file(ours, "--json", "tool b")
    other = tmp_path / "other.json"
    other.write_text('{"cases": {}}')
    with pytest.raises(OutputError, match=f"--json {other}: exists"):
        check_output_file(other, "--json", "tool a")


@pytest.mark.parametrize("target, reason", [
    ("folder", "is a folder"), ("file/x.json", "is not a folder"), ("link", "not a regular file"),
    ("", "an empty path"), (str(READ_ONLY / "x.json"), "cannot write in"),
])
def test_an_output_file_that_cannot_be_written_is_refused_naming_it(tmp_path, target, reason):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "file")
    path = target if target == "" else tmp_path / target
    with pytest.raises(OutputError, match=reason) as caught:
        check_output_file(path, "--json", "tool a")
    assert "\n" not in str(caught.value) and str(caught.value).startswith(f"--json {path}")
    assert sorted(os.listdir(tmp_path)) == ["file", "folder", "link"]  # nothing created


@pytest.mark.parametrize("target, reason", [
    ("folder", "already exists"), ("file/r", "is not a folder"), (str(READ_ONLY / "r"), "cannot write in"),
])
def test_a_report_folder_must_be_new_and_creatable(tmp_path, target, reason):
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match=reason):
        check_new_folder(tmp_path / target, "--out")
    check_new_folder(tmp_path / "a" / "b" / "c", "--out")
    assert sorted(os.listdir(tmp_path)) == ["file", "folder"]

"""The second recording of detsim's exact families: its asv configuration, and a commit recorded in parts by two
asv processes becoming one results file (the merge), every file whole whatever fails."""

from __future__ import annotations

import errno
import json
import os

import pytest

from detsim.track.base import files
from detsim.track.base.files import RecordingError
from detsim.track.judge.results_files import load_result_file
from detsim.track.recorder.second import merge_results, second_config

COLUMNS = ["result", "params", "version", "started_at", "duration"]
HEAD = {"commit_hash": "a" * 40, "env_name": "virtualenv-py3.11", "date": 1, "params": {"machine": "m"},
        "python": "3.11", "requirements": {}, "env_vars": {}, "result_columns": COLUMNS, "version": 2}


def _file(folder, results, durations, **changes):
    path = folder / "m" / "aaaaaaaa-virtualenv-py3.11.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**HEAD, **changes, "results": results, "durations": durations}))
    return path


def test_both_parts_of_one_recording_end_in_one_file_and_the_second_part_is_gone(tmp_path):
    first = _file(tmp_path / "first", {"bench_cost.A.track": [[1.0], [], "v", 1, 2.0]}, {"<build>": 3.0})
    second = _file(tmp_path / "second", {"bench_parity.track_x": [[0.0], [], "v", 1, 1.0]},
                   {"<setup_cache common:1>": 4.0})
    (tmp_path / "second" / "m" / "machine.json").write_text("{}")
    assert merge_results(tmp_path / "second", tmp_path / "first") == [first]
    merged = json.loads(first.read_text())
    assert set(merged["results"]) == {"bench_cost.A.track", "bench_parity.track_x"}
    assert merged["durations"] == {"<build>": 3.0, "<setup_cache common:1>": 4.0}
    assert not second.exists() and (tmp_path / "second" / "m" / "machine.json").exists()
    assert load_result_file(first)["results"]["bench_parity.track_x"][0] == [0.0]


def test_a_commit_recorded_only_by_the_second_process_is_moved_over(tmp_path):
    second = _file(tmp_path / "second", {"bench_parity.track_x": [[0.0], [], "v", 1, 1.0]}, {})
    [moved] = merge_results(tmp_path / "second", tmp_path / "first")
    assert moved == tmp_path / "first" / "m" / second.name and moved.exists() and not second.exists()


@pytest.mark.parametrize("changes, named", [({"commit_hash": "b" * 40}, "commit_hash"),
                                            ({"result_columns": COLUMNS[:2]}, "result_columns")])
def test_parts_of_different_recordings_are_refused_and_left_as_they_were(tmp_path, changes, named):
    first = _file(tmp_path / "first", {"a": [[1.0], [], "v", 1, 1.0]}, {})
    second = _file(tmp_path / "second", {"b": [[1.0], [], "v", 1, 1.0]}, {}, **changes)
    before = first.read_text()
    with pytest.raises(RecordingError, match=f"another recording than .*{named}"):
        merge_results(tmp_path / "second", tmp_path / "first")
    assert first.read_text() == before and second.exists()


def test_a_corrupt_part_is_named(tmp_path):
    _file(tmp_path / "first", {}, {})
    bad = tmp_path / "second" / "m" / "aaaaaaaa-virtualenv-py3.11.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    with pytest.raises(RecordingError, match="aaaaaaaa-virtualenv-py3.11.json"):
        merge_results(tmp_path / "second", tmp_path / "first")


def test_a_merge_that_cannot_write_says_so_in_one_line_and_leaves_every_file_whole(tmp_path, monkeypatch):
    first = _file(tmp_path / "first", {"a": [[1.0], [], "v", 1, 1.0]}, {})
    second = _file(tmp_path / "second", {"b": [[1.0], [], "v", 1, 1.0]}, {})
    before = first.read_text()

    def full(*args):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "replace", full)
    with pytest.raises(RecordingError) as raised:
        merge_results(tmp_path / "second", tmp_path / "first")
    assert "\n" not in str(raised.value) and "No space left on device" in str(raised.value)
    assert first.read_text() == before and second.exists()
    assert sorted(p.name for p in first.parent.iterdir()) == [first.name]  # no temporary file left

def test_the_second_configuration_is_asv_s_with_its_own_folders(tmp_path):
    (tmp_path / "asv.conf.json").write_text('// comment\n{"env_dir": ".asv/env", "url": "http://x//y", '
                                            '"results_dir": "results/asv"}\n')
    first = second_config(tmp_path, tmp_path / "second.json", ".asv/results-second")
    assert first == ".asv/env"
    assert json.loads((tmp_path / "second.json").read_text()) == {
        "env_dir": ".asv/env-second", "url": "http://x//y", "results_dir": ".asv/results-second",
        "html_dir": ".asv/html-second"}


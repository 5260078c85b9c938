"""A commit recorded in parts by two asv processes becomes one results file."""

from __future__ import annotations

import json

import pytest

from detsim.track.history.asvresults import load_result_file
from detsim.track.history.jsonc import ResultsError
from detsim.track.history.merge import merge_results

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
    with pytest.raises(ResultsError, match=f"another recording than .*{named}"):
        merge_results(tmp_path / "second", tmp_path / "first")
    assert first.read_text() == before and second.exists()


def test_a_corrupt_part_is_named(tmp_path):
    _file(tmp_path / "first", {}, {})
    bad = tmp_path / "second" / "m" / "aaaaaaaa-virtualenv-py3.11.json"
    bad.parent.mkdir(parents=True)
    bad.write_text("{not json")
    with pytest.raises(ResultsError, match="aaaaaaaa-virtualenv-py3.11.json"):
        merge_results(tmp_path / "second", tmp_path / "first")

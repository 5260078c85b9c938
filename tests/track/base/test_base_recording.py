"""The tracking run's recording steps: a record is complete or absent (the plan), a commit recorded in parts by
two asv processes becomes one results file (the merge), what the run writes is checked before it records,
what asv leaves running is stopped, and a machine name from outside names one folder of results/asv or is
refused in one line.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from detsim.track.base import recording
from detsim.track.base.recording import RecordingError, merge_results, validate_machine_name
from detsim.track.judge.results_files import load_result_file


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

    monkeypatch.setattr(recording.os, "replace", full)
    with pytest.raises(RecordingError) as raised:
        merge_results(tmp_path / "second", tmp_path / "first")
    assert "\n" not in str(raised.value) and "No space left on device" in str(raised.value)
    assert first.read_text() == before and second.exists()
    assert sorted(p.name for p in first.parent.iterdir()) == [first.name]  # no temporary file left
    assert recording.main(["merge", str(tmp_path / "second"), str(tmp_path / "first")]) == 2


def _recorded_commit(results, machine, commit, names):
    path = results / machine / f"{commit[:8]}-virtualenv-py3.11.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**HEAD, "commit_hash": commit, "results": dict.fromkeys(names, [1.0]),
                                "durations": {}}))
    return path


@pytest.fixture
def history(tmp_path):
    """A git history of 4 commits (newest first) and its results folder."""
    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args],
                              cwd=tmp_path, check=True, capture_output=True, text=True).stdout
    git("init", "-q")
    for n in range(4):
        git("commit", "-q", "--allow-empty", "-m", str(n))
    results = tmp_path / "results" / "asv"
    results.mkdir(parents=True)
    (results / "benchmarks.json").write_text(json.dumps({"a.x": {}, "b.y": {}, "version": 2}))
    return tmp_path, git("rev-list", "HEAD").split()


def test_the_plan_records_head_and_every_commit_without_a_complete_record(history):
    root, (head, partial, complete, absent) = history
    results = root / "results" / "asv"
    _recorded_commit(results, "m", head, ["a.x", "b.y"])
    _recorded_commit(results, "m", partial, ["a.x"])
    _recorded_commit(results, "m", complete, ["a.x", "b.y", "gone.z"])  # a benchmark since removed is fine
    commits, notes = recording.plan(root, "m", 4)
    assert commits == [head, partial, absent]
    assert notes == [f"{partial[:8]} was recorded only in part (1 of the suite's benchmarks missing, b.y first); "
                     "recorded again"]
    assert recording.plan(root, "m", 2)[0] == [head, partial]


def test_a_results_file_that_cannot_be_read_is_removed_and_its_commit_recorded(history):
    root, (head, cut, complete, _) = history
    results = root / "results" / "asv"
    path = _recorded_commit(results, "m", cut, ["a.x", "b.y"])
    path.write_text(path.read_text()[:30])
    _recorded_commit(results, "m", complete, ["a.x", "b.y"])
    commits, notes = recording.plan(root, "m", 3)
    assert commits == [head, cut] and not path.exists()
    assert len(notes) == 1 and notes[0].startswith(f"{path}: corrupt JSON")


def test_without_the_suite_s_list_no_record_counts_as_complete(history):
    root, (head, older, *_) = history
    results = root / "results" / "asv"
    (results / "benchmarks.json").unlink()
    _recorded_commit(results, "m", older, ["a.x", "b.y"])
    assert recording.plan(root, "m", 2)[0] == [head, older]


def test_the_second_configuration_is_asv_s_with_its_own_folders(tmp_path):
    (tmp_path / "asv.conf.json").write_text('// comment\n{"env_dir": ".asv/env", "url": "http://x//y", '
                                            '"results_dir": "results/asv"}\n')
    first = recording.second_config(tmp_path, tmp_path / "second.json", ".asv/results-second")
    assert first == ".asv/env"
    assert json.loads((tmp_path / "second.json").read_text()) == {
        "env_dir": ".asv/env-second", "url": "http://x//y", "results_dir": ".asv/results-second",
        "html_dir": ".asv/html-second"}


def test_a_folder_that_cannot_be_written_is_named_in_one_line(tmp_path, capsys):
    (tmp_path / "results").write_text("a file where a folder belongs")
    assert recording.main(["writable", str(tmp_path / ".asv"), str(tmp_path / "results" / "asv" / "m")]) == 2
    assert capsys.readouterr().err == (f"tracking run: {tmp_path}/results/asv/m: cannot be written "
                                       f"({tmp_path}/results is not a folder)\n")
    recording.check_writable(tmp_path / "not" / "made")
    assert sorted(tmp_path.iterdir()) == [tmp_path / "results"]  # nothing made, nothing left


def test_the_writability_probe_names_the_nearest_existing_path_and_why(tmp_path):
    (tmp_path / "file").write_text("not a folder")
    assert recording.why_unwritable(tmp_path / "file" / "x") == (tmp_path / "file", recording.NOT_A_FOLDER)
    assert recording.why_unwritable(tmp_path / "new" / "deeper") == (tmp_path, None)
    assert sorted(tmp_path.iterdir()) == [tmp_path / "file"]  # the probe file is gone


def test_a_machine_name_from_outside_is_refused_by_the_step_in_one_line(capsys):
    assert recording.main(["machine", "../evil"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert recording.main(["machine", "ci-cpu"]) == 0 and capsys.readouterr().out == "ci-cpu\n"


SERVER = ("import socket, sys, time; s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[3]); s.listen(); "
          "open(sys.argv[3] + '.up', 'w').close(); time.sleep(60)")


def _fork_server(root):
    """A process as asv starts its fork server: its own group, a socket in a folder asv-forkserver-*."""
    folder = Path(tempfile.mkdtemp(prefix=recording.FORKSERVER_PREFIX))
    server = subprocess.Popen([sys.executable, "-c", SERVER, "run_server", str(root / "benchmarks"),
                               str(folder / "socket")], process_group=0)
    while not (folder / "socket.up").exists():
        time.sleep(0.01)
    return server, folder


def test_what_a_killed_run_left_is_stopped_and_removed_and_nothing_of_others(tmp_path):
    ours, our_folder = _fork_server(tmp_path / "ours")
    theirs, their_folder = _fork_server(tmp_path / "another-clone")
    dead = Path(tempfile.mkdtemp(prefix=recording.FORKSERVER_PREFIX))
    (dead / "socket").write_text("")  # a socket file no process holds
    try:
        # the test runner is the servers' parent, not asv: as if asv had been killed
        done = recording.clean_up(tmp_path / "ours")
        assert ours.wait(timeout=5) is not None and theirs.poll() is None
        assert not our_folder.exists() and not dead.exists() and their_folder.exists()
        assert any(str(ours.pid) in line for line in done)
    finally:
        theirs.kill()
        theirs.wait()
        shutil.rmtree(their_folder)


def test_a_run_that_ends_stops_every_process_below_it(tmp_path):
    parent = subprocess.Popen([sys.executable, "-c", "import subprocess, sys, time; "
                               "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
                               "time.sleep(60)"])
    deadline = time.monotonic() + 10
    while not recording.descendants(parent.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    [child] = recording.descendants(parent.pid)
    recording.clean_up(tmp_path, below=parent.pid)
    assert not recording._alive(child)
    parent.kill()
    parent.wait()


# ---- machine names

@pytest.mark.parametrize("name", ["vm", "ci-cpu", "runner_7.example", "A1"])
def test_host_names_and_ci_names_pass_unchanged(name):
    assert validate_machine_name(name) == name


@pytest.mark.parametrize("name", ["../evil", "..", ".", "", "a/b", ".hidden", "-x", "x y", "tab\tname",
                                  "esc\x1b[31m", "a" * 65])
def test_names_that_would_leave_results_asv_or_garble_a_terminal_are_refused_in_one_line(name):
    with pytest.raises(ValueError) as raised:
        validate_machine_name(name)
    assert "\n" not in str(raised.value) and "\x1b" not in str(raised.value)

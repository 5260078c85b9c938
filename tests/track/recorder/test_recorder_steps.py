"""The tracking run's steps as .ci/track calls them: each refusal one line and exit 2, the target's folder the
caller's, the judge's project folder, WORKERS as a number or an address; run by path, they import no detsim."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from detsim.track.recorder import steps

STEPS = Path(steps.__file__)


def test_a_machine_name_from_outside_is_refused_by_the_step_in_one_line(capsys):
    assert steps.main(["machine", "../evil"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert steps.main(["machine", "ci-cpu"]) == 0 and capsys.readouterr().out == "ci-cpu\n"


def test_a_folder_that_cannot_be_written_is_named_in_one_line(tmp_path, capsys):
    (tmp_path / "results").write_text("a file where a folder belongs")
    assert steps.main(["writable", str(tmp_path / ".asv"), str(tmp_path / "results" / "asv" / "m")]) == 2
    assert capsys.readouterr().err == (f"tracking run: {tmp_path}/results/asv/m: cannot be written "
                                       f"({tmp_path}/results is not a folder)\n")


def test_a_relative_target_is_the_callers_and_a_missing_one_refused_in_one_line(tmp_path, capsys):
    (tmp_path / "port").mkdir()
    assert steps.main(["target", "--from", str(tmp_path), "port"]) == 0
    assert capsys.readouterr().out == f"{tmp_path / 'port'}\n"
    assert steps.main(["target", "--from", str(tmp_path), ""]) == 0 and capsys.readouterr().out == "\n"
    assert steps.main(["target", "--from", str(tmp_path), "no/port"]) == 2
    assert capsys.readouterr().err == "tracking run: TARGET=no/port: not a folder\n"


def test_the_judge_reads_a_targets_project_folder_or_detsims_own_checkout(tmp_path):
    assert steps.project(str(tmp_path / "port")) == "results/targets/port" and steps.project("") == ""


def test_workers_are_a_number_of_processes_or_a_schedulers_address():
    assert steps.cluster_options("") == []
    assert steps.cluster_options("4") == ["--workers", "4"]
    assert steps.cluster_options("tcp://h:8786") == ["--scheduler", "tcp://h:8786"]
    with pytest.raises(ValueError, match="WORKERS=0: give 1 or more"):
        steps.cluster_options("0")


def test_workers_go_to_detsims_own_recording_too(tmp_path, monkeypatch, capsys):
    made = []
    monkeypatch.setattr(steps, "OwnRecording", lambda root, machine, cluster=(): made.append(cluster) or
                        type("Recording", (), {"record": lambda self, recent: None})())
    monkeypatch.chdir(tmp_path)
    for workers in ("", "2", "tcp://h:8786"):
        assert steps.main(["record", "--recent", "1", "--machine", "m", "--workers", workers]) == 0
    assert made == [(), ("--workers", "2"), ("--scheduler", "tcp://h:8786")] and capsys.readouterr().err == ""
    assert steps.main(["record", "--recent", "1", "--machine", "m", "--workers", "0"]) == 2
    assert capsys.readouterr().err.count("\n") == 1 and len(made) == 3


@pytest.mark.slow
def test_run_by_path_the_steps_import_only_the_standard_library_and_detsim_track_s_own_files(tmp_path):
    """(A fresh interpreter: the one that proves no module of detsim, torch or numpy is loaded.)"""
    probe = ("import runpy, sys; sys.argv = ['steps', 'machine', 'm']\n"
             "try:\n    runpy.run_path(%r, run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(sorted(n for n in sys.modules if n.split('.')[0] in ('detsim', 'torch', 'numpy')))\n") % str(STEPS)
    done = subprocess.run([sys.executable, "-I", "-c", probe], capture_output=True, text=True, cwd=tmp_path)
    assert done.stdout.splitlines() == ["m", "[]"], done.stderr

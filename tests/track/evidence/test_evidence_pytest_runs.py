"""pytest processes: exit statuses, re-runnable shell lines, logs kept whole, time-outs and Ctrl-C."""

from __future__ import annotations

import subprocess
import sys

import pytest

from detsim.track.evidence.records import ProcessResult
from detsim.track.evidence.pytest_runs import BUNDLE, Command, exit_status, pytest_argv


@pytest.mark.parametrize("code, timed_out, expected", [
    (0, False, ("ok", "pytest exit 0 (all tests passed)")),
    (1, False, ("ok", "pytest exit 1 (some tests failed)")),
    (5, False, ("nothing collected", "pytest exit 5 (no tests collected)")),
    (2, False, ("crashed", "pytest exit 2 (interrupted (collection errors or a test run stopped))")),
    (3, False, ("crashed", "pytest exit 3 (pytest internal error)")),
    (7, False, ("crashed", "pytest exit 7 (unexpected exit code)")),
    (-9, False, ("crashed", "killed by SIGKILL")),
    (-200, False, ("crashed", "killed by signal 200")),
    (-9, True, ("crashed", "killed after 2.5 s (--timeout)")),
])
def test_exit_status(code, timed_out, expected):
    assert exit_status(ProcessResult(code, timed_out, 1.0), 2.5) == expected


def test_pytest_runs_in_this_interpreter_unbuffered_without_cache_or_colour():
    assert pytest_argv("-q", "a.py") == (sys.executable, "-u", "-m", "pytest", "-p", "no:cacheprovider",
                                         "-p", "detsim.track.evidence.plugin", "--color=no", "-q", "a.py")


def test_shell_line_quotes_words_and_stands_bundle_for_the_folder(tmp_path):
    command = Command(("python", "a b.py::t[x]", f"--junitxml={BUNDLE}/j $x.xml"), "retime/cpu-1.log")
    assert command.shell() == ("python 'a b.py::t[x]' \"--junitxml=$BUNDLE/j \\$x.xml\" "
                               "> \"$BUNDLE/retime/cpu-1.log\" 2>&1")
    assert command.resolved(tmp_path) == ["python", "a b.py::t[x]", f"--junitxml={tmp_path}/j $x.xml"]
    out = subprocess.run(["bash", "-c", f"BUNDLE={tmp_path}; printf '%s\\n' {command.shell().split(' > ')[0]}"],
                         capture_output=True, text=True).stdout
    assert out.splitlines() == command.resolved(tmp_path)  # the shell gives back the exact argv


def test_execute_writes_the_whole_output_to_its_log(tmp_path):
    script = "import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"
    result = Command((sys.executable, "-c", script), "logs/run.log").execute(tmp_path, timeout=60)
    assert (result.exit_code, result.timed_out) == (3, False) and result.wall_s >= 0
    assert sorted((tmp_path / "logs" / "run.log").read_text().split()) == ["err", "out"]


def test_a_process_past_its_timeout_is_killed_and_keeps_its_log(tmp_path):
    script = "import time; print('started', flush=True); time.sleep(60)"
    result = Command((sys.executable, "-u", "-c", script), "run.log").execute(tmp_path, timeout=1.0)
    assert (result.exit_code, result.timed_out) == (-9, True)
    assert (tmp_path / "run.log").read_text() == "started\n"


def test_an_interrupt_kills_the_process_and_goes_on(tmp_path, monkeypatch):
    started = []
    real_wait = subprocess.Popen.wait

    def interrupted_wait(self, timeout=None):
        if not started:
            started.append(self)
            raise KeyboardInterrupt  # Ctrl-C while waiting for pytest
        return real_wait(self, timeout)

    monkeypatch.setattr(subprocess.Popen, "wait", interrupted_wait)
    with pytest.raises(KeyboardInterrupt):
        Command((sys.executable, "-c", "import time; time.sleep(60)"), "run.log").execute(tmp_path, timeout=None)
    assert started[0].returncode == -9  # killed, not left running

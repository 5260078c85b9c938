"""evidence.pytest_runs: exit statuses, re-runnable shell lines, logs kept whole, time-outs and Ctrl-C; reading what
a pytest run left behind: node ids, junit XML, warning summaries, the end of a killed log."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from detsim.track.evidence import pytest_runs as pr
from detsim.track.evidence.pytest_runs import BUNDLE, Command, pytest_argv


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


def test_junit_addresses_match_pytest_mangling():
    junitxml = pytest.importorskip("_pytest.junitxml")
    for nodeid in ("tests/test_x.py::test_a", "tests/sub/test_y.py::TestK::test_b[1.5-a::b]",
                   "test_z.py::test_c[cpu-float64-a01_cubic]"):
        names = junitxml.mangle_test_address(nodeid)
        assert pr.junit_address(nodeid) == (".".join(names[:-1]), names[-1])


def test_junit_reader_merges_call_failure_and_teardown_error(tmp_path):
    xml = tmp_path / "j.xml"
    xml.write_text(textwrap.dedent("""\
        <testsuites><testsuite>
        <testcase classname="t" name="test_a" time="0.5"><failure message="AssertionError: x&#10;more">tb</failure></testcase>
        <testcase classname="t" name="test_a" time="0.25"><error message="failed on teardown with &quot;E&quot;">tb</error></testcase>
        <testcase classname="t" name="test_b" time="0.1"><skipped type="pytest.xfail" message="known"/></testcase>
        </testsuite></testsuites>"""))
    records = pr.read_junit(xml, ["t.py::test_a", "t.py::test_b"])
    assert records == [
        {"nodeid": "t.py::test_a", "outcome": "failed", "duration_s": 0.75, "skip_reason": None,
         "message": "AssertionError: x"},
        {"nodeid": "t.py::test_b", "outcome": "xfailed", "duration_s": 0.1, "skip_reason": "known", "message": None},
    ]
    with pytest.raises(pr.UNREADABLE):
        pr.read_junit(tmp_path / "absent.xml", [])
    (tmp_path / "cut.xml").write_text("<testsuites><testsuite>")
    with pytest.raises(pr.UNREADABLE):
        pr.read_junit(tmp_path / "cut.xml", [])


def test_running_at_end_names_the_test_a_killed_run_was_in():
    assert pr.running_at_end("x.py::test_a PASSED  [ 50%]\nx.py::test_b[cuda] \n") == "x.py::test_b[cuda]"
    assert pr.running_at_end("x.py::test_a PASSED  [ 50%]\n") is None
    assert pr.running_at_end("==== 1 passed in 0.1s ====\n") is None


def test_warning_summary_groups_tests_by_text():
    log = textwrap.dedent("""\
        ============================= warnings summary =============================
        a.py::test_one
        a.py::test_two
          /src/a.py:3: DeprecationWarning: old api
            old()

        b.py::test_three
          /src/b.py:9: UserWarning: planted
          second line of the message
            warnings.warn(...)

        -- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
        ========================== short test summary info ==========================
        FAILED a.py::test_x - AssertionError
        ======================= warnings summary (final) ========================
        c.py::test_four
          /src/c.py:1: UserWarning: planted
            warnings.warn(...)

        -- Docs: https://docs.pytest.org/en/stable/how-to/capture-warnings.html
        """)
    assert pr.warning_summary(log) == [
        {"text": "DeprecationWarning: old api", "location": "/src/a.py:3", "tests": ["a.py::test_one", "a.py::test_two"]},
        {"text": "UserWarning: planted", "location": "/src/b.py:9", "tests": ["b.py::test_three", "c.py::test_four"]},
    ]


def test_collected_nodeids_stop_at_the_first_blank_line():
    log = "a.py::t1\na.py::K::t2[x]\n\n2 tests collected in 0.01s\nb.py::not_a_test\n"
    assert pr.collected_nodeids("\n" + log) == ["a.py::t1", "a.py::K::t2[x]"]


def test_first_error_rootdir_and_normalised_collect_log():
    log = "rootdir: /src/project\nplugins: x\n    def test():\nE   AssertionError: boom\nE   second\n"
    assert pr.first_error(log) == "AssertionError: boom"
    assert pr.first_error("INTERNALERROR> KeyError: 'x'\n") == "KeyError: 'x'"
    assert pr.first_error("all good\n") is None
    assert str(pr.rootdir(log)) == "/src/project" and pr.rootdir("no header") is None
    assert pr.normalised_collect_log("3 tests collected in 1.25s (0:00:01)\n") == "3 tests collected in <time>\n"


def test_warning_key_blanks_memory_addresses():
    assert pr.warning_key("W: <obj at 0x7f00aa>") == pr.warning_key("W: <obj at 0x55bb>") == "W: <obj at 0x?>"

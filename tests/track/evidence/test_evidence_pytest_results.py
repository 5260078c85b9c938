"""Reading what a pytest run left behind: node ids, junit XML, warning summaries, the end of a killed log."""

from __future__ import annotations

import textwrap

import pytest

from detsim.track.evidence import pytest_results as pr


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

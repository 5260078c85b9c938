"""summary.md and the printed report, rendered from synthetic results."""

from __future__ import annotations

from pathlib import Path

from detsim.track.evidence import summary
from detsim.track.evidence.outcomes import (BundleResults, CollectResult, BundleChanges, DeviceRun, DurationMove,
                                           LoggedWarning, NewFailure, Outcomes, Request, TestPresence,
                                           TestResult)

REQUEST = Request(area="parity", selection=(), devices=("cpu",), cwd=Path("/src"), asked_devices=(),
                  out_root=Path("reports"), timeout=None, retime=3)
ENV = {"commit": "0123456789abcdef", "branch": "main", "dirty": True, "python": "3.11.7", "torch": "2.4.0",
       "pytest": "8.0.0", "cpu": "AMD EPYC", "torch_threads": 2, "cuda": {"available": False, "reason": "no GPU"}}
COUNTS = {"passed": 12, "failed": 1, "error": 0, "skipped": 2, "xfailed": 0}


def _results(tests=(), comparison=None, status="ok") -> BundleResults:
    run = DeviceRun("pytest-cpu.log", "junit-cpu.xml", COUNTS, status, "pytest exit 1 (some tests failed)",
                    (LoggedWarning("UserWarning: w", "a.py:3", ("a.py::t",)),), "/src", 1, 12.34, False)
    collect = CollectResult(0, False, 0.5, "ok", "pytest exit 0", 15, "collect.log")
    return BundleResults(REQUEST, "20260101T000000Z", collect, Outcomes(tuple(tests), {"cpu": run}), comparison)


def test_summary_opens_with_verdict_and_comparison_then_runs():
    lines = summary.render_summary(_results(), ENV).splitlines()
    assert lines[:6] == ["# Evidence: parity, 20260101T000000Z", "", "**Verdict: ok** (exit 0)", "",
                         "## No previous bundle of this area: nothing to compare with (every failure counts as new)",
                         ""]
    assert "Selection `(pytest's default: testpaths)` from `/src`; 15 tests collected (pytest exit 0)." in lines
    assert ("Code: commit `0123456789ab` on `main` (dirty). Python 3.11.7, torch 2.4.0, pytest 8.0.0; "
            "CPU AMD EPYC, 2 threads; CUDA absent (no GPU).") in lines
    assert "| cpu | ok | pytest exit 1 (some tests failed) | 12 | 1 | 0 | 2 | 0 | 12.3 |" in lines
    assert "- `UserWarning: w` (a.py:3; cpu)" in lines


def test_failures_skips_and_slowest_tests():
    tests = [TestResult("cpu", f"a.py::p{i}", "passed", 0.1 * i) for i in range(12)]
    tests += [TestResult("cpu", "a.py::f", "failed", 0.05, message="AssertionError: no"),
              TestResult("cpu", "a.py::s1", "skipped", 0.0, skip_reason="needs CUDA"),
              TestResult("cpu", "a.py::s2", "skipped", 0.0, skip_reason="needs CUDA"),
              TestResult("cpu", "a.py::s3", "skipped", 0.0, skip_reason=""),
              TestResult("cpu", "a.py::x", "xfailed", 0.0, skip_reason="known")]
    text = summary.render_summary(_results(tests), ENV)
    assert "- `cpu` `a.py::f` (failed): AssertionError: no" in text
    skips = text.split("## Skips by reason (3)\n\n")[1].split("\n\n")[0].splitlines()
    assert skips == ["- needs CUDA (2): `cpu` `a.py::s1`, `cpu` `a.py::s2`",
                     "- (no reason given) (1): `cpu` `a.py::s3`"]
    assert "## Expected failures by reason (1)" in text and "- known (1): `cpu` `a.py::x`" in text
    assert "## Slowest tests (10 of 17)" in text
    slowest = [line for line in text.splitlines() if line.startswith("| 1.100 |") or line.startswith("| 0.200 |")]
    assert slowest == ["| 1.100 | cpu | `a.py::p11` | passed |", "| 0.200 | cpu | `a.py::p2` | passed |"]
    assert "| 0.100 | cpu | `a.py::p1` |" not in text  # the 11th slowest


def test_sections_say_none_and_no_xfail_section_without_xfails():
    text = summary.render_summary(_results(), ENV)
    assert "## Failures (0)\n\nNone." in text and "## Skips by reason (0)\n\nNone." in text
    assert "Expected failures" not in text and "`retime/`" not in text


def test_comparison_lists_changes_in_order_and_cuts_long_lists():
    failures = tuple(NewFailure("cpu", f"a.py::t{i:02}", "failed", None if i else "E: x", None if i else "passed")
                     for i in range(12))
    slower = DurationMove("cpu", "a.py::slow", 0.2, 2.0, 10.0, 4)
    comparison = BundleChanges(new_failures=failures, removed=(TestPresence("cpu", "a.py::gone"),),
                            slower=(slower,), faster_unjudged=2, load_factors={"cpu": 2.5},
                            previous="20251231T000000Z", previous_problems=("modified: summary.md",))
    lines = summary.comparison_lines(comparison, markdown=False)
    assert lines[0] == "compared with 20251231T000000Z: changes"
    assert lines[1:3] == ["  new failures (12):", "    cpu a.py::t00: E: x"]
    assert lines[3] == "    cpu a.py::t01: failed (new test)"
    assert "    ... and 2 more" in lines
    slower_title = "  slower (> 2x and > 0.5 s, best load-corrected time) (1):"
    assert lines.index(slower_title) < lines.index("  tests removed (1):")
    assert "    cpu a.py::slow: 0.200 s -> 2.000 s (10x)" in lines
    notes = [line for line in lines if line.startswith("  note: ")]
    assert len(notes) == 3 and notes[0].startswith("  note: cpu: the tests took a median 2.5x their previous time")
    assert "2 test(s) ran faster than their earlier time; not judged (fewer than 3" in notes[1]
    assert notes[2] == "  note: the previous bundle does not verify: modified: summary.md"
    markdown = summary.comparison_lines(comparison, markdown=True)
    assert "- new failures (12):" in markdown and "  - `cpu` `a.py::t00`: E: x" in markdown


def test_an_unchanged_comparison_says_so():
    assert summary.comparison_lines(BundleChanges(previous="X"), markdown=True) == ["compared with X: no change"]


def test_console_report_lists_runs_comparison_and_verdict():
    results = _results(status="crashed")
    report = summary.console_report(results, Path("reports/parity/20260101T000000Z")).splitlines()
    assert report[0] == "evidence parity: reports/parity/20260101T000000Z"
    assert report[1] == "  cpu: 12 passed, 1 failed, 2 skipped in 12.3 s [CRASHED: pytest exit 1 (some tests failed)]"
    assert report[-1] == "verdict: not measured: cpu: crashed, pytest exit 1 (some tests failed) (exit 2)"

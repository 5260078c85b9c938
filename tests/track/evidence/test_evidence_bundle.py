"""The steps of a bundle that need no real pytest run: the verdict, crash reasons, and re-timing."""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.evidence import bundle
from detsim.track.evidence import pytest_results as pr
from detsim.track.evidence.previous import PastBundle
from detsim.track.evidence.records import (CollectResult, Comparison, DeviceRun, NewFailure, Outcomes, ProcessResult,
                                           Request, TestResult, Verdict)
from detsim.track.evidence.pytest_runs import Command

OK_COLLECT = CollectResult(0, False, 0.5, "ok", "pytest exit 0", 3, "collect.log")


def _run(status: str = "ok", why: str = "pytest exit 1 (some tests failed)", rootdir: str | None = "/src") -> DeviceRun:
    return DeviceRun("pytest-cpu.log", "junit-cpu.xml", {"passed": 1}, status, why, rootdir=rootdir)


def _outcomes(*outcomes: str, runs=None) -> Outcomes:
    tests = tuple(TestResult("cpu", f"a.py::t{i}", o, 0.1) for i, o in enumerate(outcomes))
    return Outcomes(tests, runs or {"cpu": _run()})


def test_verdict_with_no_previous_bundle_counts_every_failure_as_new():
    assert bundle.verdict(OK_COLLECT, _outcomes("passed", "failed", "error"), None) == (
        Verdict(ExitCode.REGRESSED, "2 new failures"))
    assert bundle.verdict(OK_COLLECT, _outcomes("passed", "skipped"), None) == Verdict(ExitCode.OK, "ok")


def test_verdict_against_a_previous_bundle_forgives_known_failures():
    known = bundle.verdict(OK_COLLECT, _outcomes("failed"), Comparison())
    assert known == Verdict(ExitCode.OK, "ok: no new failures (1 known)")
    new = Comparison(new_failures=(NewFailure("cpu", "a.py::t0", "failed", None, "passed"),))
    assert bundle.verdict(OK_COLLECT, _outcomes("failed"), new) == Verdict(ExitCode.REGRESSED, "1 new failure")


def test_not_measured_wins_and_says_what_happened():
    crashed = _outcomes("failed", runs={"cpu": _run(), "cuda": _run("crashed", "killed by SIGKILL")})
    assert bundle.verdict(OK_COLLECT, crashed, None) == Verdict(
        ExitCode.UNMEASURED, "not measured: cuda: crashed, killed by SIGKILL (and 1 new failure)")
    broken = CollectResult(2, False, 0.5, "crashed", "pytest exit 2: ImportError", 0, "collect.log")
    not_run = Outcomes((), {"cpu": _run("not run", "collection did not complete")})
    assert bundle.verdict(broken, not_run, None).text == (
        "not measured: collection crashed, pytest exit 2: ImportError; no device ran")


def test_a_crash_names_the_test_it_was_running_or_the_error():
    killed = ProcessResult(-9, False, 1.0)
    assert bundle._crash_detail("crashed", "killed by SIGKILL", killed, "a.py::t1 PASSED\na.py::t2 ") == (
        "killed by SIGKILL while running a.py::t2")
    internal = ProcessResult(3, False, 1.0)
    assert bundle._crash_detail("crashed", "pytest exit 3", internal, "INTERNALERROR> boom\n") == "pytest exit 3: boom"
    assert bundle._crash_detail("ok", "pytest exit 1", ProcessResult(1, False, 1.0), "E   x\n") == "pytest exit 1"


def test_the_device_option_hint_tells_a_missing_path_from_a_foreign_folder(tmp_path):
    (tmp_path / "here.py").write_text("")
    assert bundle._device_option_hint(["absent/t.py::x", "-k", "here.py"], tmp_path) == (
        " (no such file or directory: absent/t.py::x)")
    assert "not under a conftest.py" in bundle._device_option_hint(["here.py"], tmp_path)


def _request(retime: int) -> Request:
    return Request(area="a", selection=(), devices=("cpu",), cwd=Path("/src"), asked_devices=(),
                   out_root=Path("reports"), timeout=None, retime=retime)


@pytest.fixture
def fake_retiming(monkeypatch):
    """Re-timing processes that report the given seconds per node id in their junit XML; their commands."""
    seen: list[Command] = []

    def fake(times: dict[str, float]):
        def execute(self, folder, timeout):
            seen.append(self)
            cases = "".join(f"<testcase classname={quoteattr(c)} name={quoteattr(n)} time='{times[i]}'/>"
                            for i in times for c, n in [pr.junit_address(i)])
            xml = self.log.replace(".log", ".xml")
            (folder / xml).parent.mkdir(parents=True, exist_ok=True)
            (folder / xml).write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")
            return ProcessResult(0, False, 1.0)

        monkeypatch.setattr(Command, "execute", execute)
        return seen

    return fake


def test_a_test_that_looks_slower_is_retimed_with_its_controls(tmp_path, fake_retiming):
    names = ["a.py::slow", "a.py::c1", "a.py::c2", "a.py::c3"]
    previous = PastBundle("p", tmp_path, Outcomes(tuple(TestResult("cpu", n, "passed", 0.1 if n == names[0] else 1.0)
                                                        for n in names), {}))
    now = [TestResult("cpu", n, "passed", 2.0 if n == names[0] else 1.0) for n in names]
    commands = fake_retiming({"a.py::slow": 0.15, "a.py::c1": 2.0, "a.py::c2": 2.0, "a.py::c3": 2.0})
    tests, retimings = bundle.retime_suspects(_request(2), tmp_path, {"cpu": _run(rootdir="/src")}, now, previous)
    assert [c.log for c in retimings] == ["retime/cpu-1.log", "retime/cpu-2.log"] and retimings == commands
    assert retimings[0].argv[-4:] == ("/src/a.py::c1", "/src/a.py::slow", "/src/a.py::c2", "/src/a.py::c3")
    assert (tests[0].retimed_s, tests[0].retime_factors) == ((0.15, 0.15), (2.0, 2.0))  # controls ran 2x slower
    assert tests[1:] == now[1:]  # controls keep their own records


def test_no_retiming_without_a_previous_bundle_a_finished_run_or_retimes(tmp_path, fake_retiming):
    commands = fake_retiming({})
    previous = PastBundle("p", tmp_path, Outcomes((TestResult("cpu", "a.py::t", "passed", 0.1),), {}))
    now = [TestResult("cpu", "a.py::t", "passed", 2.0)]
    assert bundle.retime_suspects(_request(3), tmp_path, {"cpu": _run()}, now, None) == (now, [])
    assert bundle.retime_suspects(_request(0), tmp_path, {"cpu": _run()}, now, previous) == (now, [])
    crashed = {"cpu": _run("crashed", "killed")}
    assert bundle.retime_suspects(_request(3), tmp_path, crashed, now, previous) == (now, [])
    assert commands == []

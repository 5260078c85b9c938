"""evidence.bundle: the steps of a bundle that need no real pytest run (the verdict, crash reasons, re-timing), and
env.json and commands.txt: where a bundle was made, and how to make it again."""

from __future__ import annotations

import sys
from pathlib import Path
from xml.sax.saxutils import quoteattr

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.evidence import bundle
from detsim.track.evidence import pytest_runs as pr
from detsim.track.evidence.outcomes import (BundleResults, CollectResult, BundleChanges, DeviceRun, NewFailure, Outcomes,
                                           Request, TestResult)
from detsim.track.evidence.previous import PastBundle
from detsim.track.evidence.pytest_runs import Command, ProcessResult

OK_COLLECT = CollectResult(0, False, 0.5, "ok", "pytest exit 0", 3, "collect.log")


def _run(status: str = "ok", why: str = "pytest exit 1 (some tests failed)", rootdir: str | None = "/src") -> DeviceRun:
    return DeviceRun("pytest-cpu.log", "junit-cpu.xml", {"passed": 1}, status, why, rootdir=rootdir)


def _outcomes(*outcomes: str, runs=None) -> Outcomes:
    tests = tuple(TestResult("cpu", f"a.py::t{i}", o, 0.1) for i, o in enumerate(outcomes))
    return Outcomes(tests, runs or {"cpu": _run()})


def verdict(collect: CollectResult, outcomes: Outcomes, comparison: BundleChanges | None) -> tuple:
    """(exit code, verdict) of a bundle with these results."""
    results = BundleResults(_request(), "20260101T000000Z", collect, outcomes, comparison)
    return results.exit_code(), results.verdict()


def test_verdict_with_no_previous_bundle_counts_every_failure_as_new():
    assert verdict(OK_COLLECT, _outcomes("passed", "failed", "error"), None) == (
        (ExitCode.REGRESSED, "2 new failures"))
    assert verdict(OK_COLLECT, _outcomes("passed", "skipped"), None) == (ExitCode.OK, "ok")


def test_verdict_against_a_previous_bundle_forgives_known_failures():
    known = verdict(OK_COLLECT, _outcomes("failed"), BundleChanges())
    assert known == (ExitCode.OK, "ok: no new failures (1 known)")
    new = BundleChanges(new_failures=(NewFailure("cpu", "a.py::t0", "failed", None, "passed"),))
    assert verdict(OK_COLLECT, _outcomes("failed"), new) == (ExitCode.REGRESSED, "1 new failure")


def test_not_measured_wins_and_says_what_happened():
    crashed = _outcomes("failed", runs={"cpu": _run(), "cuda": _run("crashed", "killed by SIGKILL")})
    assert verdict(OK_COLLECT, crashed, None) == (ExitCode.UNMEASURED, "not measured: cuda: crashed, killed by SIGKILL (and 1 new failure)")
    broken = CollectResult(2, False, 0.5, "crashed", "pytest exit 2: ImportError", 0, "collect.log")
    not_run = Outcomes((), {"cpu": _run("not run", "collection did not complete")})
    assert verdict(broken, not_run, None)[1] == (
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
    tests, retimings = bundle.retime_suspects(_request(retime=2), tmp_path, {"cpu": _run(rootdir="/src")}, now, previous)
    assert [c.log for c in retimings] == ["retime/cpu-1.log", "retime/cpu-2.log"] and retimings == commands
    assert retimings[0].argv[-4:] == ("/src/a.py::c1", "/src/a.py::slow", "/src/a.py::c2", "/src/a.py::c3")
    assert (tests[0].retimed_s, tests[0].retime_factors) == ((0.15, 0.15), (2.0, 2.0))  # controls ran 2x slower
    assert tests[1:] == now[1:]  # controls keep their own records


def test_no_retiming_without_a_previous_bundle_a_finished_run_or_retimes(tmp_path, fake_retiming):
    commands = fake_retiming({})
    previous = PastBundle("p", tmp_path, Outcomes((TestResult("cpu", "a.py::t", "passed", 0.1),), {}))
    now = [TestResult("cpu", "a.py::t", "passed", 2.0)]
    assert bundle.retime_suspects(_request(retime=3), tmp_path, {"cpu": _run()}, now, None) == (now, [])
    assert bundle.retime_suspects(_request(retime=0), tmp_path, {"cpu": _run()}, now, previous) == (now, [])
    crashed = {"cpu": _run("crashed", "killed")}
    assert bundle.retime_suspects(_request(retime=3), tmp_path, crashed, now, previous) == (now, [])
    assert commands == []


def _request(**changes) -> Request:
    fields = dict(area="parity", selection=("tests/a.py",), devices=("cpu",), cwd=Path("/src/my project"),
                  asked_devices=(), out_root=Path("reports"), timeout=None, retime=3)
    return Request(**{**fields, **changes})


def test_invocation_names_only_options_that_differ_from_their_defaults():
    assert bundle.invocation(_request()) == "detsim-track evidence tests/a.py --area parity"
    changed = _request(out_root=Path("/tmp/r"), asked_devices=("cpu", "cuda"), timeout=90.0, retime=0)
    assert bundle.invocation(changed) == ("detsim-track evidence tests/a.py --area parity --out-root /tmp/r "
                                              "--device cpu --device cuda --timeout 90 --retime 0")
    with_options = _request(selection=("tests/a.py", "-k", "not slow"))
    assert bundle.invocation(with_options) == "detsim-track evidence --area parity -- tests/a.py -k 'not slow'"


def test_commands_export_what_was_set_and_unset_the_rest(monkeypatch):
    for name in bundle.COMMAND_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x --tb=short")
    collect = Command(("python", "-m", "pytest", "--collect-only"), "collect.log")
    text = bundle.commands_text(_request(), [collect], [])
    lines = text.splitlines()
    assert lines[0] == "# Commands run by `detsim-track evidence tests/a.py --area parity` for this bundle, in order."
    assert "cd '/src/my project'" in lines and "export PYTEST_ADDOPTS='-x --tb=short'" in lines
    unset = next(line for line in lines if line.startswith("unset "))
    assert "PYTHONPATH" in unset.split() and "PYTEST_ADDOPTS" not in unset.split()
    assert lines[-1] == collect.shell() and bundle.RETIME_HEADER not in text


def test_retimings_follow_their_header():
    retime = Command(("python", "-m", "pytest", "-q"), "retime/cpu-1.log")
    lines = bundle.commands_text(_request(), [], [retime]).splitlines()
    assert lines[-3:] == [bundle.RETIME_HEADER, 'mkdir -p "$BUNDLE/retime"', retime.shell()]


def test_environment_adds_pytest_interpreter_diff_and_gpu(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTEST_ADDOPTS", "-q")
    env = bundle.bundle_environment(tmp_path)
    assert env["python_executable"] == sys.executable and env["cwd"] == str(tmp_path)
    assert env["git_diff_sha256"] is None  # not a git work tree
    assert env["env"]["PYTEST_ADDOPTS"] == "-q" and "output" in env["nvidia_smi"]
    for key in ("commit", "torch", "cuda", "cpu", "torch_threads", "pytest"):
        assert key in env

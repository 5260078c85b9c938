"""The records of a bundle turn into exactly the dicts results.json holds, and back."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import pytest

from detsim.track.base.exitcodes import ExitCode
from detsim.track.evidence.outcomes import (FORMAT, BundleResults, CollectResult, BundleChanges, DeviceRun, DurationMove,
                                           Fixed, LoggedWarning, Outcomes, Request, TestResult)

from detsim.track.base.status import Status

REQUEST = Request(area="parity", selection=("tests/a.py", "-k", "x"), devices=("cpu",), cwd=Path("/src"),
                  asked_devices=(), out_root=Path("reports"), timeout=None, retime=3)


def _run(**changes) -> DeviceRun:
    fields = dict(log="pytest-cpu.log", junit="junit-cpu.xml", counts={"passed": 1, "failed": 1}, status="ok",
                  why="pytest exit 1 (some tests failed)",
                  warnings=(LoggedWarning("UserWarning: w", "a.py:1", ("t",)),),
                  rootdir="/src", exit_code=1, wall_s=1.5, timed_out=False)
    return DeviceRun(**{**fields, **changes})


def test_a_test_result_has_the_keys_of_results_json_and_reads_back():
    junit = {"nodeid": "a.py::t", "outcome": "failed", "duration_s": 0.25, "skip_reason": None, "message": "E: x"}
    test = TestResult("cuda", **junit)  # as read_junit gives it
    record = json.loads(json.dumps(asdict(test)))
    assert record == {**junit, "device": "cuda", "retimed_s": [], "retime_factors": []}
    assert TestResult.from_record(json.loads(json.dumps(record))) == test
    assert test.key == ("cuda", "a.py::t") and test.failing
    assert not TestResult("cpu", "a.py::t", "xfailed", 0.1).failing


def test_a_run_that_never_started_has_no_timed_out_key():
    ran = json.loads(json.dumps(_run().as_record()))
    assert ran["timed_out"] is False and ran["warnings"] == [{"text": "UserWarning: w", "location": "a.py:1",
                                                             "tests": ["t"]}]
    not_run = DeviceRun("pytest-cpu.log", "junit-cpu.xml", {"passed": 0}, "not run", "collection did not complete")
    assert not_run.as_record() == {"log": "pytest-cpu.log", "junit": "junit-cpu.xml", "counts": {"passed": 0},
                                   "status": "not run", "why": "collection did not complete", "warnings": (),
                                   "rootdir": None, "exit_code": None, "wall_s": None}
    assert DeviceRun.from_record(ran) == _run()
    assert DeviceRun.from_record({}).status is Status.NOT_RUN
    assert DeviceRun.from_record({"status": "crashed"}).status is Status.CRASHED
    with pytest.raises(ValueError):  # a corrupt previous bundle is refused, not compared
        DeviceRun.from_record({"status": "fine"})


def test_warning_texts_merge_devices_and_blank_addresses():
    runs = {"cuda": _run(warnings=(LoggedWarning("W: at 0x1", "a.py:1"),)),
            "cpu": _run(warnings=(LoggedWarning("W: at 0x2", "a.py:2"), LoggedWarning("V: other", None)))}
    texts = Outcomes((), runs).warning_texts()
    assert [(w.text, w.location, w.devices) for w in texts.values()] == [
        ("W: at 0x2", "a.py:2", ("cpu", "cuda")), ("V: other", None, ("cpu",))]  # cpu first: devices sorted
    assert Outcomes((), runs).status("cpu") == "ok" and Outcomes((), runs).status("xpu") == "not run"


def test_a_comparison_is_one_flat_record_with_its_changed_flag():
    empty = BundleChanges(previous="20260101T000000Z")
    record = empty.as_record()
    assert set(record) == {"new_failures", "fixed", "outcome_changes", "added", "removed", "new_warnings",
                           "gone_warnings", "run_changes", "slower", "faster", "faster_unjudged", "load_factors",
                           "previous", "changed_artifacts", "previous_problems", "changed"}
    assert record["changed"] is False and record["slower"] == () and record["load_factors"] == {}
    assert BundleChanges(slower=(DurationMove("cpu", "a.py::t", 0.2, 2.0, 10.0, 2),)).changed
    assert BundleChanges(fixed=(Fixed("cpu", "a.py::t", "passed", "failed"),)).as_record()["fixed"] == (
        {"device": "cpu", "nodeid": "a.py::t", "now": "passed", "was": "failed"},)
    assert not BundleChanges(faster_unjudged=3, load_factors={"cpu": 4.0}).changed  # notes only


def test_bundle_results_record():
    collect = CollectResult(0, False, 0.5, "ok", "pytest exit 0", 2, "collect.log")
    tests = (TestResult("cpu", "a.py::t", "passed", 0.1), TestResult("cpu", "a.py::u", "failed", 0.2))
    results = BundleResults(REQUEST, "20260101T000000Z", collect, Outcomes(tests, {"cpu": _run()}), None)
    record = json.loads(json.dumps(results.as_record()))
    assert (results.exit_code(), results.verdict()) == (ExitCode.REGRESSED, "1 new failure")
    assert record["exit_code"] == 1 and type(record["exit_code"]) is int
    assert (record["format"], record["area"], record["cwd"], record["selection"], record["devices"]) == (
        FORMAT, "parity", "/src", ["tests/a.py", "-k", "x"], ["cpu"])
    assert record["measured"] is True and record["comparison"] is None and record["verdict"] == "1 new failure"
    assert [t["nodeid"] for t in record["tests"]] == ["a.py::t", "a.py::u"]
    assert record["collect"]["collected"] == 2 and record["runs"]["cpu"]["status"] == "ok"
    crashed = BundleResults(REQUEST, "s", collect, Outcomes((), {"cpu": _run(status="crashed")}), None)
    assert crashed.measured is False


def test_a_bundles_named_outputs_are_its_tests_by_device_and_node_id_in_order():
    tests = (TestResult("cuda", "a.py::t", "passed", 0.1), TestResult("cpu", "b.py::t", "failed", 0.2),
             TestResult("cpu", "a.py::t", "skipped", 0.0))
    outputs = Outcomes(tests, {}).outputs()
    assert list(outputs) == [("cpu", "a.py::t"), ("cpu", "b.py::t"), ("cuda", "a.py::t")]
    assert outputs["cpu", "b.py::t"] is tests[1]

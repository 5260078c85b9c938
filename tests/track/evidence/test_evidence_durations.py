"""The duration rule, the load factor, "faster" against history, and the re-timing plan, on synthetic times."""

from __future__ import annotations

import json
from dataclasses import asdict
from detsim.track.evidence import durations
from detsim.track.evidence.outcomes import Outcomes, TestResult


def _results(*tests, warnings=()):
    """A results.json of one cpu run: tests as (node id, outcome, seconds, *re-timings)."""
    return {"runs": {"cpu": {"status": "ok", "warnings": [{"text": w, "location": "x.py:1"} for w in warnings]}},
            "tests": [{"device": "cpu", "nodeid": n, "outcome": o, "duration_s": d, "retimed_s": list(r),
                       "retime_factors": [1.0] * len(r)} for n, o, d, *r in tests]}


def judge(tests: list[dict], previous: dict, history: list[dict]) -> dict:
    """:func:`durations.judge_durations` on results.json data, as the record results.json holds."""
    def tests_of(results: dict) -> tuple[TestResult, ...]:
        return Outcomes.from_record(results).tests

    return json.loads(json.dumps(durations.judge_durations(tests_of({"tests": tests}), tests_of(previous),
                                                                  [tests_of(h) for h in history]), default=asdict))


def test_durations_rule_needs_factor_and_floor_and_survives_retiming():
    assert durations.move(1.2, 0.5) == "slower"
    assert durations.move(0.9, 0.3) == "slower"
    assert durations.move(0.5, 0.01) is None  # 50x, but only 0.49 s
    assert durations.move(9.0, 6.0) is None  # 3 s, but only 1.5x
    assert durations.move(0.2, 1.0) == "faster"
    previous = _results(("t", "passed", 0.2))
    spike = _results(("t", "passed", 2.0, 0.21, 0.25))  # a load spike on the first run, gone on re-timing
    assert judge(spike["tests"], previous, [previous])["slower"] == []
    real = _results(("t", "passed", 2.0, 1.9, 2.1))
    assert [t["now_s"] for t in judge(real["tests"], previous, [previous])["slower"]] == [1.9]


def test_a_busier_machine_is_divided_out():
    steady = [(f"c{i}", "passed", 1.0) for i in range(5)]
    previous = _results(*steady, ("t", "passed", 0.3))
    loaded = [(f"c{i}", "passed", 3.0 + 0.1 * i) for i in range(5)]  # everything about 3x slower
    busy = judge(_results(*loaded, ("t", "passed", 0.9))["tests"], previous, [previous])
    assert busy["slower"] == [] and busy["load_factors"] == {"cpu": 3.15}  # median of 3.0, 3.0, ..., 3.4
    real = judge(_results(*loaded, ("t", "passed", 4.0))["tests"], previous, [previous])
    assert [(t["nodeid"], t["now_s"]) for t in real["slower"]] == [("t", round(4.0 / 3.25, 3))]
    quiet = [(f"c{i}", "passed", 0.2) for i in range(5)]  # a quieter machine never inflates times
    assert judge(_results(*quiet, ("t", "passed", 0.3))["tests"], previous, [previous])[
        "load_factors"] == {"cpu": 1.0}
    retimed = _results(*steady, ("t", "passed", 2.0, 2.4))
    retimed["tests"][-1]["retime_factors"] = [4.0]  # its controls ran 4x slower during the re-timing
    assert judge(retimed["tests"], previous, [previous])["slower"] == []
    assert durations.load_factor([(5.0, 1.0), (5.0, 1.0)]) == 1.0  # too few tests to tell


def test_faster_needs_several_earlier_measurements():
    now = _results(("t", "passed", 0.2))["tests"]
    once = _results(("t", "passed", 2.0))  # one earlier time: maybe itself a load spike
    judged = judge(now, once, [once])
    assert (judged["faster"], judged["faster_unjudged"]) == ([], 1)
    history = [once, _results(("t", "passed", 1.8)), _results(("t", "passed", 1.9))]
    judged = judge(now, history[0], history)
    assert [(t["was_s"], t["measurements"]) for t in judged["faster"]] == [(1.8, 3)]


def _test(nodeid: str, seconds: float, outcome: str = "passed", device: str = "cpu", retimed=()) -> TestResult:
    return TestResult(device, nodeid, outcome, seconds, retimed_s=tuple(retimed), retime_factors=(1.0,) * len(retimed))


def test_the_rule_is_strict_at_both_limits():
    assert durations.move(2.0, 1.0) is None  # exactly 2x (1 s more): not beyond the factor
    assert durations.move(2.01, 1.0) == durations.Move.SLOWER
    assert durations.move(0.75, 0.25) is None  # 3x, but exactly 0.5 s more: not beyond the floor
    assert durations.move(0.25, 0.75) is None  # a third, but exactly 0.5 s less
    assert durations.move(0.5, 1.01) == durations.Move.FASTER
    assert durations.move(0.5, 1.0) is None  # exactly half


def test_load_factor_is_a_median_of_long_enough_tests_never_below_one():
    assert durations.load_factor([(2.0, 1.0), (3.0, 1.0), (10.0, 1.0)]) == 3.0
    assert durations.load_factor([(2.0, 1.0), (3.0, 1.0), (10.0, 0.01)]) == 1.0  # 0.01 s before: too short
    assert durations.load_factor([(0.5, 1.0), (0.5, 1.0), (0.5, 1.0)]) == 1.0  # quieter: still 1
    assert durations.load_factor([(1.23456, 1.0)] * 3) == 1.235  # rounded to 3 decimals


def test_best_times_take_the_least_of_runs_and_retimings_over_bundles():
    first = [_test("a", 1.0, retimed=(0.8, 0.9)), _test("b", 0.1, outcome="failed")]
    second = [_test("a", 0.7), _test("a", 5.0, device="cuda")]
    best = durations.best_times([first, second])
    assert best == {("cpu", "a"): (0.7, 4), ("cuda", "a"): (5.0, 1)}  # failed tests never count


def test_no_plan_when_nothing_looks_slower():
    previous = [_test("a", 1.0), _test("b", 1.0)]
    assert durations.retime_plan([_test("a", 1.2), _test("b", 1.1)], previous, "cpu") is None
    assert durations.retime_plan([_test("a", 9.0, outcome="failed")], previous, "cpu") is None  # only passed


def test_plan_names_suspects_and_controls_of_its_device_only():
    previous = [_test("slow", 0.2), _test("c1", 0.3), _test("c2", 0.01), _test("x", 0.2, device="cuda")]
    now = [_test("slow", 2.0), _test("c1", 0.3), _test("c2", 0.02), _test("x", 9.0, device="cuda")]
    plan = durations.retime_plan(now, previous, "cpu")
    assert plan.device == "cpu" and plan.suspects == ("slow",)
    assert plan.controls == ("c1",)  # c2 took under FACTOR_MIN_S before: it cannot measure the load
    assert plan.control_before == {"c1": 0.3}
    assert durations.retime_plan(now, previous, "cuda").suspects == ("x",)


def test_controls_spread_over_earlier_times_or_fall_back_to_the_fastest():
    before = {("cpu", f"t{i}"): (0.1 * (i + 1), 1) for i in range(9)}
    candidates = [_test(f"t{i}", 1.0) for i in reversed(range(9))]
    picked = [t.nodeid for t in durations.pick_controls(candidates, before)]
    assert picked == ["t0", "t2", "t4", "t6", "t8"]  # CONTROLS of them, shortest to longest earlier time
    short = {("cpu", "p"): (0.01, 1), ("cpu", "q"): (0.02, 1)}
    assert [t.nodeid for t in durations.pick_controls([_test("p", 0.5), _test("q", 0.1)], short)] == ["q"]


def test_retime_order_rotates_suspects_and_puts_a_control_first():
    assert durations.interleave(["c1", "c2"], ["s1", "s2", "s3"]) == ["c1", "s1", "s2", "c2", "s3"]
    assert durations.interleave([], ["s1"]) == ["s1"]
    assert durations.interleave(["c1", "c2", "c3"], ["s1"]) == ["c1", "s1", "c2", "c3"]
    plan = durations.RetimePlan("cpu", ("s1", "s2"), ("c1",), {"c1": 0.5})
    assert plan.order(1) == ["c1", "s2", "s1"] and plan.order(2) == ["c1", "s1", "s2"]


def test_a_retiming_load_factor_comes_from_its_controls():
    plan = durations.RetimePlan("cpu", ("s",), ("c1", "c2", "c3"), {"c1": 1.0, "c2": 1.0, "c3": 1.0})
    assert plan.load_factor({"c1": 2.0, "c2": 3.0, "c3": 4.0, "s": 100.0}) == 3.0  # the suspect does not count
    assert plan.load_factor({"c1": 2.0, "s": 1.0}) == 1.0  # controls that failed: too few to tell

"""The check from start to end on the CPU, small: the steps asked for run, the others say why not, a step that
hangs costs only its own box. Determinism and the CUDA-against-CPU comparison, drawn from the jobs' answers."""

import json
from dataclasses import replace
from pathlib import Path

from detsim.track.base.golden import golden_dir
from detsim.track.base.output import json_text
from detsim.track.base.status import Status
from detsim.track.gpu import check
from detsim.track.gpu.check import STEP_KINDS, Options, child_env, cuda_matches_cpu, determinism, run_check
from detsim.track.gpu.plan import GpuPath, make_plan
from detsim.track.gpu.steps import StepResult
from detsim.track.gpu.goals import GOALS

ROOT = Path(__file__).resolve().parents[3]
CASE = "c02_xds_xbeam_quirk"
PATH = GpuPath("eager", "float32")


def _plan(**changes):
    plan = replace(make_plan(True, (CASE,)), paths=(PATH,), speed_workloads=("P2@8", "P1@8"),
                   throughput_workload="P2@8", warm_calls=1)
    return replace(plan, **changes)


def _options(kinds):
    return Options(root=ROOT, golden_dir=golden_dir(ROOT), kinds=kinds)


def test_a_step_not_asked_for_is_recorded_as_skipped_and_the_record_is_strict_json():
    """(the steps running end to end: tests/test_ci_gpu.py)"""
    lines = []
    record = run_check(_plan(), _options(("nanobragg",)), progress=lines.append)
    steps = {s["name"]: s for s in record["steps"]}
    assert {s["status"] for s in record["steps"]} == {"skipped"}
    assert {"speed eager-float32", "parity eager-float32", "determinism eager-float32", "device tests",
            "asv benchmarks", "atomics"} < steps.keys()
    assert steps["probe"]["status"] == "skipped" and "--steps" in steps["probe"]["reason"]
    assert "no nanoBragg.c binary" in steps["nanobragg"]["reason"]
    assert record["exit_code"] == 0 and record["dry_run"] and record["plan"]["golden_cases"] == [CASE]
    assert len(lines) == len(record["steps"])
    assert {row["key"] for row in record["goals"]} == {t.key for t in GOALS}
    assert {row["verdict"] for row in record["goals"]} == {"not measured"} and record["side_by_side"] == []
    assert json.loads(json_text(record)) == record


def test_a_step_past_its_box_is_timed_out_and_the_rest_still_runs():
    plan = _plan(boxes=replace(_plan().boxes, speed={"eager": 0.3, "compiled": 0.3, "triton": 0.3}))
    record = run_check(plan, _options(("speed", "parity", "determinism")))
    steps = {s["name"]: s for s in record["steps"]}
    assert steps["speed eager-float32"]["status"] == "timed out"
    assert steps["parity eager-float32"]["status"] == "ok"
    assert steps["determinism eager-float32"]["status"] == "crashed"  # nothing to compare: never a silent pass
    assert record["exit_code"] == 2


def test_the_speed_step_is_asked_for_the_goals_measurements(monkeypatch):
    asked = {}

    def fake_step(name, entry, job, judge, **box):
        asked[name] = (entry, job)
        return StepResult(name, Status.OK)

    monkeypatch.setattr(check, "run_job_step", fake_step)
    plan = make_plan(True, (CASE,))
    record = run_check(plan, _options(("speed",)))
    entry, job = asked["speed triton-float64"]
    assert entry == "detsim.track.gpu.jobs:speed_job" and job.workloads == ("P2@32", "P4096@32", "P3G@8")
    assert job.profile == ("P2@32",) and job.overhead == "P1@8" and job.path == ("triton", "float64")
    assert (job.warm_calls, job.repeat_s, job.fixed_cost_calls) == (plan.warm_calls, plan.repeat_s,
                                                                   plan.fixed_cost_calls)
    assert record["plan"]["throughput_workload"] == "P3G@8" and record["plan"]["fixed_cost_calls"] == 3
    assert {row["verdict"] for row in record["goals"]} == {"not measured"}


def test_triton_runs_under_the_interpreter_on_a_cpu_only():
    triton = GpuPath("triton", "float32")
    assert child_env(make_plan(True, ()), triton, ROOT)["TRITON_INTERPRET"] == "1"
    assert child_env(replace(make_plan(True, ()), device="cuda"), triton, ROOT)["TRITON_INTERPRET"] == "0"
    assert child_env(make_plan(True, ()), PATH, ROOT)["PYTHONPATH"].split(":")[0] == str(ROOT)
    assert set(STEP_KINDS) >= {"tests", "speed", "parity", "determinism", "benchmarks"}


def _speed(first, last):
    return StepResult("speed", Status.OK, data={"workloads": {"P2": {"sha256": [first, last]}}})


def _parity(sha):
    return StepResult("parity", Status.OK, data={"hash": {"workload": "P2", "sha256": sha}})


def test_identical_runs_are_ok():
    result = determinism("determinism triton-float32", "P2", _speed("a", "a"), _parity("a"))
    assert result.status is Status.OK and result.data["in_process"] and result.data["across_processes"]


def test_a_run_that_differs_in_one_process_or_across_processes_fails_and_says_where():
    within = determinism("determinism triton-float32", "P2", _speed("a", "b"), _parity("a"))
    assert within.status is Status.FAILED and "in one process" in within.reason
    across = determinism("determinism triton-float32", "P2", _speed("a", "a"), _parity("c"))
    assert across.status is Status.FAILED and across.reason.endswith("across processes")
    assert across.data == {"workload": "P2", "in_process": True, "across_processes": False, "streams": 1}


def test_a_missing_render_is_not_taken_for_a_match():
    missing = determinism("determinism triton-float32", "P2", StepResult("speed", Status.TIMED_OUT), _parity("a"))
    assert missing.status is Status.CRASHED
    one_process = determinism("determinism triton-float32", "P2", _speed("a", "a"),
                              StepResult("parity", Status.TIMED_OUT))
    assert one_process.data["across_processes"] is None and "one process only" in one_process.reason


def test_cuda_against_cpu_counts_the_cases_with_the_same_bits():
    cuda = StepResult("c", Status.OK, data={"cases": {"a": {"sha256": "1"}, "b": {"sha256": "2"},
                                                          "c": {"error": "x"}}})
    cpu = StepResult("p", Status.OK, data={"cases": {"a": {"sha256": "1"}, "b": {"sha256": "3"},
                                                         "c": {"sha256": "4"}}})
    result = cuda_matches_cpu(cuda, cpu)
    assert result.status is Status.OK
    assert result.data == {"compared": 2, "identical": 1, "differing": ["b"]}
    assert cuda_matches_cpu(cuda, StepResult("p", Status.TIMED_OUT)).status is Status.CRASHED

"""The check from start to end on the CPU, small: the steps asked for run, the others say why not, a step that
hangs costs only its own box."""

import json
from dataclasses import replace
from pathlib import Path

from detsim.track.base.golden import golden_dir
from detsim.track.gpu.check import STEP_KINDS, Options, child_env, run_check
from detsim.track.gpu.plan import GpuPath, dry_plan
from detsim.track.base.output import json_text

ROOT = Path(__file__).resolve().parents[3]
CASE = "c02_xds_xbeam_quirk"
PATH = GpuPath("eager", "float32")


def _plan(**changes):
    plan = replace(dry_plan((CASE,)), paths=(PATH,), speed_workloads=("P2@8", "P1@8"), warm_calls=1)
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
    assert json.loads(json_text(record)) == record


def test_a_step_past_its_box_is_timed_out_and_the_rest_still_runs():
    plan = _plan(boxes=replace(_plan().boxes, speed={"eager": 0.3, "compiled": 0.3, "triton": 0.3}))
    record = run_check(plan, _options(("speed", "parity", "determinism")))
    steps = {s["name"]: s for s in record["steps"]}
    assert steps["speed eager-float32"]["status"] == "timed out"
    assert steps["parity eager-float32"]["status"] == "ok"
    assert steps["determinism eager-float32"]["status"] == "crashed"  # nothing to compare: never a silent pass
    assert record["exit_code"] == 2


def test_triton_runs_under_the_interpreter_on_a_cpu_only():
    triton = GpuPath("triton", "float32")
    assert child_env(dry_plan(()), triton, ROOT)["TRITON_INTERPRET"] == "1"
    assert child_env(replace(dry_plan(()), device="cuda"), triton, ROOT)["TRITON_INTERPRET"] == "0"
    assert child_env(dry_plan(()), PATH, ROOT)["PYTHONPATH"].split(":")[0] == str(ROOT)
    assert set(STEP_KINDS) >= {"tests", "speed", "parity", "determinism", "benchmarks"}

"""The device check's plan: paths, workloads and time boxes."""

import pytest

from detsim.rendering.engine import MODES
from dataclasses import replace

from detsim.track.gpu.plan import PATHS, REFERENCE_PATH, make_plan, path_named, workload
from detsim.track.gpu.goals import MIN_THROUGHPUT_PIXEL_STEPS


def test_the_paths_are_every_mode_in_both_dtypes_once():
    assert sorted((p.mode, p.dtype) for p in PATHS) == sorted((m, d) for m in MODES for d in ("float64", "float32"))
    assert REFERENCE_PATH in PATHS and path_named("compiled-float32") == PATHS[3]
    with pytest.raises(ValueError, match="not a path"):
        path_named("compiled-bfloat16")


def test_the_full_plan_measures_the_reference_workloads_on_cuda():
    plan = make_plan(False)
    assert plan.device == "cuda" and not plan.dry_run and plan.golden_cases is None
    p2, large, throughput = (workload(name) for name in plan.speed_workloads)
    assert (p2.pixels, p2.steps) == (1024, 200) and (large.pixels, large.steps) == (4096, 1)
    assert plan.throughput_workload == throughput.name and throughput.pixel_steps >= MIN_THROUGHPUT_PIXEL_STEPS
    assert (throughput.pixels, throughput.steps) == (2048, 800)
    assert plan.determinism_workload == "P2" and plan.overhead_workload == "P1@8"
    assert plan.warm_calls >= 3 and plan.fixed_cost_calls >= 10 and plan.repeat_s > 0
    assert plan.budget_s <= 8 * 60  # the check's limit on one H100
    assert all(set(box) == set(MODES) for box in (plan.boxes.speed, plan.boxes.parity))


def test_the_dry_plan_keeps_the_per_pixel_work_at_a_small_size():
    plan = make_plan(True, ("c02_xds_xbeam_quirk",))
    assert plan.device == "cpu" and plan.dry_run and plan.golden_cases == ("c02_xds_xbeam_quirk",)
    full = make_plan(False)
    assert len(plan.speed_workloads) == len(full.speed_workloads)
    for small, big in zip(plan.speed_workloads, full.speed_workloads):
        assert workload(small).steps == workload(big).steps and workload(small).pixels < workload(big).pixels
    assert workload(plan.throughput_workload).steps == workload(full.throughput_workload).steps
    assert plan.overhead_workload == full.overhead_workload and plan.fixed_cost_calls >= 2


def test_the_throughput_workload_must_be_measured_by_the_speed_step():
    with pytest.raises(ValueError, match="not among the speed workloads"):
        replace(make_plan(True), speed_workloads=("P2@32",))


def test_an_unknown_workload_is_refused():
    with pytest.raises(ValueError, match="not a workload"):
        workload("P3@32")
    with pytest.raises(ValueError, match="not a workload"):
        workload("P3G@x")
    assert workload("P3G@8").pixel_steps == 8 * 8 * 800

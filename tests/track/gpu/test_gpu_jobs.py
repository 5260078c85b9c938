"""The device check's jobs, run in this process on tiny workloads: one render on a path (timed, hashed, its
launches counted, under Triton's interpreter too), the fixed cost's configurations, the machine's facts, each
path's speed and golden parity, asv's device benchmarks measured by the suite's own setup and track methods, and
a job read back from its JSON."""

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from detsim.track.base.golden import golden_dir
from detsim.track.base.hashing import image_sha256
from detsim.track.base.status import Status
from detsim.track.gpu.jobs import (BENCHMARK, BenchmarksJob, ParityJob, ProbeJob, SpeedJob, _interpreted_launches,
                                   benchmarks_job, fused, judge_benchmarks,
                                   judge_parity, judge_speed, launches, parity_job, probe_job, ready, render, speed_job,
                                   summarize, varied_configs, workload_config)
from detsim.track.gpu.plan import GpuPath

ROOT = Path(__file__).resolve().parents[3]
CASE = "c02_xds_xbeam_quirk"  # the smallest case


def test_a_render_is_the_engine_image_with_its_hash():
    config = workload_config("P2@8")
    device = ready("cpu")
    done = render(config, GpuPath("eager", "float32"), device)
    assert done.image.shape == (8, 8) and done.image.dtype == np.float64 and done.seconds > 0
    assert done.sha256 == image_sha256(done.image)
    assert render(config, GpuPath("eager", "float64"), device).sha256 != done.sha256  # the dtype is the path's


def test_only_a_compiled_or_triton_path_uses_the_fused_kernel():
    config = workload_config("P2@8")
    assert fused(config, GpuPath("compiled", "float32"), torch.device("cpu"))
    assert not fused(config, GpuPath("eager", "float32"), torch.device("cpu"))


def test_launches_count_the_aten_calls_and_leave_kernels_to_cuda():
    counts = launches(workload_config("P1@8"), GpuPath("eager", "float32"), torch.device("cpu"))
    assert counts["aten_ops"] > 10 and counts["kernels"] is None and counts["memory_ops"] is None
    alone = launches(workload_config("P1@8"), GpuPath("eager", "float32"), torch.device("cpu"), render_only=True)
    assert 0 < alone["aten_ops"] < counts["aten_ops"]  # the set-up's calls are not the render's
    assert alone["interpreted_launches"] is None  # the interpreter is off here


def test_under_the_interpreter_each_triton_kernel_launch_is_counted(monkeypatch):
    from triton.runtime.interpreter import GridExecutor

    monkeypatch.setenv("TRITON_INTERPRET", "1")
    monkeypatch.setattr(GridExecutor, "__call__", lambda self, *args, **kwargs: None)
    with _interpreted_launches() as count:
        for _ in range(3):
            GridExecutor(lambda x: None, ["x"], (1,))(torch.zeros(1))
    assert count() == 3
    GridExecutor(lambda x: None, ["x"], (1,))(torch.zeros(1))
    assert count() == 3  # counted inside only


def test_each_new_configuration_differs_from_the_others_in_its_distance_alone():
    configs = varied_configs("P1@8", 3)
    same = workload_config("P1@8")
    assert len({c.detector.distance_mm for c in configs}) == 3 and same.detector.distance_mm not in \
        {c.detector.distance_mm for c in configs}
    assert all(abs(c.detector.distance_mm - same.detector.distance_mm) < 1e-5 for c in configs)
    assert replace(configs[0], detector=same.detector) == same


def _job(**changes) -> SpeedJob:
    return replace(SpeedJob(("eager", "float32"), "cpu", ("P2@8", "P1@8"), profile=("P2@8",), overhead="P1@8",
                            warm_calls=2, repeat_s=30.0, fixed_cost_calls=2, threads=1, deadline_s=60), **changes)


def test_each_workload_gets_kernel_end_to_end_and_cold_rates_and_two_hashes():
    data = speed_job(_job())
    p2 = data["workloads"]["P2@8"]
    assert p2["pixel_steps"] == 8 * 8 * 200 and data["clock"] == "host clock"
    for kind in ("kernel", "end_to_end"):
        t = p2[kind]
        assert t["calls"] == 2 and t["best_s"] <= t["median_s"]
        assert abs(t["pixel_steps_per_s"] * t["median_s"] / p2["pixel_steps"] - 1) < 1e-3
    assert len(p2["sha256"]) == 2 and p2["sha256"][0] == p2["sha256"][1]
    assert p2["launches"]["render"]["aten_ops"] < p2["launches"]["end_to_end"]["aten_ops"]
    assert data["workloads"]["P1@8"]["launches"] is None  # not among the profiled
    cost = data["fixed_cost"]
    assert cost["workload"] == "P1@8" and all(cost[k]["calls"] == 2 and cost[k]["median_ms"] > 0
                                              for k in ("new", "cached"))
    assert judge_speed(data) == (Status.OK, "")


def test_past_its_deadline_the_job_measures_nothing_more_and_says_so():
    data = speed_job(_job(deadline_s=0))
    assert data["workloads"] == {} and data["not_measured"] == ["P2@8", "P1@8", "P1@8"]
    assert judge_speed(data)[0] is Status.TIMED_OUT


def test_a_case_is_scored_by_r_and_hashed_and_the_determinism_workload_rendered():
    data = parity_job(ParityJob(("eager", "float32"), "cpu", str(golden_dir(ROOT)), (CASE,), "P1@8", threads=1,
                                deadline_s=60))
    case = data["cases"][CASE]
    assert case["r"] > 0.9995 and len(case["sha256"]) == 64 and data["worst_case"] == CASE
    assert data["hash"]["workload"] == "P1@8" and len(data["hash"]["sha256"]) == 64
    assert judge_parity(data) == (Status.OK, "")


def test_a_compiled_path_leaves_a_case_it_cannot_fuse_to_the_eager_code():
    data = parity_job(ParityJob(("compiled", "float32"), "cpu", str(golden_dir(ROOT)), ("g03_hkl_autointerp_N2",),
                                None, threads=1, deadline_s=60))
    assert data["cases"] == {"g03_hkl_autointerp_N2": {"eager_code": True}} and data["eager_code"] == 1
    assert judge_parity(data)[0] is Status.OK


def test_a_case_under_the_line_or_broken_fails_the_step():
    cases = {"a": {"r": 0.99999, "sha256": "x"}, "b": {"r": 0.9, "sha256": "y"}, "c": {"r": None, "sha256": "z"},
             "d": {"error": "ValueError: no"}}
    summary = summarize(cases)
    assert summary["min_r"] == 0.9 and summary["worst_case"] == "b"
    assert summary["below_line"] == ["b", "c"] and summary["errors"] == ["d"] and summary["rendered"] == 3
    status, reason = judge_parity({**summary, "cases": cases, "not_run": []})
    assert status is Status.FAILED and "2 case(s)" in reason and "did not render" in reason




def test_the_probe_names_the_software_and_says_whether_there_is_a_cuda_device():
    data = probe_job(ProbeJob(str(ROOT)))
    assert data["environment"]["torch"] == torch.__version__ and data["environment"]["cpu_count"] >= 1
    assert (data["cuda"] is None) == (not torch.cuda.is_available())




def test_the_device_parameters_alone_are_run_under_asvs_name_and_unit():
    data = benchmarks_job(BenchmarksJob(str(ROOT), "cpu", ("P2",), ("float32",), deadline_s=120))
    assert data["benchmark"] == BENCHMARK and data["unit"] == "ns/pixel-step"
    [result] = data["results"]
    assert result["params"] == {"workload": "P2", "mode": "eager", "dtype": "float32", "device": "cpu"}
    assert result["value"] > 0 and judge_benchmarks(data) == (Status.OK, "")


def test_a_run_that_measured_nothing_is_an_error():
    assert judge_benchmarks({"results": [{"params": {}, "skipped": "no CUDA"}], "not_run": []})[0] is Status.CRASHED
    assert judge_benchmarks({"results": [], "not_run": [{}]})[0] is Status.TIMED_OUT


def test_a_job_crosses_the_process_boundary_as_json_and_is_read_back_the_same():
    job = _job()
    assert SpeedJob.from_json(json.loads(json.dumps(job.to_json()))) == job
    parity = ParityJob(("eager", "float64"), "cpu", "g", None, None)
    assert ParityJob.from_json(parity.to_json()) == parity

"""asv's device benchmarks, measured by the suite's own setup and track methods."""

from pathlib import Path

from detsim.track.gpu.benchmarks import BENCHMARK, benchmarks_job, judge

from detsim.track.base.status import Status

ROOT = Path(__file__).resolve().parents[3]


def test_the_device_parameters_alone_are_run_under_asvs_name_and_unit():
    data = benchmarks_job({"root": str(ROOT), "device": "cpu", "workloads": ["P2"], "dtypes": ["float32"],
                           "deadline_s": 120})
    assert data["benchmark"] == BENCHMARK and data["unit"] == "ns/pixel-step"
    [result] = data["results"]
    assert result["params"] == {"workload": "P2", "mode": "eager", "dtype": "float32", "device": "cpu"}
    assert result["value"] > 0 and judge(data) == (Status.OK, "")


def test_a_run_that_measured_nothing_is_an_error():
    assert judge({"results": [{"params": {}, "skipped": "no CUDA"}], "not_run": []})[0] is Status.CRASHED
    assert judge({"results": [], "not_run": [{}]})[0] is Status.TIMED_OUT

"""The speed job on a tiny workload (in this process)."""

from detsim.track.gpu.speed import judge, speed_job

from detsim.track.base.status import Status


def _job(**changes):
    return {"path": ["eager", "float32"], "device": "cpu", "workloads": ["P2@8", "P1@8"], "overhead": "P1@8",
            "warm_calls": 2, "threads": 1, "deadline_s": 60, **changes}


def test_each_workload_gets_cold_and_warm_rates_and_two_hashes():
    data = speed_job(_job())
    p2 = data["workloads"]["P2@8"]
    assert p2["pixel_steps"] == 8 * 8 * 200
    assert abs(p2["warm_pixel_steps_per_s"] * p2["warm_best_s"] / p2["pixel_steps"] - 1) < 1e-2
    assert p2["warm_best_s"] <= p2["warm_median_s"]
    assert len(p2["sha256"]) == 2 and p2["sha256"][0] == p2["sha256"][1]
    assert data["overhead"]["workload"] == "P1@8" and data["overhead"]["warm_best_ms"] > 0
    assert judge(data) == (Status.OK, "")


def test_past_its_deadline_the_job_measures_nothing_more_and_says_so():
    data = speed_job(_job(deadline_s=0))
    assert data["workloads"] == {} and data["not_measured"] == ["P2@8", "P1@8", "P1@8"]
    assert judge(data)[0] is Status.TIMED_OUT

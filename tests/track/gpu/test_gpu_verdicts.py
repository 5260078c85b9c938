"""A check's record read against the targets and against nanoBragg.c: which path's value each target is judged
on, what is missing, and the dry run's CPU figures never judged."""

import math

import pytest

from detsim.track.gpu.targets import Verdict
from detsim.track.gpu.verdicts import measurements, side_by_side, target_rows

PATHS = ["eager-float64", "eager-float32", "triton-float64", "triton-float32"]
P3G = 2048 * 2048 * 800


def _step(name, status="ok", **data):
    return {"name": name, "status": status, "seconds": 1.0, "reason": "", "data": data}


def _workload(pixel_steps, kernel_s, e2e_s, launches=None):
    timed = lambda s: {"calls": 3, "best_s": s, "median_s": s, "pixel_steps_per_s": pixel_steps / s}  # noqa: E731
    return {"pixel_steps": pixel_steps, "fused": True, "cold_s": 9.0, "cold_pixel_steps_per_s": pixel_steps / 9,
            "kernel": timed(kernel_s), "end_to_end": timed(e2e_s), "sha256": ["a", "a"],
            "launches": None if launches is None else {"end_to_end": {}, "render": launches}}


def _speed(path, fast, new_ms=5.0, cached_ms=0.1):
    """A path's speed step: ``fast`` times faster than eager float64 on the H100's first run."""
    cuda = {"kernels": 2 if fast > 10 else 1800, "memory_ops": 1, "aten_ops": 5, "interpreted_launches": None}
    return _step(f"speed {path}", path=path, clock="cuda events", not_measured=[], workloads={
        "P2": _workload(1024 ** 2 * 200, 0.07 / fast, 0.07 / fast + 1e-3, cuda),
        "P4096": _workload(4096 ** 2, 0.03 / fast, 0.03 / fast + 1e-3, cuda),
        "P3G": _workload(P3G, 1.0 / fast, 1.0 / fast + 1e-3)},
        fixed_cost={"workload": "P1@8", "new": {"calls": 20, "best_ms": new_ms, "median_ms": new_ms},
                    "cached": {"calls": 20, "best_ms": cached_ms, "median_ms": cached_ms}})


def _parity(path, min_r, not_run=(), eager_code=0):
    return _step(f"parity {path}", path=path, device="cuda", cases={}, not_run=list(not_run), errors=[],
                 min_r=min_r, worst_case="c1" if min_r else None, rendered=1 if min_r else 0, below_line=[],
                 eager_code=eager_code)


def _record(dry_run=False, steps=None):
    steps = steps if steps is not None else [
        _step("probe", environment={}, cuda=None if dry_run else {"name": "NVIDIA H200", "cuda_version": "13.0"}),
        _speed("eager-float64", 1), _speed("eager-float32", 1.6),
        _speed("triton-float64", 40, new_ms=0.8, cached_ms=0.05), _speed("triton-float32", 120),
        *[_step(f"determinism {p}", in_process=True, across_processes=True, workload="P2") for p in PATHS],
        _parity("eager-float64", 1.0), _parity("eager-float32", 0.99999999), _parity("triton-float64", 1.0),
        _parity("triton-float32", 0.9999999)]
    return {"dry_run": dry_run, "device": "cpu" if dry_run else "cuda", "started": "20261129T010000Z",
            "commit": "c" * 40, "plan": {"speed_workloads": ["P2", "P4096", "P3G"], "throughput_workload": "P3G",
                                         "overhead_workload": "P1@8", "paths": PATHS}, "steps": steps}


def _rows(record):
    return {row.target.key: row for row in target_rows(record)}


def test_each_rate_is_the_best_path_of_its_dtype_on_the_throughput_workload():
    found = measurements(_record())
    assert found["rate-float32-kernel"].value == pytest.approx(P3G * 120) and \
        found["rate-float32-kernel"].where == "triton-float32, P3G"
    assert found["rate-float64-end-to-end"].value == pytest.approx(P3G / (1 / 40 + 1e-3))
    assert found["p2-end-to-end-float32"].value == pytest.approx((0.07 / 120 + 1e-3) * 1e3)
    assert found["fixed-cost-new"].value == 0.8 and found["fixed-cost-new"].where == "triton-float64, P1@8"
    assert found["fixed-cost-cached"].value == 0.05
    assert found["launches"].value == 3 and found["launches"].where.startswith("triton-float")
    assert found["bit-identical"].value == 0 and found["bit-identical"].missing == ()
    assert found["parity"].value == 0.9999999 and found["parity"].where == "triton-float32, c1"


def test_the_verdicts_of_a_gpu_run_are_met_or_missed_with_the_gap():
    rows = _rows(_record())
    verdicts = {key: row.verdict for key, row in rows.items()}
    assert verdicts["rate-float32-kernel"] is Verdict.MET  # 3.36e9 x 120 = 4e11
    assert verdicts["rate-float64-kernel"] is Verdict.MET and verdicts["rate-float64-end-to-end"] is Verdict.MET
    assert verdicts["rate-float32-end-to-end"] is Verdict.MET
    assert verdicts["p2-end-to-end-float32"] is Verdict.MET and verdicts["fixed-cost-new"] is Verdict.MET
    assert verdicts["launches"] is Verdict.MET and verdicts["parity"] is Verdict.MET
    assert verdicts["bit-identical"] is Verdict.MET
    per_step = rows["p4096-per-step"]  # P4096's 1e-3 s of overhead against P2's: slower per pixel·step
    assert per_step.verdict is Verdict.MISSED and per_step.gap > 1 and per_step.note.endswith("x off")


def test_a_slow_run_misses_by_the_ratio_to_the_limit():
    steps = [_step("probe", environment={}, cuda={"name": "NVIDIA H100"}), _speed("eager-float32", 1.6)]
    rows = _rows(_record(steps=steps))
    rate = rows["rate-float32-kernel"]
    assert rate.verdict is Verdict.MISSED and math.isclose(rate.gap, 3e11 / (P3G * 1.6))
    assert rows["rate-float64-kernel"].verdict is Verdict.NOT_MEASURED
    assert "not measured on a float64 path" in rows["rate-float64-kernel"].note
    assert rows["launches"].verdict is Verdict.MISSED and rows["launches"].measured.value == 1801
    assert rows["parity"].verdict is Verdict.NOT_MEASURED and "no path rendered" in rows["parity"].note


def test_paths_that_differ_or_were_not_compared_count_against_bit_identity():
    record = _record()
    record["steps"][5] = _step("determinism eager-float64", "failed", in_process=False, across_processes=True)
    record["steps"][6] = _step("determinism eager-float32", "ok", in_process=True, across_processes=None)
    found = measurements(record)["bit-identical"]
    assert found.value == 1 and found.where == "eager-float64" and found.missing == ("eager-float32",)
    assert _rows(record)["bit-identical"].verdict is Verdict.MISSED


def test_parity_with_cases_not_run_is_not_met_and_a_path_left_to_the_eager_code_is_covered():
    record = _record()
    record["steps"][-1] = _parity("triton-float32", None, eager_code=53)
    assert measurements(record)["parity"].missing == ()
    record["steps"][-2] = _parity("triton-float64", 1.0, not_run=["c2", "c3"])
    row = _rows(record)["parity"]
    assert row.verdict is Verdict.NOT_MEASURED and "triton-float64 (2 cases not run" in row.note


def test_a_throughput_workload_under_the_size_is_not_measured_on_a_gpu():
    record = _record()
    record["plan"]["throughput_workload"] = "P2"
    assert "under 3e+09" in _rows(record)["rate-float32-kernel"].note


def test_a_dry_run_measures_but_judges_nothing():
    rows = _rows(_record(dry_run=True))
    assert {row.verdict for row in rows.values()} == {Verdict.NOT_MEASURED}
    assert rows["rate-float32-kernel"].note.startswith("no CUDA device: dry run (CPU, small size: ")


def test_nanobragg_is_set_beside_the_best_path_of_each_dtype():
    record = _record()
    record["steps"].append(_step("nanobragg", threads=16, workloads={
        "P1@8": {"wall_s": 0.02, "calls": 3, "pixel_steps": 64, "pixel_steps_per_s": 3200.0},
        "P3G": {"wall_s": 4.0, "calls": 1, "pixel_steps": P3G, "pixel_steps_per_s": P3G / 4}}))
    fixed, big = side_by_side(record)
    assert big["workload"] == "P3G" and big["float32"]["path"] == "triton-float32"
    assert big["float32"]["ratio"] == pytest.approx(4.0 / (1 / 120 + 1e-3))
    assert big["float64"]["ratio"] == pytest.approx(4.0 / (1 / 40 + 1e-3))
    assert fixed["float64"]["path"] == "triton-float64" and fixed["float64"]["ratio"] == pytest.approx(0.02 / 5e-5)
    assert side_by_side(_record()) == []

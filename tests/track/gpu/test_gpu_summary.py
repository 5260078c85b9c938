"""The summary says what the record holds: the goals' verdicts, figures, differences and their culprits,
nanoBragg.c beside detsim, and what was a dry run."""

from detsim.track.gpu.summary import summary
from detsim.track.gpu.goals import GOALS_BY_KEY, GoalValue, judge


def _step(name, status="ok", reason="", **data):
    return {"name": name, "status": status, "seconds": 1.0, "reason": reason, "data": data}


def _timed(rate):
    return {"calls": 5, "best_s": 1.0, "median_s": 1.0, "pixel_steps_per_s": rate}


def _record(dry_run=False):
    speed = {"pixel_steps": 100, "fused": True, "cold_pixel_steps_per_s": 1.5e9, "kernel": _timed(4.5e11),
             "end_to_end": _timed(3.25e11), "sha256": ["a", "b"],
             "launches": {"end_to_end": {}, "render": {"aten_ops": 40, "kernels": 12, "memory_ops": 3,
                                                      "interpreted_launches": None}}}
    steps = [
        _step("probe", environment={"torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3", "cpu_count": 16},
              cuda={"name": "NVIDIA H100 80GB HBM3", "cuda_version": "13.0"}),
        _step("speed triton-float32", workloads={"P2": speed}, clock="cuda events",
              fixed_cost={"new": {"median_ms": 0.9}, "cached": {"median_ms": 0.15}}),
        _step("nanobragg", threads=16, workloads={}),
        _step("parity triton-float32", path="triton-float32", device="cuda", cases={"c": {}}, rendered=1,
              min_r=0.9999991, worst_case="c", below_line=[], errors=[], eager_code=52),
        _step("cuda float64 eager vs cpu", compared=4, identical=3, differing=["x"]),
        _step("determinism triton-float32", "failed", "P2's image differs in one process", workload="P2",
              in_process=False, across_processes=True, streams=1),
        _step("divergence triton-float32", "failed", "culprit: #7 kernel _square_lattice_kernel"),
        _step("atomics", target="cuda sm_90", variants={"float32 J=3": {"atomics": [], "ptx_lines": 9}}),
    ]
    on_gpu = None if dry_run else "NVIDIA H100 80GB HBM3"
    goals = [judge(GOALS_BY_KEY["rate-float32-kernel"], GoalValue(4.5e11, "triton-float32, P3G"), on_gpu),
               judge(GOALS_BY_KEY["launches"], GoalValue(15, "triton-float32, P2"), on_gpu),
               judge(GOALS_BY_KEY["parity"], GoalValue(None, why="no path rendered a golden case"), on_gpu)]
    side = [{"workload": "P2", "pixel_steps": 2.1e8, "nanobragg_s": 0.25, "nanobragg_pixel_steps_per_s": 8.4e8,
             "float64": None, "float32": {"path": "triton-float32", "pixel_steps_per_s": 3.25e11, "ratio": 387.0}}]
    return {"started": "20261127T190000Z", "dry_run": dry_run, "commit": "f" * 40, "dirty": False, "wall_s": 300.0,
            "budget_s": 450.0, "exit_code": 1, "plan": {"speed_workloads": ["P2"]}, "steps": steps,
            "goals": [row.to_dict() for row in goals], "side_by_side": side}


def test_the_summary_gives_the_device_figures_differences_and_culprits():
    text = summary(_record())
    assert "NVIDIA H100 80GB HBM3" in text and "exit 1" in text and "Dry run" not in text
    assert "| triton-float32 | 4.5e+11 | 3.25e+11 | 1.5e+09 | 12 kernels, 3 copies/fills, 40 aten ops | 0.9 / 0.15 |" \
        in text
    assert "by cuda events" in text
    assert "| triton-float32 | cuda | 1 | 0.999999100 | 9.00e-07 | c | 0 | 0 | 52 |" in text
    assert "| triton-float32 | DIFFERENT | identical |" in text
    assert "culprit: #7 kernel _square_lattice_kernel" in text
    assert "bit-identical in 3 of 4 golden cases" in text and "variants searched: no atomic operation" in text


def test_the_targets_table_gives_each_verdict_its_value_and_gap_or_why():
    text = summary(_record())
    assert "| float32 throughput, kernel time | >= 3e+11 pixel·steps/s | **met** | 4.5e+11 | triton-float32, P3G |" \
        in text
    assert "| device launches per render (P2) | <= 10 launches | **missed** | 15 | triton-float32, P2 | 1.5x off |" \
        in text
    assert "| lowest r over every golden case | >= 0.9995 r | **not measured** | - |  | no path rendered a golden " \
           "case |" in text


def test_nanobragg_is_set_beside_detsim_with_the_card_the_date_and_the_commit():
    text = summary(_record())
    assert "## Against nanoBragg.c (16 OpenMP threads on this host)" in text
    assert "NVIDIA H100 80GB HBM3; 20261127T190000Z; commit `ffffffffffff`" in text
    assert "| P2 | 2.1e+08 | 0.25 | 8.4e+08 | - | - | 3.25e+11 (triton-float32) | 387 |" in text


def test_a_dry_run_says_no_figure_is_a_gpu_figure_and_judges_no_target():
    text = summary(_record(dry_run=True))
    assert "no figure in it is a GPU figure" in text and "**met**" not in text and "**missed**" not in text
    assert "| float32 throughput, kernel time | >= 3e+11 pixel·steps/s | **not measured** | - | triton-float32, " \
           "P3G | no CUDA device: dry run (CPU, small size: 4.5e+11 pixel·steps/s) |" in text

"""The summary says what the record holds: figures, differences and their culprits, and what was a dry run."""

from detsim.track.gpu.summary import summary


def _step(name, status="ok", reason="", **data):
    return {"name": name, "status": status, "seconds": 1.0, "reason": reason, "data": data}


def _record(dry_run=False):
    speed = {"pixel_steps": 100, "fused": True, "cold_pixel_steps_per_s": 1.5e9, "warm_pixel_steps_per_s": 3.25e11,
             "launches": {"aten_ops": 40, "kernels": 12, "memory_ops": 3}, "sha256": ["a", "b"]}
    steps = [
        _step("probe", environment={"torch": "2.11.0+cu130", "triton": "3.6.0", "python": "3.12.3", "cpu_count": 16},
              cuda={"name": "NVIDIA H100 80GB HBM3", "cuda_version": "13.0"}),
        _step("speed triton-float32", workloads={"P2": speed}, overhead={"warm_best_ms": 1.2}),
        _step("parity triton-float32", path="triton-float32", device="cuda", cases={"c": {}}, rendered=1,
              min_r=0.9999991, worst_case="c", below_line=[], errors=[], eager_code=52),
        _step("cuda float64 eager vs cpu", compared=4, identical=3, differing=["x"]),
        _step("determinism triton-float32", "failed", "P2's image differs in one process", workload="P2",
              in_process=False, across_processes=True, streams=1),
        _step("divergence triton-float32", "failed", "culprit: #7 kernel _square_lattice_kernel"),
        _step("atomics", target="cuda sm_90", variants={"float32 J=3": {"atomics": [], "ptx_lines": 9}}),
    ]
    return {"started": "20261127T190000Z", "dry_run": dry_run, "commit": "f" * 40, "dirty": False, "wall_s": 300.0,
            "budget_s": 450.0, "exit_code": 1, "plan": {"speed_workloads": ["P2"]}, "steps": steps}


def test_the_summary_gives_the_device_figures_differences_and_culprits():
    text = summary(_record())
    assert "NVIDIA H100 80GB HBM3" in text and "exit 1" in text and "Dry run" not in text
    assert "| triton-float32 | 3.25e+11 | 1.5e+09 | 12 kernels, 3 copies/fills, 40 aten ops | 1.2 |" in text
    assert "| triton-float32 | cuda | 1 | 0.999999100 | 9.00e-07 | c | 0 | 0 | 52 |" in text
    assert "| triton-float32 | DIFFERENT | identical |" in text
    assert "culprit: #7 kernel _square_lattice_kernel" in text
    assert "bit-identical in 3 of 4 golden cases" in text and "variants searched: no atomic operation" in text


def test_a_dry_run_says_no_figure_is_a_gpu_figure():
    assert "no figure in it is a GPU figure" in summary(_record(dry_run=True))

""".ci/gpu, the device check's entry point, runs its dry run on this CPU: the steps that need no GPU run for real
(small), the CUDA ones say why they were skipped."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _dry_run(out: Path, *argv: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "GPU_PYTHON": sys.executable}
    return subprocess.run(["bash", str(ROOT / ".ci" / "gpu"), "--dry-run", "--out", str(out), *argv], env=env,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # the slow job runs the whole dry run
def test_the_dry_run_renders_measures_and_compares_a_path_and_prints_its_summary(tmp_path):
    done = _dry_run(tmp_path, "--steps", "speed,parity,determinism", "--paths", "eager-float32", "--cases",
                    "c02_xds_xbeam_quirk")
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "gpu.json").read_text())
    steps = {s["name"]: s for s in record["steps"]}
    assert [steps[f"{kind} eager-float32"]["status"] for kind in ("speed", "parity", "determinism")] == ["ok"] * 3
    assert steps["parity eager-float32"]["data"]["min_r"] >= 0.9995
    speed = steps["speed eager-float32"]["data"]
    throughput = speed["workloads"][record["plan"]["throughput_workload"]]
    assert throughput["kernel"]["pixel_steps_per_s"] > 0 and throughput["end_to_end"]["pixel_steps_per_s"] > 0
    assert speed["fixed_cost"]["new"]["median_ms"] > 0 and speed["fixed_cost"]["cached"]["median_ms"] > 0
    rows = {row["key"]: row for row in record["goals"]}
    assert rows["rate-float32-kernel"]["value"] == throughput["kernel"]["pixel_steps_per_s"]
    assert {row["verdict"] for row in rows.values()} == {"not measured"}  # never met without a GPU
    assert done.stdout == (tmp_path / "summary.md").read_text() + "\n"
    assert "## Speed" in done.stdout and "## Determinism" in done.stdout and "## Goals" in done.stdout


@pytest.mark.slow
def test_the_whole_dry_run_passes_with_only_the_cuda_steps_skipped(tmp_path):
    done = _dry_run(tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "gpu.json").read_text())
    skipped = {s["name"] for s in record["steps"] if s["status"] == "skipped"}
    assert skipped == {"cuda float64 eager vs cpu", "divergence", "device tests", "nanobragg"}
    assert all(s["status"] == "ok" for s in record["steps"] if s["name"] not in skipped)

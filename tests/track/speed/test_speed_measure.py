"""detsim.track.speed.measure: measured processes, rows, image comparison and ratios."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from detsim.track.base.workloads import Workload
from detsim.track.speed import measure

TINY = Workload("T", 4)


def _image(tmp_path, name: str, values: np.ndarray):
    path = tmp_path / f"{name}.bin"
    values.astype("<f4").tofile(path)
    return path


def test_a_detsim_row_runs_in_its_own_process_and_a_failure_is_its_last_line(tmp_path):
    job = {"device": "cpu", "repeats": 1, "threads": 1}
    row, image = measure.detsim_row(TINY, "eager", "float64", job, tmp_path)
    assert image.is_file() and row["seconds_all"] and 0 < row["seconds"] <= row["process_cpu_s"]
    assert row["rate"] == TINY.pixel_steps / row["seconds"] and "error" not in row
    row, image = measure.detsim_row(TINY, "eager", "float64", {**job, "device": "no_such_device"}, tmp_path)
    assert image is None and "no_such_device" in row["error"] and "\n" not in row["error"]


def test_a_failing_nanobragg_row_carries_its_last_line(tmp_path):
    script = tmp_path / "nb"
    script.write_text(f"#!{sys.executable}\nimport sys\nprint('first\\nlast words', file=sys.stderr)\nsys.exit(4)\n")
    script.chmod(0o755)
    row, image = measure.nanobragg_row(script, TINY, 2, dict(os.environ), tmp_path)
    assert image is None and row["error"] == "nanoBragg exited 4: last words"
    assert row["command"] == [str(script), *TINY.argv()] and row["program"] == measure.NANOBRAGG


def test_compare_images_against_nanobragg_else_eager_float64(tmp_path):
    rng = np.random.default_rng(0)
    reference = rng.random((4, 4)).astype(np.float32)
    noisy = reference + 0.1 * rng.random((4, 4)).astype(np.float32)
    rows = [{"workload": "T", "program": "detsim eager", "mode": "eager", "dtype": d} for d in ("float64", "float32")]
    images = {"eager/float64": _image(tmp_path, "a", reference), "eager/float32": _image(tmp_path, "b", noisy)}
    measure.compare_images(rows, TINY, None, images)
    assert rows[0]["r"] == pytest.approx(1.0, abs=1e-15) and rows[0]["r_against"] == "detsim eager float64"
    assert rows[1]["r"] == pytest.approx(np.corrcoef(noisy.ravel().astype(float), reference.ravel())[0, 1], rel=1e-12)
    measure.compare_images(rows, TINY, np.zeros((4, 4)), images)  # a constant nanoBragg image: r undefined
    assert rows[0]["r"] is None and rows[0]["r_against"] == "nanoBragg.c"


def test_compare_images_leaves_other_workloads_and_unrun_paths_alone(tmp_path):
    rows = [{"workload": "other", "program": "detsim eager", "mode": "eager", "dtype": "float64"},
            {"workload": "T", "program": "detsim compiled", "mode": "compiled", "dtype": "float64"}]
    measure.compare_images(rows, TINY, None, {"eager/float64": _image(tmp_path, "a", np.eye(4))})
    assert all("r" not in row for row in rows)
    measure.compare_images(rows, TINY, None, {})  # nothing to compare against
    assert all("r" not in row for row in rows)


def test_ratios_are_against_nanobragg_on_the_same_workload():
    rows = [{"workload": "A", "program": "nanoBragg.c", "rate": 2.0}, {"workload": "A", "program": "x", "rate": 6.0},
            {"workload": "B", "program": "x", "rate": 1.0}, {"workload": "A", "program": "y", "error": "e"}]
    measure.add_ratios(rows)
    assert [r.get("vs_nanobragg") for r in rows] == [1.0, 3.0, None, None]

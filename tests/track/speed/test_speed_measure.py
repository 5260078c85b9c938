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
    job = {"device": "cpu", "repeats": 2, "threads": 1}
    row, image = measure.detsim_row(TINY, "eager", "float64", job, tmp_path)
    assert image.is_file() and len(row["wall_all"]) == len(row["cpu_all"]) == 2
    assert row["wall_s"] == min(row["wall_all"]) and row["cpu_s"] == row["cpu_all"][row["wall_all"].index(row["wall_s"])]
    assert row["rate"] == TINY.pixel_steps / row["wall_s"] and "error" not in row
    assert (row["scope"], row["threads"], row["command"][0]) == ("render", 1, "OMP_NUM_THREADS=1")
    row, image = measure.detsim_row(TINY, "eager", "float64", {**job, "device": "no_such_device"}, tmp_path)
    assert image is None and "no_such_device" in row["error"] and "\n" not in row["error"]


def test_a_whole_detsim_process_row_times_the_command_and_keeps_its_image(tmp_path):
    row, image = measure.detsim_process_row(TINY, "eager", "float32", 2, 1, tmp_path)
    assert "error" not in row, row.get("error")
    assert row["scope"] == "process" and row["threads"] == 2 and row["command"][:2] == ["OMP_NUM_THREADS=2", "detsim"]
    assert row["cpu_s"] > 0 and row["wall_s"] > 0  # an interpreter start and torch's import at least
    assert measure.read_image(image, TINY).max() > 0


def test_a_failing_nanobragg_row_carries_its_last_line(tmp_path):
    script = tmp_path / "nb"
    script.write_text(f"#!{sys.executable}\nimport sys\nprint('first\\nlast words', file=sys.stderr)\nsys.exit(4)\n")
    script.chmod(0o755)
    row, image = measure.nanobragg_row(script, TINY, 2, 1, tmp_path)
    assert image is None and row["error"] == "nanoBragg exited 4: last words"
    assert row["command"] == ["OMP_NUM_THREADS=1", str(script), *TINY.argv()] and row["program"] == measure.NANOBRAGG


def test_nanobragg_runs_with_the_thread_count_in_its_environment(tmp_path):
    script = tmp_path / "nb"
    script.write_text(f"#!{sys.executable}\nimport os, sys\nimport numpy as np\n"
                      "value = float(os.environ['OMP_NUM_THREADS'])\n"
                      "np.full((4, 4), value, '<f4').tofile(sys.argv[sys.argv.index('-floatfile') + 1])\n")
    script.chmod(0o755)
    row, image = measure.nanobragg_row(script, TINY, 3, 3, tmp_path)
    assert "error" not in row and (image == 3).all()
    assert len(row["wall_all"]) == 3 and row["wall_s"] == min(row["wall_all"])


def test_compare_images_against_nanobragg_else_eager_float64(tmp_path):
    rng = np.random.default_rng(0)
    reference = rng.random((4, 4)).astype(np.float32)
    noisy = reference + 0.1 * rng.random((4, 4)).astype(np.float32)
    rows = [{"workload": "T", "program": "detsim eager", "mode": "eager", "dtype": d} for d in ("float64", "float32")]
    pairs = [(rows[0], _image(tmp_path, "a", reference)), (rows[1], _image(tmp_path, "b", noisy))]
    measure.compare_images(pairs, TINY, None)
    assert rows[0]["r"] == pytest.approx(1.0, abs=1e-15) and rows[0]["r_against"] == "detsim eager float64"
    assert rows[1]["r"] == pytest.approx(np.corrcoef(noisy.ravel().astype(float), reference.ravel())[0, 1], rel=1e-12)
    measure.compare_images(pairs, TINY, np.zeros((4, 4)))  # a constant nanoBragg image: r undefined
    assert rows[0]["r"] is None and rows[0]["r_against"] == "nanoBragg.c"


def test_without_a_reference_or_an_eager_float64_image_nothing_is_compared(tmp_path):
    rows = [{"workload": "T", "program": "detsim compiled", "mode": "compiled", "dtype": "float64"}]
    measure.compare_images([(rows[0], _image(tmp_path, "a", np.eye(4)))], TINY, None)
    measure.compare_images([], TINY, None)
    assert all("r" not in row for row in rows)


def test_ratios_are_against_nanobragg_on_the_same_workload_and_thread_count():
    rows = [{"workload": "A", "program": "nanoBragg.c", "threads": 1, "wall_s": 6.0, "cpu_s": 6.0},
            {"workload": "A", "program": "nanoBragg.c", "threads": 2, "wall_s": 3.0, "cpu_s": 6.0},
            {"workload": "A", "program": "x", "threads": 1, "wall_s": 2.0, "cpu_s": 2.0},
            {"workload": "A", "program": "x", "threads": 2, "wall_s": 2.0, "cpu_s": 4.0},
            {"workload": "B", "program": "x", "threads": 1, "wall_s": 1.0, "cpu_s": 1.0},
            {"workload": "A", "program": "y", "threads": 1, "error": "e"}]
    measure.add_ratios(rows)
    assert [r.get("vs_nanobragg") for r in rows] == [1.0, 1.0, 3.0, 1.5, None, None]
    assert [r.get("vs_nanobragg_cpu") for r in rows] == [1.0, 1.0, 3.0, 1.5, None, None]

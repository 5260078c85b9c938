"""detsim.track.measure.speed: measured processes, rows, image comparison and ratios; the measured process of a
detsim render; the printed table and summary.md.
"""

from __future__ import annotations

import json
import os
import sys
import traceback

import numpy as np
import pytest
import torch

from detsim.track.base import fresh
from detsim.track.base.fresh import Finished
from detsim.track.base.runtime import thread_count
from detsim.track.base.workloads import Workload, WORKLOADS
from detsim.track.measure import speed
from detsim.track.measure.speed import (
    HEADER, RenderJob, format_table, peak_rss_mb, render_job, summary_markdown,
)


TINY = Workload("T", 4)


def _image(tmp_path, name: str, values: np.ndarray):
    path = tmp_path / f"{name}.bin"
    values.astype("<f4").tofile(path)
    return path


def test_a_detsim_row_runs_in_its_own_process(tmp_path):
    row, image = speed.detsim_row(TINY, "eager", "float64", tmp_path, device="cpu", repeats=2, threads=1)
    assert image.is_file() and len(row["wall_all"]) == len(row["cpu_all"]) == 2
    assert row["wall_s"] == min(row["wall_all"]) and row["cpu_s"] == row["cpu_all"][row["wall_all"].index(row["wall_s"])]
    assert row["rate"] == TINY.pixel_steps / row["wall_s"] and "error" not in row
    assert (row["scope"], row["threads"], row["command"][0]) == ("render", 1, "OMP_NUM_THREADS=1")


def _failing_here(entry, job, **_):
    """run_job for a job that fails, its child side (fresh._main) run in this process: how the child ends."""
    try:
        fresh._main([entry, json.dumps(job.to_json()), os.devnull])
    except Exception:
        return Finished(1, b"", traceback.format_exc().encode(), 0.0)
    raise AssertionError(f"{entry} did not fail")


# The failing job in a process of its own (torch's import) in the slow job; in the default job its child side
# runs here. A failing job's traceback read back from a real child: tests/track/base/test_base_fresh.py
@pytest.mark.parametrize("where", ["here", pytest.param("own process", marks=pytest.mark.slow)])
def test_a_failing_detsim_row_is_its_jobs_last_line(tmp_path, monkeypatch, where):
    if where == "here":
        monkeypatch.setattr(speed, "run_job", _failing_here)
    row, image = speed.detsim_row(TINY, "eager", "float64", tmp_path, device="no_such_device", repeats=2, threads=1)
    assert image is None and "no_such_device" in row["error"] and "\n" not in row["error"]


def test_a_whole_detsim_process_row_times_the_command_and_keeps_its_image(tmp_path):
    row, image = speed.detsim_process_row(TINY, "eager", "float32", 2, 1, tmp_path)
    assert "error" not in row, row.get("error")
    assert row["scope"] == "process" and row["threads"] == 2 and row["command"][:2] == ["OMP_NUM_THREADS=2", "detsim"]
    assert row["cpu_s"] > 0 and row["wall_s"] > 0  # an interpreter start and torch's import at least
    assert speed.read_image(image, TINY).max() > 0


def test_a_failing_nanobragg_row_carries_its_last_line(tmp_path):
    script = tmp_path / "nb"
    script.write_text(f"#!{sys.executable}\nimport sys\nprint('first\\nlast words', file=sys.stderr)\nsys.exit(4)\n")
    script.chmod(0o755)
    row, image = speed.nanobragg_row(script, TINY, 2, 1, tmp_path)
    assert image is None and row["error"] == "nanoBragg exited 4: last words"
    assert row["command"] == ["OMP_NUM_THREADS=1", str(script), *TINY.argv()] and row["program"] == speed.NANOBRAGG


def test_nanobragg_runs_with_the_thread_count_in_its_environment(tmp_path):
    script = tmp_path / "nb"
    script.write_text(f"#!{sys.executable}\nimport os, sys\nimport numpy as np\n"
                      "value = float(os.environ['OMP_NUM_THREADS'])\n"
                      "np.full((4, 4), value, '<f4').tofile(sys.argv[sys.argv.index('-floatfile') + 1])\n")
    script.chmod(0o755)
    row, image = speed.nanobragg_row(script, TINY, 3, 3, tmp_path)
    assert "error" not in row and (image == 3).all()
    assert len(row["wall_all"]) == 3 and row["wall_s"] == min(row["wall_all"])


def test_compare_images_against_nanobragg_else_eager_float64(tmp_path):
    rng = np.random.default_rng(0)
    reference = rng.random((4, 4)).astype(np.float32)
    noisy = reference + 0.1 * rng.random((4, 4)).astype(np.float32)
    rows = [{"workload": "T", "program": "detsim eager", "mode": "eager", "dtype": d} for d in ("float64", "float32")]
    pairs = [(rows[0], _image(tmp_path, "a", reference)), (rows[1], _image(tmp_path, "b", noisy))]
    speed.compare_images(pairs, TINY, None)
    assert rows[0]["r"] == pytest.approx(1.0, abs=1e-15) and rows[0]["r_against"] == "detsim eager float64"
    assert rows[1]["r"] == pytest.approx(np.corrcoef(noisy.ravel().astype(float), reference.ravel())[0, 1], rel=1e-12)
    speed.compare_images(pairs, TINY, np.zeros((4, 4)))  # a constant nanoBragg image: r undefined
    assert rows[0]["r"] is None and rows[0]["r_against"] == "nanoBragg.c"


def test_without_a_reference_or_an_eager_float64_image_nothing_is_compared(tmp_path):
    rows = [{"workload": "T", "program": "detsim compiled", "mode": "compiled", "dtype": "float64"}]
    speed.compare_images([(rows[0], _image(tmp_path, "a", np.eye(4)))], TINY, None)
    speed.compare_images([], TINY, None)
    assert all("r" not in row for row in rows)


def test_ratios_are_against_nanobragg_on_the_same_workload_and_thread_count():
    rows = [{"workload": "A", "program": "nanoBragg.c", "threads": 1, "wall_s": 6.0, "cpu_s": 6.0},
            {"workload": "A", "program": "nanoBragg.c", "threads": 2, "wall_s": 3.0, "cpu_s": 6.0},
            {"workload": "A", "program": "x", "threads": 1, "wall_s": 2.0, "cpu_s": 2.0},
            {"workload": "A", "program": "x", "threads": 2, "wall_s": 2.0, "cpu_s": 4.0},
            {"workload": "B", "program": "x", "threads": 1, "wall_s": 1.0, "cpu_s": 1.0},
            {"workload": "A", "program": "y", "threads": 1, "error": "e"}]
    speed.add_ratios(rows)
    assert [r.get("vs_nanobragg") for r in rows] == [1.0, 1.0, 3.0, 1.5, None, None]
    assert [r.get("vs_nanobragg_cpu") for r in rows] == [1.0, 1.0, 3.0, 1.5, None, None]


# ---- jobs

def test_peak_rss_is_this_processes_high_water_mark():
    peak = peak_rss_mb()
    if os.path.exists("/proc/self/status"):
        assert peak > 10  # at least the interpreter and torch
    else:
        assert peak is None


def test_render_job_times_the_renders_and_saves_the_image(tmp_path):
    workload = WORKLOADS["P1"].resized(8)
    job = RenderJob(workload, "eager", "float32", "cpu", 2, 1, str(tmp_path / "image.bin"))
    assert RenderJob.from_json(job.to_json()) == job  # what the child reads back is what was sent
    with thread_count(torch.get_num_threads()):
        result = render_job(job)
    assert len(result["wall_s_all"]) == len(result["cpu_s_all"]) == 2
    assert all(t > 0 for t in result["wall_s_all"] + result["cpu_s_all"])
    assert result["clock"] == "prepare + render, after import and a warm-up" and result["chunk_pixels"] >= 1
    image = np.fromfile(tmp_path / "image.bin", dtype="<f4")
    assert image.size == 64 and np.isfinite(image).all() and image.max() > 0


# ---- tables

MEASURED = {"workload": "P1", "program": "detsim eager", "scope": "render", "threads": 2, "dtype": "float32",
            "wall_s": 1.23456, "cpu_s": 2.4, "rate": 2.5e7, "vs_nanobragg": 3.14159, "vs_nanobragg_cpu": 1.6667,
            "peak_rss_mb": 301.6, "r": 0.999999991, "r_against": "nanoBragg.c"}
REFERENCE = {"workload": "P1", "program": "nanoBragg.c", "scope": "process", "threads": 2, "dtype": "float64",
             "wall_s": 4.0, "cpu_s": 7.9, "rate": 8e6, "peak_rss_mb": None}
FAILED = {"workload": "P2", "program": "detsim compiled", "scope": "process", "threads": 1, "dtype": "float64",
          "error": "RuntimeError: boom"}


def test_table_rows_show_measured_missing_and_failed_runs():
    lines = format_table([REFERENCE, MEASURED, FAILED]).splitlines()
    assert "\n".join(lines[:2]) == HEADER
    assert lines[2] == "| P1 | nanoBragg.c | process | 2 | float64 | 4.000 | 7.900 | – | – | 8e+06 | – | – |"
    assert lines[3] == ("| P1 | detsim eager | render | 2 | float32 | 1.235 | 2.400 | 3.14 | 1.67 | 2.5e+07 | 302 "
                        "| 0.99999999 |")
    assert lines[4] == "| P2 | detsim compiled | process | 1 | float64 | failed: RuntimeError: boom | | | | | | |"
    assert all(line.count("|") == HEADER.splitlines()[0].count("|") for line in lines[2:4])


def test_an_undefined_r_is_a_dash():
    assert format_table([{**MEASURED, "r": None}]).splitlines()[-1].endswith("| 302 | – |")


def test_summary_states_the_conditions_the_table_and_the_command_lines():
    workloads = [WORKLOADS["P1"], WORKLOADS["P2"].resized(256)]
    env = {"cpu": "Some CPU", "commit": "0123456789abcdef0123", "dirty": True}
    env = {**env, "cpu_count": 2, "cpu_capability": "AVX512", "cpu_flags": "avx2 fma avx512f"}
    text = summary_markdown([MEASURED], "TABLE", workloads, threads=[1, 2], device="cpu", env=env)
    assert text.startswith("# detsim speed\n") and text.endswith("\n") and "\nTABLE\n" in text
    assert ("CPU: Some CPU, 2 logical CPUs; torch kernels: AVX512; vector flags: avx2 fma avx512f; threads: 1, 2; "
            "device: cpu; detsim commit 0123456789ab (dirty).") in text
    assert "wall s: wall-clock seconds" in text and "CPU s: user + system seconds of all threads" in text
    assert "warm-up on a 64² detector" in text and "r: Pearson r of the image against nanoBragg.c." in text
    assert f"* P1 (1024², 1 step per pixel): `{' '.join(WORKLOADS['P1'].argv())}`" in text
    assert "* P2@256 (256², 200 steps per pixel): `" in text


def test_summary_without_a_reference_says_so():
    text = summary_markdown([REFERENCE], "T", [], threads=[1], device="cuda", env={})
    assert "against nothing (no reference run)" in text and "detsim commit unknown." in text

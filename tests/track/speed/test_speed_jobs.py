"""detsim.track.speed.jobs: the timer of a whole program, and the measured process of a detsim render."""

from __future__ import annotations

import os
import sys
import time
from dataclasses import asdict

import numpy as np
import torch

from detsim.track.base.workloads import WORKLOADS
from detsim.track.runtime.process import thread_count
from detsim.track.speed.jobs import cpu_seconds, peak_rss_mb, process_job, render_job


def _program(tmp_path, body: str) -> list[str]:
    script = tmp_path / "program.py"
    script.write_text(body)
    return [sys.executable, str(script)]


def test_each_run_is_timed_in_wall_and_cpu_seconds_with_the_variables_given(tmp_path):
    out = tmp_path / "out.txt"
    argv = _program(tmp_path, "import os, sys\n"
                              "open(sys.argv[1], 'a').write(os.environ['OMP_NUM_THREADS'])\n"
                              "sum(i * i for i in range(200000))\n")
    answer = process_job({"argv": [*argv, str(out)], "env": {"OMP_NUM_THREADS": "7"}, "cwd": str(tmp_path),
                          "repeats": 3, "output": str(out)})
    runs = answer["runs"]
    assert len(runs) == 3 and all(r["returncode"] == 0 for r in runs)
    assert all(r["wall_s"] > 0 and r["cpu_s"] > 0 for r in runs)
    assert out.read_text() == "7"  # removed before each run: what is left is the last run's


def test_a_failing_run_ends_the_repeats_with_its_last_line(tmp_path):
    argv = _program(tmp_path, "import sys\nprint('noise\\nthe reason', file=sys.stderr)\nsys.exit(5)\n")
    runs = process_job({"argv": argv, "repeats": 3})["runs"]
    assert len(runs) == 1 and runs[0]["returncode"] == 5 and runs[0]["stderr_tail"] == "the reason"


def test_peak_rss_is_this_processes_high_water_mark():
    peak = peak_rss_mb()
    if os.path.exists("/proc/self/status"):
        assert peak > 10  # at least the interpreter and torch
    else:
        assert peak is None


def test_cpu_seconds_count_the_children_this_process_reaped():
    before, own = cpu_seconds(), time.process_time()
    pid = os.fork()
    if pid == 0:  # a worker: half a second of CPU, then gone
        end = time.process_time() + 0.5
        while time.process_time() < end:
            pass
        os._exit(0)
    os.waitpid(pid, 0)
    assert cpu_seconds() - before >= 0.45 + (time.process_time() - own) - 0.01


def test_render_job_times_the_renders_and_saves_the_image(tmp_path):
    workload = WORKLOADS["P1"].resized(8)
    job = {"workload": asdict(workload), "mode": "eager", "dtype": "float32", "device": "cpu", "repeats": 2,
           "threads": 1, "image": str(tmp_path / "image.bin")}
    with thread_count(torch.get_num_threads()):
        result = render_job(job)
    assert len(result["wall_s_all"]) == len(result["cpu_s_all"]) == 2
    assert all(t > 0 for t in result["wall_s_all"] + result["cpu_s_all"])
    assert result["clock"] == "prepare + render, after import and a warm-up" and result["chunk_pixels"] >= 1
    image = np.fromfile(tmp_path / "image.bin", dtype="<f4")
    assert image.size == 64 and np.isfinite(image).all() and image.max() > 0

"""detsim.track.speed.worker: the measured process of a detsim run."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from dataclasses import asdict

import numpy as np
import torch

from detsim.track.runtime.process import thread_count
from detsim.track.base.workloads import WORKLOADS
from detsim.track.speed.worker import peak_rss_mb, render_job


def test_peak_rss_is_this_processes_high_water_mark():
    peak = peak_rss_mb()
    if os.path.exists("/proc/self/status"):
        assert peak > 10  # at least the interpreter and torch
    else:
        assert peak is None


def test_render_job_times_the_renders_and_saves_the_image(tmp_path):
    workload = WORKLOADS["P1"].resized(8)
    job = {"workload": asdict(workload), "mode": "eager", "dtype": "float32", "device": "cpu", "repeats": 2,
           "threads": 1, "image": str(tmp_path / "image.bin")}
    with thread_count(torch.get_num_threads()):
        result = render_job(job)
    assert len(result["seconds_all"]) == 2 and result["seconds"] == min(result["seconds_all"])
    assert result["clock"] == "process CPU (render, after import)" and result["chunk_pixels"] >= 1
    image = np.fromfile(tmp_path / "image.bin", dtype="<f4")
    assert image.size == 64 and np.isfinite(image).all() and image.max() > 0


def test_the_worker_module_prints_one_json_line(tmp_path):
    job = {"workload": asdict(WORKLOADS["P1"].resized(4)), "mode": "eager", "dtype": "float64", "device": "cpu",
           "repeats": 1, "threads": 1, "image": str(tmp_path / "image.bin")}
    done = subprocess.run([sys.executable, "-m", "detsim.track.speed.worker", json.dumps(job)], capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert set(json.loads(done.stdout.strip().splitlines()[-1])) == {
        "seconds", "seconds_all", "chunk_pixels", "peak_rss_mb", "clock"}

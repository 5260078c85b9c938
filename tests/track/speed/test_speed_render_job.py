"""detsim.track.speed.render_job: the measured process of a detsim run."""

from __future__ import annotations

import os
import time
from dataclasses import asdict

import numpy as np
import torch

from detsim.track.runtime.process import thread_count
from detsim.track.base.workloads import WORKLOADS
from detsim.track.speed.render_job import cpu_seconds, peak_rss_mb, render_job


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

"""The measured process of a detsim run: a job of :func:`detsim.track.base.fresh.run_job`.

A **job** is a JSON object: ``workload`` (the fields of a
:class:`~detsim.track.base.workloads.Workload`), ``mode``, ``dtype``, ``device``, ``repeats``,
``threads`` and ``image`` (where to save the image, raw float32 little-endian (slow, fast)). The
process sets torch's thread count, warms up on a 64² detector (which compiles, for the compiled path),
times ``repeats`` renders of the workload and answers ``wall_s_all`` and ``cpu_s_all`` (wall-clock and
CPU seconds of each render, prepare included, all threads' and worker processes' CPU together), ``chunk_pixels``,
``peak_rss_mb`` and ``clock`` (what is timed).
"""

from __future__ import annotations

import resource
import time
from pathlib import Path

from detsim.track.base.workloads import Workload

WARM_UP_PIXELS = 64  # detector side of the warm-up render


def peak_rss_mb() -> float | None:
    """This process's peak resident memory since it started (``VmHWM``), or None where not reported."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def cpu_seconds() -> float:
    """CPU seconds so far of this process and of the children it has reaped: a render's worker processes
    (:mod:`detsim.processes`) are reaped before it returns."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def render_job(job: dict) -> dict:
    """Inside the measured process: warm up, time the renders, save the image as raw float32."""
    import torch

    import detsim
    from detsim.argconfig import config_from_argv
    from detsim.engine import prepare, render

    torch.set_num_threads(job["threads"])
    dtype = getattr(torch, job["dtype"])
    device = torch.device(job["device"])
    workload = Workload(**job["workload"])
    config = workload.config(config_from_argv)
    detsim.simulate(workload.resized(min(WARM_UP_PIXELS, workload.pixels)).config(config_from_argv), device=device,
                    dtype=dtype, mode=job["mode"])  # compiles, for the compiled path
    gpu = device.type == "cuda"
    walls, cpus = [], []
    for _ in range(job["repeats"]):
        wall, cpu = time.perf_counter(), cpu_seconds()
        with torch.no_grad():
            image, info = render(prepare(config, device=device, dtype=dtype), mode=job["mode"])
        if gpu:
            torch.cuda.synchronize(device)
        walls.append(time.perf_counter() - wall)
        cpus.append(cpu_seconds() - cpu)
    image.detach().to("cpu", torch.float32).numpy().astype("<f4").tofile(job["image"])
    return {"wall_s_all": walls, "cpu_s_all": cpus, "chunk_pixels": info.chunk_pixels,
            "peak_rss_mb": peak_rss_mb(), "clock": "prepare + render, after import and a warm-up"}

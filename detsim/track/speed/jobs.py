"""The jobs a speed run measures in, each a fresh process (:func:`detsim.track.base.fresh.run_job`).

:func:`process_job` times a whole program as a user runs it: ``repeats`` runs, blocked in ``wait4`` (so it takes
no CPU from the program and sees its end at once), in the job's process group (a kill of the group ends it
too). Per run: ``wall_s`` (start to exit, interpreter start included), ``cpu_s`` (user + system of the program
and its children, all threads), ``returncode`` and ``stderr_tail``; it stops at the first run that fails.
``job["output"]`` is removed before each run, so that what is read back is the last run's.

:func:`render_job` times detsim's render: it sets torch's thread count, warms up on a 64² detector (which
compiles, for the compiled path), times ``repeats`` renders (prepare included; CPU seconds of every thread and
of the worker processes a render forks) and saves the last image as raw float32 (slow, fast).
"""

from __future__ import annotations

import os
import resource
import subprocess
import tempfile
import time
from pathlib import Path

TAIL_BYTES = 4096  # of the program's stderr kept for the last line
WARM_UP_PIXELS = 64  # detector side of the warm-up render


def process_job(job: dict) -> dict:
    """Inside the timer's process: run ``job["argv"]`` ``job["repeats"]`` times; ``{"runs": [record...]}``."""
    runs = []
    for _ in range(job.get("repeats", 1)):
        runs.append(_timed(job))
        if runs[-1]["returncode"] != 0:
            break
    return {"runs": runs}


def _timed(job: dict) -> dict:
    """One run of the program, timed."""
    env = {**os.environ, **job.get("env", {})}
    if job.get("output"):
        Path(job["output"]).unlink(missing_ok=True)
    with tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        process = subprocess.Popen(job["argv"], cwd=job.get("cwd"), env=env, stdin=subprocess.DEVNULL,
                                   stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.perf_counter() - started
        process.returncode = os.waitstatus_to_exitcode(status)
        err.seek(max(0, err.seek(0, os.SEEK_END) - TAIL_BYTES))
        tail = err.read().decode(errors="replace").strip().splitlines()
    return {"wall_s": wall, "cpu_s": usage.ru_utime + usage.ru_stime, "returncode": process.returncode,
            "stderr_tail": tail[-1] if tail else ""}


def cpu_seconds() -> float:
    """CPU seconds so far of this process and of the children it has reaped: a render's worker processes
    (:mod:`detsim.host.processes`) are reaped before it returns."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def peak_rss_mb() -> float | None:
    """This process's peak resident memory since it started (``VmHWM``), or None where not reported."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def render_job(job: dict) -> dict:
    """Inside the measured process: warm up, time the renders, save the image as raw float32."""
    import torch

    import detsim
    from detsim.commandline.to_config import config_from_argv
    from detsim.rendering.engine import prepare, render
    from detsim.track.base.workloads import Workload

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

"""The speed job of one path: each workload's first render (cold: compile and set-up included) and its best
warm render, in pixel·steps per second; the fixed cost of a call (a render so small that its time is nearly all
overhead); what one render launches; and the hashes of the first and last renders (the determinism of one
process)."""

from __future__ import annotations

import statistics
import time

import torch

from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.renders import fused, launches, ready, render, workload_config
from detsim.track.gpu.steps import keep_partial
from detsim.track.base.status import Status

ENTRY = "detsim.track.gpu.speed:speed_job"


def speed_job(job: dict) -> dict:
    """``job``: {"path": [mode, dtype], "device", "workloads": [names], "overhead": name, "warm_calls",
    "threads" (CPU only; None: torch's default), "deadline_s"}. A workload not started before the deadline is
    listed under ``not_measured``."""
    started = time.monotonic()
    path = GpuPath(*job["path"])
    if job.get("threads"):
        torch.set_num_threads(job["threads"])
    device = ready(job["device"])
    out = {"path": path.name, "device": job["device"], "workloads": {}, "not_measured": [], "overhead": None}

    def in_time() -> bool:
        return time.monotonic() - started < job["deadline_s"]

    for name in job["workloads"]:
        if not in_time():
            out["not_measured"].append(name)
            continue
        out["workloads"][name] = measure(name, path, device, job["warm_calls"])
        keep_partial(job, out)
    if in_time():
        config = workload_config(job["overhead"])
        render(config, path, device)
        best = min(render(config, path, device).seconds for _ in range(max(job["warm_calls"], 3)))
        out["overhead"] = {"workload": job["overhead"], "warm_best_ms": round(best * 1e3, 3)}
    else:
        out["not_measured"].append(job["overhead"])
    return out


def measure(name: str, path: GpuPath, device: torch.device, warm_calls: int) -> dict:
    """One workload: cold and warm wall times, rates, launches and the first and last renders' hashes."""
    config = workload_config(name)
    pixel_steps = workload(name).pixel_steps
    first = render(config, path, device)
    warm = [render(config, path, device) for _ in range(warm_calls)]
    best = min(r.seconds for r in warm)
    return {
        "pixel_steps": pixel_steps,
        "fused": fused(config, path, device),
        "cold_s": round(first.seconds, 4),
        "warm_best_s": round(best, 6),
        "warm_median_s": round(statistics.median(r.seconds for r in warm), 6),
        "cold_pixel_steps_per_s": pixel_steps / first.seconds,
        "warm_pixel_steps_per_s": pixel_steps / best,
        "launches": launches(config, path, device),
        "sha256": [first.sha256, warm[-1].sha256],
    }


def judge(data: dict) -> tuple[Status, str]:
    """Timings are facts, not verdicts: ok when every workload was measured, else why not."""
    if data["not_measured"]:
        return Status.TIMED_OUT, f"not measured before the job's deadline: {', '.join(data['not_measured'])}"
    return Status.OK, ""

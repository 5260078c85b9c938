"""The golden-parity job of one path on one device: every golden case (or the plan's few) rendered as the
``detsim`` command reads its arguments, against nanoBragg.c's image (the suite's :func:`image_metrics`), with
each image's sha256 (for the CUDA-against-CPU comparison) and one render of the determinism workload (its
hash is the second process of the path's determinism).

The compiled and Triton paths run their own kernel only where a case is fusable
(:func:`detsim.rendering.paths.fusable`); elsewhere they run the eager path's code, so such a case is listed as
``eager_code`` and not rendered again: the eager path's parity is its parity."""

from __future__ import annotations

import time
from pathlib import Path

import torch

from detsim.track.base.golden import load_cases
from detsim.track.base.metrics import PARITY_MIN_R, passes_parity
from detsim.track.gpu.plan import GpuPath
from detsim.track.gpu.renders import fused, ready, render, workload_config
from detsim.track.gpu.steps import keep_partial
from detsim.track.base.status import Status
from detsim.track.measure.parity import image_metrics

ENTRY = "detsim.track.gpu.parity:parity_job"


def parity_job(job: dict) -> dict:
    """``job``: {"path": [mode, dtype], "device", "golden_dir", "cases": [ids] or None (all), "hash_workload":
    name or None, "threads" (CPU only), "deadline_s"}. Cases not started before the deadline are listed under
    ``not_run``."""
    from detsim import config_from_argv

    started = time.monotonic()
    path = GpuPath(*job["path"])
    if job.get("threads"):
        torch.set_num_threads(job["threads"])
    device = ready(job["device"])
    cases = [c for c in load_cases(Path(job["golden_dir"])) if job["cases"] is None or c.id in job["cases"]]
    out = {"path": path.name, "device": job["device"], "cases": {}, "not_run": [], "hash": None}
    if job["hash_workload"]:
        out["hash"] = {"workload": job["hash_workload"],
                       "sha256": render(workload_config(job["hash_workload"]), path, device).sha256}
        keep_partial(job, {**out, **summarize(out["cases"])})
    for case in cases:
        if time.monotonic() - started >= job["deadline_s"]:
            out["not_run"].append(case.id)
            continue
        try:
            config = case.config(config_from_argv)
            if path.mode != "eager" and not fused(config, path, device):
                out["cases"][case.id] = {"eager_code": True}
                continue
            done = render(config, path, device)
            metrics = image_metrics(done.image, case.reference((config.detector.spixels, config.detector.fpixels)))
            out["cases"][case.id] = {"r": metrics["r"], "max_rel": metrics["max_rel"], "worst": metrics["worst"],
                                     "sha256": done.sha256, "seconds": round(done.seconds, 4)}
        except Exception as exc:  # noqa: BLE001 - one broken case is recorded, the others go on
            out["cases"][case.id] = {"error": f"{type(exc).__name__}: {exc}".splitlines()[0]}
        keep_partial(job, {**out, **summarize(out["cases"])})
    out.update(summarize(out["cases"]))
    return out


def summarize(cases: dict) -> dict:
    """``rendered`` (how many cases), ``min_r`` and ``worst_case`` (the case of the lowest r), ``below_line``
    (cases under the acceptance line or with no r), ``errors`` (cases that did not render), ``eager_code`` (cases
    the path left to the eager code)."""
    rendered = {cid: c for cid, c in cases.items() if "sha256" in c}
    scored = {cid: c["r"] for cid, c in rendered.items() if c["r"] is not None}
    worst = min(scored, key=scored.get) if scored else None
    return {"min_r": scored[worst] if worst else None, "worst_case": worst,
            "below_line": sorted(cid for cid, c in rendered.items() if not passes_parity(c["r"], PARITY_MIN_R)),
            "errors": sorted(cid for cid, c in cases.items() if "error" in c),
            "rendered": len(rendered), "eager_code": sum(1 for c in cases.values() if c.get("eager_code"))}


def judge(data: dict) -> tuple[Status, str]:
    problems = []
    if data["below_line"]:
        problems.append(f"r under {PARITY_MIN_R} in {len(data['below_line'])} case(s): "
                        f"{', '.join(data['below_line'][:5])}")
    if data["errors"]:
        problems.append(f"{len(data['errors'])} case(s) did not render: {', '.join(data['errors'][:5])}")
    if problems:
        return Status.FAILED, "; ".join(problems)
    if not data["rendered"] and not data["eager_code"]:
        return Status.CRASHED, "no case was rendered"
    if data["not_run"]:
        return Status.TIMED_OUT, f"{len(data['not_run'])} case(s) not rendered before the job's deadline"
    return Status.OK, ""

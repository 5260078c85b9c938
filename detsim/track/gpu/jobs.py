"""The device check's jobs: what runs inside a step's child process, and how its answer is judged.

Input: a job's JSON object (each ``*_job`` names its keys; every job gets ``deadline_s``, its soft deadline, and
keeps what it has so far with :func:`~.steps.keep_partial`). Output: its JSON answer; each ``judge_*`` turns an
answer into (:class:`Status`, one line of reason). The jobs: the machine (:func:`probe_job`), one path's speed
(:func:`speed_job`) and golden parity (:func:`parity_job`), each render timed to the device's last kernel and
hashed (:func:`render`), and the asv suite's device benchmarks (:func:`benchmarks_job`)."""

from __future__ import annotations

import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import torch

from detsim.track.base.golden import load_cases
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import PARITY_MIN_R, passes_parity
from detsim.track.base.status import Status
from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.steps import keep_partial
from detsim.track.measure.parity import image_metrics

DTYPES = {"float64": torch.float64, "float32": torch.float32}
BENCHMARK = "bench_engine.PathThroughput.track_ns_per_pixel_step"  # asv's name: module.class.method


@dataclass(frozen=True)
class PathRender:
    """A finished render: its image (on the CPU, float64), the image's sha256 and its wall seconds."""

    image: object  # numpy array (slow, fast)
    sha256: str
    seconds: float


def ready(device: str) -> torch.device:
    """The device, its context made (so that no timing includes the driver's start-up)."""
    dev = torch.device(device)
    torch.zeros(1, device=dev)
    _synchronize(dev)
    return dev


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def workload_config(name: str):
    """The configuration the ``detsim`` command reads from a workload's nanoBragg command line."""
    from detsim import config_from_argv

    return workload(name).config(config_from_argv)


def render(config, path: GpuPath, device: torch.device) -> PathRender:
    """Prepare and render ``config`` on ``path``, timed from the start to the device's last kernel."""
    from detsim import prepare, render as engine_render

    started = time.perf_counter()
    with torch.no_grad():
        image, _ = engine_render(prepare(config, device=device, dtype=DTYPES[path.dtype]), mode=path.mode)
    _synchronize(device)
    seconds = time.perf_counter() - started
    ours = image.detach().cpu().double().numpy()
    return PathRender(ours, image_sha256(ours), seconds)


def fused(config, path: GpuPath, device: torch.device) -> bool:
    """Whether ``path`` renders ``config`` with its own fused kernel (else the eager code does the work)."""
    from detsim import prepare
    from detsim.rendering import paths as render_paths

    return path.mode != "eager" and render_paths.fusable(prepare(config, device=device, dtype=DTYPES[path.dtype]))


def launches(config, path: GpuPath, device: torch.device) -> dict:
    """What one render asks of the device, by ``torch.profiler``: ``aten_ops`` (top-level ATen calls, on any
    device), and on CUDA ``kernels`` and ``memory_ops`` (copies and fills) the device ran."""
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities) as prof:
        render(config, path, device)
    counts = {"aten_ops": 0, "kernels": None, "memory_ops": None}
    if device.type == "cuda":
        counts.update(kernels=0, memory_ops=0)
    for event in prof.events():
        if event.device_type == DeviceType.CUDA:
            memory = event.name.lower().startswith(("memcpy", "memset"))
            counts["memory_ops" if memory else "kernels"] += 1
        elif event.cpu_parent is None and event.name.startswith("aten::"):
            counts["aten_ops"] += 1
    return counts


def _started(job: dict):
    """A path job's path, its device made ready (on ``threads`` CPU threads where given) and its clock: a
    function that says whether the job's soft deadline is still ahead."""
    started = time.monotonic()
    if job.get("threads"):
        torch.set_num_threads(job["threads"])
    return GpuPath(*job["path"]), ready(job["device"]), lambda: time.monotonic() - started < job["deadline_s"]


def probe_job(job: dict) -> dict:
    """``job``: {"root": the checkout}. ``cuda`` is None where torch sees no CUDA device."""
    from detsim.track.base.runtime import environment

    env = environment(Path(job["root"]))
    cuda = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        cuda = {"name": props.name, "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count, "memory_gib": round(props.total_memory / 2**30, 1),
                "cuda_version": torch.version.cuda, "driver_devices": torch.cuda.device_count()}
    return {"environment": env, "cuda": cuda}


def judge_probe(data: dict) -> tuple[Status, str]:
    return Status.OK, ""


def speed_job(job: dict) -> dict:
    """Each workload's first render (cold: compile and set-up included) and its best warm render, the fixed cost
    of a call (a render so small that its time is nearly all overhead), what one render launches, and the hashes
    of the first and last renders (the determinism of one process).

    ``job``: {"path": [mode, dtype], "device", "workloads": [names], "overhead": name, "warm_calls",
    "threads" (CPU only; None: torch's default)}. A workload not started before the deadline is listed under
    ``not_measured``."""
    path, device, in_time = _started(job)
    out = {"path": path.name, "device": job["device"], "workloads": {}, "not_measured": [], "overhead": None}
    for name in job["workloads"]:
        if not in_time():
            out["not_measured"].append(name)
            continue
        out["workloads"][name] = _measure(name, path, device, job["warm_calls"])
        keep_partial(job, out)
    if in_time():
        config = workload_config(job["overhead"])
        render(config, path, device)
        best = min(render(config, path, device).seconds for _ in range(max(job["warm_calls"], 3)))
        out["overhead"] = {"workload": job["overhead"], "warm_best_ms": round(best * 1e3, 3)}
    else:
        out["not_measured"].append(job["overhead"])
    return out


def _measure(name: str, path: GpuPath, device: torch.device, warm_calls: int) -> dict:
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


def judge_speed(data: dict) -> tuple[Status, str]:
    """Timings are facts, not verdicts: ok when every workload was measured, else why not."""
    if data["not_measured"]:
        return Status.TIMED_OUT, f"not measured before the job's deadline: {', '.join(data['not_measured'])}"
    return Status.OK, ""


def parity_job(job: dict) -> dict:
    """Every golden case (or the plan's few) rendered as the ``detsim`` command reads its arguments, against
    nanoBragg.c's image, with its sha256 (for the CUDA-against-CPU comparison), and one render of the determinism
    workload (the second process of the path's determinism). The compiled and Triton paths run their own kernel
    only where a case is fusable (:func:`detsim.rendering.paths.fusable`); elsewhere they run the eager path's
    code, so such a case is listed as ``eager_code``, not rendered again: the eager path's parity is its parity.

    ``job``: {"path": [mode, dtype], "device", "golden_dir", "cases": [ids] or None (all), "hash_workload":
    name or None, "threads" (CPU only)}. Cases not started before the deadline are listed under ``not_run``."""
    from detsim import config_from_argv

    path, device, in_time = _started(job)
    cases = [c for c in load_cases(Path(job["golden_dir"])) if job["cases"] is None or c.id in job["cases"]]
    out = {"path": path.name, "device": job["device"], "cases": {}, "not_run": [], "hash": None}
    if job["hash_workload"]:
        out["hash"] = {"workload": job["hash_workload"],
                       "sha256": render(workload_config(job["hash_workload"]), path, device).sha256}
        keep_partial(job, {**out, **summarize(out["cases"])})
    for case in cases:
        if not in_time():
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


def judge_parity(data: dict) -> tuple[Status, str]:
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


def benchmarks_job(job: dict) -> dict:
    """``benchmarks/bench_engine.py``'s ``PathThroughput`` on this device, each set up and tracked as asv would,
    under asv's name, parameters, unit and version, so that they can be entered into the asv history later (the
    GPU machines have no asv). ``job``: {"root", "device", "workloads": names or None (all), "dtypes": names or
    None}."""
    started = time.monotonic()
    sys.path.insert(0, job["root"])
    from benchmarks import bench_engine

    suite = bench_engine.PathThroughput
    out = {"benchmark": BENCHMARK, "unit": suite.unit, "version": suite.version, "param_names": suite.param_names,
           "results": [], "not_run": []}
    for combo in itertools.product(*suite.params):
        params = dict(zip(suite.param_names, combo))
        if params["device"] != job["device"] or any(job[key] is not None and params[axis] not in job[key]
                                                    for key, axis in (("workloads", "workload"), ("dtypes", "dtype"))):
            continue
        if time.monotonic() - started >= job["deadline_s"]:
            out["not_run"].append(params)
            continue
        bench = suite()
        try:
            bench.setup(*combo)
            out["results"].append({"params": params, "value": bench.track_ns_per_pixel_step(*combo)})
        except NotImplementedError as exc:  # asv's skip
            out["results"].append({"params": params, "skipped": str(exc)})
        keep_partial(job, out)
    return out


def judge_benchmarks(data: dict) -> tuple[Status, str]:
    if data["not_run"]:
        return Status.TIMED_OUT, f"{len(data['not_run'])} benchmark(s) not run before the job's deadline"
    if not any("value" in r for r in data["results"]):
        return Status.CRASHED, "no benchmark measured anything"
    return Status.OK, ""

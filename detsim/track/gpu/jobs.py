"""The device check's jobs: what runs inside a step's child process, and how its answer is judged.

Input: a job (each ``*_job`` takes its own :class:`~.steps.StepJob`; every job gets ``deadline_s``, its soft
deadline, and keeps what it has so far with :func:`~.steps.keep_partial`). Output: its JSON answer; each
``judge_*`` turns an answer into (:class:`Status`, one line of reason). The jobs: the machine (:func:`probe_job`),
one path's speed (:func:`speed_job`) and golden parity (:func:`parity_job`, the suite's one parity loop), each
render timed to the device's last kernel by the suite's one timed render and hashed (:func:`render`), the asv
suite's device benchmarks (:func:`benchmarks_job`), and the Triton kernels' atomics, with the fused kernel's
compile-only report (:func:`atomics_job`)."""

from __future__ import annotations

import itertools
import os
import re
import statistics
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import torch

from detsim.track.base.golden import load_cases
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import PARITY_MIN_R, passes_parity
from detsim.track.base.parity import golden_parity
from detsim.track.base.status import Status
from detsim.track.base.timing import Timed, summary, synchronize, timed, timed_calls
from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.steps import StepJob, keep_partial
from detsim.track.measure.launches import OpCounts, triton_launches

DTYPES = {"float64": torch.float64, "float32": torch.float32}
BENCHMARK = "bench_engine.PathThroughput.track_ns_per_pixel_step"  # asv's name: module.class.method
PTX_ATOMIC = re.compile(r"^\s*(?:@!?%\w+\s+)?((?:atom|red)\.[\w.]+)", re.M)  # atomic and reduction instructions
TTIR_ATOMIC = re.compile(r"\btt\.atomic_\w+")
DRY_TARGET = ("cuda", 90, 32)  # an H100's: backend, compute capability, warp size
POINTER_TYPES = {"float64": "fp64", "float32": "fp32"}  # a pointer argument's Triton type, by dtype


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
    synchronize(torch, dev)
    return dev


def workload_config(name: str):
    """The configuration the ``detsim`` command reads from a workload's nanoBragg command line."""
    from detsim import config_from_argv

    return workload(name).config(config_from_argv)


def renderer(config, path: GpuPath, device: torch.device):
    """A call that prepares and renders ``config`` on ``path`` (the engine's ``(image, info)``), to be timed."""
    from detsim import prepare, render as engine_render

    return lambda: engine_render(prepare(config, device=device, dtype=DTYPES[path.dtype]), mode=path.mode)


def render(config, path: GpuPath, device: torch.device) -> PathRender:
    """Prepare and render ``config`` on ``path``, timed from the start to the device's last kernel."""
    return path_render(timed(torch, renderer(config, path, device), device))


def path_render(done: Timed) -> PathRender:
    ours = done.result[0].detach().cpu().double().numpy()
    return PathRender(ours, image_sha256(ours), done.wall_s)


def fused(config, path: GpuPath, device: torch.device) -> bool:
    """Whether ``path`` renders ``config`` with its own fused kernel (else the eager code does the work): the
    Triton path's whole-image kernel, or the compiled path's lane sum."""
    from detsim import prepare
    from detsim.rendering import fused_image, paths as render_paths

    setup = prepare(config, device=device, dtype=DTYPES[path.dtype])
    if path.mode == "triton" and fused_image.unfused_reason(setup) is None:
        return True
    return path.mode != "eager" and render_paths.fusable(setup)


def launches(config, path: GpuPath, device: torch.device, *, render_only: bool = False) -> dict:
    """What one render asks of the device, by ``torch.profiler``: ``aten_ops`` (top-level ATen calls, on any
    device), on CUDA ``kernels`` and ``memory_ops`` (copies and fills) the device ran, and under Triton's
    interpreter (a CPU) ``interpreted_launches``, the Triton kernels launched (on CUDA they are among
    ``kernels``). ``render_only``: the set-up is prepared before the profiler starts (what a render with a
    cached set-up asks); else prepare and render are both counted."""
    from detsim import prepare, render as engine_render
    from torch.autograd import DeviceType
    from torch.profiler import ProfilerActivity, profile

    setup = prepare(config, device=device, dtype=DTYPES[path.dtype]) if render_only else None
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with _interpreted_launches() as interpreted, profile(activities=activities) as prof:
        if setup is None:
            render(config, path, device)
        else:
            timed(torch, lambda: engine_render(setup, mode=path.mode), device)
    counts = {"aten_ops": 0, "kernels": None, "memory_ops": None, "interpreted_launches": interpreted()}
    if device.type == "cuda":
        counts.update(kernels=0, memory_ops=0)
    for event in prof.events():
        if event.device_type == DeviceType.CUDA:
            memory = event.name.lower().startswith(("memcpy", "memset"))
            counts["memory_ops" if memory else "kernels"] += 1
        elif event.cpu_parent is None and event.name.startswith("aten::"):
            counts["aten_ops"] += 1
    return counts


@contextmanager
def _interpreted_launches():
    """Count the Triton kernels launched under Triton's interpreter while inside, by the suite's one rule
    (:func:`detsim.track.measure.launches.triton_launches`): yields a function that gives the count, None where the
    interpreter is off (CUDA: the profiler sees those kernels)."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        yield lambda: None
        return
    counts = OpCounts()
    with triton_launches(counts):
        yield lambda: counts.triton_launches


def kernel_seconds(setup, path: GpuPath, device: torch.device) -> float:
    """One render of a prepared ``setup`` alone: on CUDA the time between two events recorded on the stream around
    it (the device's time, host gaps inside the render included); on a CPU the timed render's wall seconds."""
    from detsim import render as engine_render

    if device.type != "cuda":
        return timed(torch, lambda: engine_render(setup, mode=path.mode), device).wall_s
    with torch.no_grad():
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        engine_render(setup, mode=path.mode)
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / 1e3  # elapsed_time: milliseconds


def varied_configs(name: str, count: int) -> list:
    """``count`` configurations of workload ``name``, each at another ``-distance`` (1 nm apart: the same image to
    the eye, a new configuration to any cache)."""
    from detsim import config_from_argv

    argv = workload(name).argv()
    at = argv.index("-distance") + 1
    return [config_from_argv([*argv[:at], f"{float(argv[at]) + (i + 1) * 1e-6:.9f}", *argv[at + 1:]])
            for i in range(count)]


def fixed_cost(name: str, path: GpuPath, device: torch.device, calls: int) -> dict:
    """The cost of a call whose render is nearly nothing (prepare + render + synchronize, wall clock, ms): ``new``
    with a new configuration each call (no cache can hit), ``cached`` with the same one each call, after one
    untimed call of each."""
    configs = varied_configs(name, calls + 1)
    same = workload_config(name)
    render(configs[0], path, device)
    new = [render(config, path, device).seconds for config in configs[1:]]
    render(same, path, device)
    cached = [render(same, path, device).seconds for _ in range(calls)]
    return {"workload": name, **{kind: {"calls": len(times), "best_ms": round(min(times) * 1e3, 4),
                                        "median_ms": round(statistics.median(times) * 1e3, 4)}
                                 for kind, times in (("new", new), ("cached", cached))}}


@dataclass(frozen=True)
class ProbeJob(StepJob):
    root: str  # the checkout


@dataclass(frozen=True)
class SpeedJob(StepJob):
    path: tuple[str, str]  # mode, dtype
    device: str
    workloads: tuple[str, ...]
    profile: tuple[str, ...]  # the workloads whose launches are counted
    overhead: str  # the fixed cost's workload
    warm_calls: int
    repeat_s: float
    fixed_cost_calls: int
    threads: int | None = None  # CPU only; None: torch's default


@dataclass(frozen=True)
class ParityJob(StepJob):
    path: tuple[str, str]  # mode, dtype
    device: str
    golden_dir: str
    cases: tuple[str, ...] | None  # None: every case
    hash_workload: str | None  # the determinism workload, rendered once
    threads: int | None = None  # CPU only


@dataclass(frozen=True)
class BenchmarksJob(StepJob):
    root: str
    device: str
    workloads: tuple[str, ...] | None  # None: all
    dtypes: tuple[str, ...] | None


@dataclass(frozen=True)
class AtomicsJob(StepJob):
    device: str  # "cuda" or "cpu"


def _started(job: SpeedJob | ParityJob):
    """A path job's path, its device made ready (on ``threads`` CPU threads where given) and its clock: a
    function that says whether the job's soft deadline is still ahead."""
    started = time.monotonic()
    if job.threads:
        torch.set_num_threads(job.threads)
    return GpuPath(*job.path), ready(job.device), lambda: time.monotonic() - started < job.deadline_s


def probe_job(job: ProbeJob) -> dict:
    """The software and the device. ``cuda`` is None where torch sees no CUDA device."""
    from detsim.track.base.runtime import environment

    env = environment(Path(job.root))
    cuda = None
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        cuda = {"name": props.name, "capability": f"{props.major}.{props.minor}",
                "multiprocessors": props.multi_processor_count, "memory_gib": round(props.total_memory / 2**30, 1),
                "cuda_version": torch.version.cuda, "driver_devices": torch.cuda.device_count()}
    return {"environment": env, "cuda": cuda}


def judge_probe(data: dict) -> tuple[Status, str]:
    return Status.OK, ""


def speed_job(job: SpeedJob) -> dict:
    """Per workload: its first render (cold: compile and set-up included); end to end, the timed calls of
    prepare + render + synchronize on the same configuration (wall clock); kernel only, the timed renders of the
    set-up prepared once (:func:`kernel_seconds`); what one render launches (the workloads in ``profile``); and the
    hashes of the first and last end-to-end renders (the determinism of one process). Then the fixed cost of a
    call (:func:`fixed_cost`). A workload not started before the deadline is listed under ``not_measured``."""
    path, device, in_time = _started(job)
    out = {"path": path.name, "device": job.device, "clock": "cuda events" if device.type == "cuda"
           else "host clock", "workloads": {}, "not_measured": [], "fixed_cost": None}
    for name in job.workloads:
        if not in_time():
            out["not_measured"].append(name)
            continue
        out["workloads"][name] = _measure(name, path, device, job.warm_calls, job.repeat_s, name in job.profile)
        keep_partial(job, out)
    if in_time():
        out["fixed_cost"] = fixed_cost(job.overhead, path, device, job.fixed_cost_calls)
    else:
        out["not_measured"].append(job.overhead)
    return out


def _measure(name: str, path: GpuPath, device: torch.device, calls: int, within_s: float, profile: bool) -> dict:
    """One workload: cold, end-to-end and kernel times and rates, launches and the first and last renders'
    hashes."""
    from detsim import prepare

    config = workload_config(name)
    pixel_steps = workload(name).pixel_steps
    first = render(config, path, device)
    warm = timed_calls(torch, renderer(config, path, device), device, calls, within_s=within_s)
    setup = prepare(config, device=device, dtype=DTYPES[path.dtype])
    kernel = [t.result for t in timed_calls(torch, lambda: kernel_seconds(setup, path, device), device, calls,
                                            within_s=within_s)]
    return {
        "pixel_steps": pixel_steps,
        "fused": fused(config, path, device),
        "cold_s": round(first.seconds, 4),
        "cold_pixel_steps_per_s": pixel_steps / first.seconds,
        "end_to_end": summary([t.wall_s for t in warm], pixel_steps),
        "kernel": summary(kernel, pixel_steps),
        "launches": {"end_to_end": launches(config, path, device),
                     "render": launches(config, path, device, render_only=True)} if profile else None,
        "sha256": [first.sha256, path_render(warm[-1]).sha256],
    }


def judge_speed(data: dict) -> tuple[Status, str]:
    """Timings are facts, not verdicts (the goals judge them): ok when every workload was measured, else why
    not."""
    if data["not_measured"]:
        return Status.TIMED_OUT, f"not measured before the job's deadline: {', '.join(data['not_measured'])}"
    return Status.OK, ""


def parity_job(job: ParityJob) -> dict:
    """Every golden case (or the plan's few) rendered as the ``detsim`` command reads its arguments, against
    nanoBragg.c's image, with its sha256 (for the CUDA-against-CPU comparison), and one render of the determinism
    workload (the second process of the path's determinism). The compiled and Triton paths run their own kernel
    only where a case is fusable (:func:`detsim.rendering.paths.fusable`); elsewhere they run the eager path's
    code, so such a case is listed as ``eager_code``, not rendered again: the eager path's parity is its parity.
    Cases not started before the deadline are listed under ``not_run``."""
    from detsim import config_from_argv

    path, device, in_time = _started(job)
    cases = [c for c in load_cases(Path(job.golden_dir)) if job.cases is None or c.id in job.cases]
    out = {"path": path.name, "device": job.device, "cases": {}, "not_run": [], "hash": None}
    if job.hash_workload:
        out["hash"] = {"workload": job.hash_workload,
                       "sha256": render(workload_config(job.hash_workload), path, device).sha256}
        keep_partial(job, {**out, **summarize(out["cases"])})
    leave = (lambda config: None if fused(config, path, device) else "eager_code") if path.mode != "eager" else None
    for done in golden_parity(cases, config_from_argv, lambda config: timed(torch, renderer(config, path, device),
                                                                            device), keep_going=in_time, leave=leave):
        if done.status is Status.NOT_RUN:
            out["not_run"].append(done.case.id)
            continue
        if done.status is Status.SKIPPED:
            out["cases"][done.case.id] = {"eager_code": True}
        elif done.status is Status.CRASHED:
            out["cases"][done.case.id] = {"error": done.error}
        else:
            out["cases"][done.case.id] = {"r": done.metrics["r"], "max_rel": done.metrics["max_rel"],
                                          "worst": done.metrics["worst"], "sha256": image_sha256(done.image),
                                          "seconds": round(done.seconds, 4)}
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


def benchmarks_job(job: BenchmarksJob) -> dict:
    """``benchmarks/bench_engine.py``'s ``PathThroughput`` on this device, each set up and tracked as asv would,
    under asv's name, parameters, unit and version, so that they can be entered into the asv history later (the
    GPU machines have no asv)."""
    started = time.monotonic()
    sys.path.insert(0, job.root)
    from benchmarks import bench_engine

    suite = bench_engine.PathThroughput
    out = {"benchmark": BENCHMARK, "unit": suite.unit, "version": suite.version, "param_names": suite.param_names,
           "results": [], "not_run": []}
    for combo in itertools.product(*suite.params):
        params = dict(zip(suite.param_names, combo))
        asked = ((job.workloads, "workload"), (job.dtypes, "dtype"))
        if params["device"] != job.device or any(wanted is not None and params[axis] not in wanted
                                                 for wanted, axis in asked):
            continue
        if time.monotonic() - started >= job.deadline_s:
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


def atomic_operations(asm: dict) -> list[str]:
    """The atomic operations in a compiled kernel's ``asm`` (its ``ttir`` and ``ptx`` texts), sorted."""
    found = set(TTIR_ATOMIC.findall(asm.get("ttir", ""))) | set(PTX_ATOMIC.findall(asm.get("ptx", "")))
    return sorted(found)


def compile_for(fn, pointer_type: str, constants: dict, target) -> dict:
    """``fn`` (a ``triton.jit`` function) compiled for ``target``: its asm texts by stage. Pointer arguments
    (named ``*_ptr``) point to ``pointer_type``, other runtime arguments are int32."""
    compiled = compile_kernel(fn, pointer_type, constants, target)
    return {stage: text for stage, text in compiled.asm.items() if isinstance(text, str)}


def compile_kernel(fn, pointer_type: str, constants: dict, target, pointer_types: dict | None = None,
                   options: dict | None = None):
    """``fn`` compiled for ``target``, Triton's compiled kernel (its ``asm`` holds the cubin too). Pointer
    arguments (named ``*_ptr``) point to ``pointer_type`` unless ``pointer_types`` names theirs (e.g.
    ``{"s_ptr": "i32"}``); other runtime arguments are int32; ``options``: Triton's (``num_warps``...)."""
    import triton
    from triton.compiler import ASTSource

    signature = {}
    for param in fn.params:
        if param.is_constexpr:
            signature[param.name] = "constexpr"
        elif param.name.endswith("_ptr"):
            signature[param.name] = f"*{(pointer_types or {}).get(param.name, pointer_type)}"
        else:
            signature[param.name] = "i32"
    return triton.compile(ASTSource(fn=fn, signature=signature, constexprs=constants), target=target,
                          options=options)


def atomics_job(job: AtomicsJob) -> dict:
    """Proof that the Triton kernel (:mod:`detsim.rendering.lattice_factor_triton`) uses no atomics: a kernel
    without them sums each pixel in one program, in one order, so its results cannot depend on which program runs
    first. Its Triton IR and PTX are searched for atomic operations (``tt.atomic_*``; PTX ``atom.``/``red.``);
    compiling needs no GPU (Triton's own LLVM and ptxas).

    Compiles the kernel in each dtype for 1 to 3 crystal axes (every
    variant the engine launches), for the device's target (cpu: an H100's), and lists each variant's atomics. On
    CUDA the kernel is also launched once per variant and the kernels Triton compiled for those launches are
    searched too (``launched``): the very code that runs. The fused whole-image kernel
    (:mod:`detsim.rendering.fused_kernel`) is compiled for the same target in each dtype and its compile-only
    report kept under ``fused_kernel`` (registers, local bytes, calls, atomics, instructions per pixel·step):
    the step fails on its spills, calls or atomics."""
    from triton.backends.compiler import GPUTarget

    from detsim.rendering import lattice_factor_triton as triton_kernels

    if job.device == "cuda":
        from triton.runtime import driver

        target = driver.active.get_current_target()
    else:
        target = GPUTarget(*DRY_TARGET)
    fn = triton_kernels._square_lattice_kernel
    out = {"target": f"{target.backend} sm_{target.arch}", "variants": {}, "errors": []}
    for dtype, pointer_type in POINTER_TYPES.items():
        for axes in (1, 2, 3):
            try:
                asm = compile_for(fn, pointer_type, {"J": axes, "BLOCK_P": triton_kernels.BLOCK_P,
                                                     "BLOCK_L": triton_kernels.BLOCK_L}, target)
            except Exception as exc:  # noqa: BLE001 - another Triton's compile API: the launched kernels still count
                out["errors"].append(f"compiling {dtype} J={axes}: {type(exc).__name__}: {exc}".splitlines()[0])
                continue
            out["variants"][f"{dtype} J={axes}"] = _searched(asm)
    if job.device == "cuda":
        for index, asm in enumerate(launched(fn, triton_kernels.square_lattice_lane_sum)):
            out["variants"][f"launched #{index}"] = _searched(asm)
    out["fused_kernel"] = fused_kernel_reports(target, out["errors"])
    return out


def fused_kernel_reports(target, errors: list[str]) -> dict:
    """The fused whole-image kernel's compile-only report for ``target``
    (:func:`detsim.track.gpu.kernel_report.fused_kernel_report`) in each dtype and variant, by name (``float32``,
    ``float64`` for the common case's; ``float64 every feature``...); one that did not compile is left out and its
    error added to ``errors``."""
    from detsim.track.gpu.kernel_report import FUSED_VARIANTS, fused_kernel_report

    reports = {}
    for variant in FUSED_VARIANTS:
        for dtype in POINTER_TYPES:
            name = dtype if variant == "common" else f"{dtype} {variant}"
            try:
                reports[name] = fused_kernel_report(dtype, target=target, variant=variant).to_dict()
            except Exception as exc:  # noqa: BLE001 - another Triton or no cuobjdump: recorded, judged as missing
                errors.append(f"the fused kernel's report, {name}: {type(exc).__name__}: {exc}".splitlines()[0])
    return reports


def _searched(asm: dict) -> dict:
    return {"atomics": atomic_operations(asm), "ptx_lines": asm.get("ptx", "").count("\n")}


def launched(fn, launch) -> list[dict]:
    """Launch ``launch`` (the kernel's wrapper) on tiny CUDA inputs in each dtype for 1 to 3 axes, then return
    the asm of every kernel ``fn`` has compiled (Triton's per-device kernel caches)."""
    import torch

    for dtype in (torch.float64, torch.float32):
        for axes in (1, 2, 3):
            d = torch.rand(70, 3, dtype=dtype, device="cuda")
            launch(d, torch.rand(3, axes, 40, dtype=dtype, device="cuda"),
                   torch.rand(axes, 40, dtype=dtype, device="cuda"), torch.full((axes,), 5.0, dtype=dtype,
                                                                               device="cuda"))
    torch.cuda.synchronize()
    found = []
    for entry in getattr(fn, "device_caches", {}).values():
        for part in entry if isinstance(entry, tuple) else (entry,):
            if isinstance(part, dict):
                found += [kernel.asm for kernel in part.values() if hasattr(kernel, "asm")]
    return found


def judge_atomics(data: dict) -> tuple[Status, str]:
    if not data["variants"] or any(not v["ptx_lines"] for v in data["variants"].values()):
        why = "; ".join(data.get("errors", [])[:2])
        return Status.CRASHED, "no PTX was searched for some variant" + (f" ({why})" if why else "")
    found = {name: v["atomics"] for name, v in data["variants"].items() if v["atomics"]}
    if found:
        return Status.FAILED, "atomics in the Triton kernel: " + "; ".join(f"{k}: {', '.join(v)}"
                                                                              for k, v in found.items())
    fused = data.get("fused_kernel")
    if fused is not None:
        problems = {dtype: report["problems"] for dtype, report in fused.items() if report["problems"]}
        if problems:
            return Status.FAILED, "the fused kernel: " + "; ".join(f"{k}: {', '.join(v)}" for k, v in problems.items())
        if not set(POINTER_TYPES) <= set(fused):
            return Status.CRASHED, "the fused kernel's report is missing for " + ", ".join(
                sorted(set(POINTER_TYPES) - set(fused)))
    return Status.OK, ""

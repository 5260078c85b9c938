"""The device check from start to end: each step in turn under one time budget, most telling first (the machine,
the kernel's atomics, each path's speed, the device tests, each path's parity, the comparisons drawn from them,
the first-divergence finder for a path that differs, the asv benchmarks, nanoBragg.c), into one record.

The record is what ``gpu.json`` holds: ``schema``, ``dry_run``, ``device``, ``commit``, ``dirty``, ``started``,
``wall_s``, ``budget_s``, ``plan`` (workloads, cases, paths), ``steps`` (each step's
:meth:`~detsim.track.gpu.steps.StepResult.record`, in the order run) and ``exit_code``; the command adds
``report`` and ``machine``. Every view of a run (the summary, a reader) draws on it alone."""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from detsim.track.base.exitcodes import worst
from detsim.track.base.fresh import pinned_env
from detsim.track.gpu import atomics, benchmarks, parity, probe, speed
from detsim.track.gpu.comparisons import cuda_matches_cpu, determinism
from detsim.track.gpu.comparisons import diverge_argv, read_report
from detsim.track.gpu.programs import pytest_argv, read_collection, read_run
from detsim.track.gpu.programs import skipped as nanobragg_skipped
from detsim.track.gpu.programs import time_nanobragg
from detsim.track.gpu.plan import REFERENCE_PATH, GpuPath, CheckPlan
from detsim.track.gpu.steps import Budget, StepResult, run_command, run_job_step
from detsim.track.base.status import Status
from detsim.track.base.output import utc_stamp

SCHEMA = 1
STEP_KINDS = ("probe", "atomics", "speed", "parity", "determinism", "divergence", "tests", "benchmarks",
              "nanobragg")
TEST_WORKERS = 8  # pytest-xdist workers for the device tests (16 cores): each holds a CUDA context


@dataclass(frozen=True)
class Options:
    """What the command line adds to the plan."""

    root: Path  # the checkout (tests, benchmarks and golden cases are read from it)
    golden_dir: Path
    nanobragg: Path | None = None  # a nanoBragg.c binary to time, if any
    kinds: tuple[str, ...] = STEP_KINDS  # the kinds of step to run (the others are skipped, saying so)
    commit: str | None = None  # the commit, where the checkout has no git to ask


def run_check(plan: CheckPlan, options: Options, progress=lambda line: None) -> dict:
    """Run the plan's steps under its budget; the record (module docstring). ``progress`` gets one line as each
    step ends (the check's log)."""
    started, stamp = time.monotonic(), utc_stamp()
    budget = Budget(plan.budget_s)
    steps: list[StepResult] = []

    def add(result: StepResult) -> StepResult:
        steps.append(result)
        progress(f"gpu check: {result.name}: {result.status.value} ({result.seconds:.1f} s)"
                 + (f": {result.reason}" if result.reason else ""))
        return result

    def wanted(kind: str) -> bool:
        return kind in options.kinds

    def job(name: str, module, job_spec: dict, box_s: float, path: GpuPath | None = None) -> StepResult:
        return run_job_step(name, module.ENTRY, job_spec, module.judge, budget=budget, box_s=box_s,
                            root=options.root, env=child_env(plan, path, options.root))

    def unwanted(name: str) -> StepResult:
        return StepResult(name, Status.SKIPPED, reason="not among the steps asked for (--steps)")

    boxes, threads = plan.boxes, 1 if plan.dry_run else None
    machine = add(job("probe", probe, {"root": str(options.root)}, boxes.probe) if wanted("probe")
                  else unwanted("probe"))
    add(job("atomics", atomics, {"device": plan.device}, boxes.atomics) if wanted("atomics") else unwanted("atomics"))
    speeds, parities = {}, {}
    for path in plan.paths:
        name = f"speed {path.name}"
        speeds[path] = add(job(name, speed, {"path": [path.mode, path.dtype], "device": plan.device,
                                             "workloads": list(plan.speed_workloads),
                                             "overhead": plan.overhead_workload, "warm_calls": plan.warm_calls,
                                             "threads": threads}, boxes.speed[path.mode], path)
                           if wanted("speed") else unwanted(name))
    add(device_tests(plan, options, budget) if wanted("tests") else unwanted("device tests"))
    for path in plan.paths:
        name = f"parity {path.name}"
        parities[path] = add(job(name, parity, parity_spec(plan, options, path, plan.device, threads),
                                 boxes.parity[path.mode], path) if wanted("parity") else unwanted(name))
    if plan.device == "cuda" and REFERENCE_PATH in parities and wanted("parity"):
        reference = add(job("parity cpu reference", parity,
                            {**parity_spec(plan, options, REFERENCE_PATH, "cpu", os.cpu_count()),
                             "hash_workload": None}, boxes.cpu_reference))
        add(cuda_matches_cpu(parities[REFERENCE_PATH], reference))
    else:
        add(StepResult("cuda float64 eager vs cpu", Status.SKIPPED,
                       reason="no CUDA device (a dry run compares nothing with itself)" if plan.device != "cuda"
                       else "the parity steps were not asked for"))
    differing = []
    for path in plan.paths:
        name = f"determinism {path.name}"
        if not (wanted("determinism") and wanted("speed")):
            add(unwanted(name))
            continue
        result = add(determinism(path, plan.determinism_workload, speeds[path], parities[path]))
        if result.status is Status.FAILED:
            differing.append((path, result.data.get("in_process", True)))
    for path, in_process in differing:
        name = f"divergence {path.name}"
        if not wanted("divergence"):
            add(unwanted(name))
            continue
        done, unfinished, seconds = run_command(name, diverge_argv(path, plan.determinism_workload, plan.device,
                                                                   across_processes=in_process),
                                                budget=budget, box_s=boxes.divergence, root=options.root,
                                                env=child_env(plan, path, options.root))
        add(unfinished or read_report(name, done.returncode, done.stdout, done.stderr, seconds))
    if not differing:
        add(StepResult("divergence", Status.SKIPPED, reason="no path's images differed from run to run"))
    add(job("asv benchmarks", benchmarks, benchmarks_spec(plan, options), boxes.benchmarks)
        if wanted("benchmarks") else unwanted("asv benchmarks"))
    if not wanted("nanobragg"):
        add(unwanted("nanobragg"))
    elif options.nanobragg is None:
        add(nanobragg_skipped())
    else:
        add(time_nanobragg(options.nanobragg, plan.speed_workloads, budget=budget, box_s=boxes.nanobragg,
                           root=options.root))
    environment = machine.data.get("environment", {})
    return {
        "schema": SCHEMA, "dry_run": plan.dry_run, "device": plan.device,
        "commit": options.commit or environment.get("commit"), "dirty": environment.get("dirty"),
        "started": stamp, "wall_s": round(time.monotonic() - started, 1), "budget_s": plan.budget_s,
        "plan": {"speed_workloads": list(plan.speed_workloads), "overhead_workload": plan.overhead_workload,
                 "warm_calls": plan.warm_calls,
                 "golden_cases": None if plan.golden_cases is None else list(plan.golden_cases),
                 "paths": [p.name for p in plan.paths], "boxes": asdict(plan.boxes)},
        "steps": [s.record() for s in steps],
        "exit_code": int(worst(*(s.status.exit_code for s in steps))),
    }


def child_env(plan: CheckPlan, path: GpuPath | None, root: Path) -> dict[str, str]:
    """A step's child's environment: this one with the checkout first on ``PYTHONPATH``, Triton's interpreter on
    for the Triton path on a CPU and off for everything else (a leftover ``TRITON_INTERPRET=1`` would time the
    interpreter on CUDA)."""
    interpret = plan.device == "cpu" and path is not None and path.mode == "triton"
    return pinned_env(root, TRITON_INTERPRET="1" if interpret else "0")


def parity_spec(plan: CheckPlan, options: Options, path: GpuPath, device: str, threads: int | None) -> dict:
    return {"path": [path.mode, path.dtype], "device": device, "golden_dir": str(options.golden_dir),
            "cases": list(plan.golden_cases) if plan.golden_cases is not None else None,
            "hash_workload": plan.determinism_workload, "threads": threads}


def benchmarks_spec(plan: CheckPlan, options: Options) -> dict:
    """Every device benchmark on CUDA; on a CPU one small one (P2 at 256², float32), which proves the suite's
    code still runs here."""
    small = plan.device == "cpu"
    return {"root": str(options.root), "device": plan.device, "workloads": ["P2"] if small else None,
            "dtypes": ["float32"] if small else None}


def device_tests(plan: CheckPlan, options: Options, budget: Budget) -> StepResult:
    """The device-parametrized tests on CUDA; without CUDA, collected only."""
    name = "device tests"
    run = plan.device == "cuda"
    done, unfinished, seconds = run_command(name, pytest_argv(run, TEST_WORKERS), budget=budget,
                                            box_s=plan.boxes.tests, root=options.root,
                                            env=child_env(plan, None, options.root))
    if unfinished is not None:
        return unfinished
    if run:
        return read_run(name, done.returncode, done.stdout, seconds)
    return read_collection(name, done.returncode, done.stdout, seconds, "no CUDA device")

"""The device check from start to end: each step in turn under one time budget, most telling first (the machine,
the kernel's atomics, each path's speed, nanoBragg.c on the same workloads, the device tests, each path's parity,
the comparisons drawn from them, the first-divergence finder for a path that differs, the asv benchmarks), into
one record.

Input: a :class:`~.plan.CheckPlan` and the command line's :class:`Options`. Output: the record ``gpu.json``
holds: ``schema``, ``dry_run``, ``device``, ``commit``, ``dirty``, ``started``, ``wall_s``, ``budget_s``,
``plan`` (workloads, cases, paths), ``steps`` (each step's :meth:`~.steps.StepResult.to_dict`, in the order run),
``exit_code`` (the steps' alone: a goal missed is a figure, not a failing step), ``goals`` (each goal's
verdict, :mod:`~.verdicts`) and ``side_by_side`` (detsim against nanoBragg.c, where it was timed); the command
adds ``report`` and ``machine``. Every view of a run (the summary, a reader)
draws on it alone. Two steps run nothing: a path's determinism and the CUDA-against-CPU comparison are drawn
from the speed and parity jobs' answers.
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Callable

from detsim.track.base.exitcodes import worst
from detsim.track.base.fresh import pinned_env
from detsim.track.base.output import utc_stamp
from detsim.track.base.status import Status
from detsim.track.gpu import jobs
from detsim.track.gpu.plan import REFERENCE_PATH, CheckPlan, GpuPath
from detsim.track.gpu.programs import device_tests, divergence, time_nanobragg
from detsim.track.gpu.steps import Budget, StepJob, StepResult, run_job_step
from detsim.track.gpu.goals import goal_rows, side_by_side

SCHEMA = 1
STEP_KINDS = ("probe", "atomics", "speed", "parity", "determinism", "divergence", "tests", "benchmarks",
              "nanobragg")
TEST_WORKERS = 8  # pytest-xdist workers for the device tests (16 cores): each holds a CUDA context
REFERENCE_STEP = "cuda float64 eager vs cpu"


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
    boxes, threads, root = plan.boxes, 1 if plan.dry_run else None, options.root

    def add(result: StepResult) -> StepResult:
        steps.append(result)
        progress(f"gpu check: {result.name}: {result.status.value} ({result.seconds:.1f} s)"
                 + (f": {result.reason}" if result.reason else ""))
        return result

    def asked(name: str, make: Callable[[str], StepResult], *kinds: str) -> StepResult:
        """The step ``make(name)`` where every one of ``kinds`` was asked for, else a skipped one saying so."""
        if not set(kinds) <= set(options.kinds):
            return add(StepResult(name, Status.SKIPPED, reason="not among the steps asked for (--steps)"))
        return add(make(name))

    def box(box_s: float, path: GpuPath | None = None) -> dict:
        return {"budget": budget, "box_s": box_s, "root": root, "env": child_env(plan, path, root)}

    def job(fn, judge, spec: StepJob, box_s: float, path: GpuPath | None = None) -> Callable[[str], StepResult]:
        return lambda name: run_job_step(name, f"{fn.__module__}:{fn.__name__}", spec, judge, **box(box_s, path))

    machine = asked("probe", job(jobs.probe_job, jobs.judge_probe, jobs.ProbeJob(str(root)), boxes.probe), "probe")
    asked("atomics", job(jobs.atomics_job, jobs.judge_atomics, jobs.AtomicsJob(plan.device), boxes.atomics),
          "atomics")
    speeds = {path: asked(f"speed {path.name}", job(jobs.speed_job, jobs.judge_speed, jobs.SpeedJob(
        (path.mode, path.dtype), plan.device, tuple(plan.speed_workloads),
        profile=(plan.speed_workloads[0],),  # the launches goal's workload: P2
        overhead=plan.overhead_workload, warm_calls=plan.warm_calls, repeat_s=plan.repeat_s,
        fixed_cost_calls=plan.fixed_cost_calls, threads=threads),
        boxes.speed[path.mode], path), "speed") for path in plan.paths}

    def nanobragg(name: str) -> StepResult:
        if options.nanobragg is None:
            return StepResult(name, Status.SKIPPED,
                              reason="no nanoBragg.c binary given (--nanobragg PATH); the check never builds one")
        return time_nanobragg(options.nanobragg, (plan.overhead_workload, *plan.speed_workloads), budget=budget,
                              root=root)

    asked("nanobragg", nanobragg, "nanobragg")
    asked("device tests", lambda name: device_tests(name, plan.device == "cuda", TEST_WORKERS, **box(boxes.tests)),
          "tests")
    parities = {path: asked(f"parity {path.name}", job(jobs.parity_job, jobs.judge_parity,
                                                       parity_spec(plan, options, path, plan.device, threads),
                                                       boxes.parity[path.mode], path), "parity")
                for path in plan.paths}
    if plan.device == "cuda" and REFERENCE_PATH in parities and "parity" in options.kinds:
        reference = job(jobs.parity_job, jobs.judge_parity,
                        replace(parity_spec(plan, options, REFERENCE_PATH, "cpu", os.cpu_count()), hash_workload=None),
                        boxes.cpu_reference)
        add(cuda_matches_cpu(parities[REFERENCE_PATH], add(reference("parity cpu reference"))))
    else:
        add(StepResult(REFERENCE_STEP, Status.SKIPPED,
                       reason="no CUDA device (a dry run compares nothing with itself)" if plan.device != "cuda"
                       else "the parity steps were not asked for"))
    differing = []
    for path in plan.paths:
        result = asked(f"determinism {path.name}", lambda name: determinism(
            name, plan.determinism_workload, speeds[path], parities[path]), "determinism", "speed")
        if result.status is Status.FAILED:
            differing.append((path, result.data.get("in_process", True)))
    for path, in_process in differing:
        asked(f"divergence {path.name}", lambda name: divergence(
            name, path, plan.determinism_workload, plan.device, in_process, **box(boxes.divergence, path)),
            "divergence")
    if not differing:
        add(StepResult("divergence", Status.SKIPPED, reason="no path's images differed from run to run"))
    small = plan.device == "cpu"  # one small benchmark (P2 at 256², float32) proves the suite's code still runs
    asked("asv benchmarks", job(jobs.benchmarks_job, jobs.judge_benchmarks, jobs.BenchmarksJob(
        str(root), plan.device, ("P2",) if small else None, ("float32",) if small else None), boxes.benchmarks),
        "benchmarks")

    environment = machine.data.get("environment", {})
    record = {
        "schema": SCHEMA, "dry_run": plan.dry_run, "device": plan.device,
        "commit": options.commit or environment.get("commit"), "dirty": environment.get("dirty"),
        "started": stamp, "wall_s": round(time.monotonic() - started, 1), "budget_s": plan.budget_s,
        "plan": {"speed_workloads": list(plan.speed_workloads), "throughput_workload": plan.throughput_workload,
                 "overhead_workload": plan.overhead_workload, "warm_calls": plan.warm_calls,
                 "repeat_s": plan.repeat_s, "fixed_cost_calls": plan.fixed_cost_calls,
                 "golden_cases": None if plan.golden_cases is None else list(plan.golden_cases),
                 "paths": [p.name for p in plan.paths], "boxes": asdict(plan.boxes)},
        "steps": [s.to_dict() for s in steps],
        "exit_code": int(worst(*(s.status.exit_code for s in steps))),
    }
    return {**record, "goals": [row.to_dict() for row in goal_rows(record)], "side_by_side": side_by_side(record)}


def child_env(plan: CheckPlan, path: GpuPath | None, root: Path) -> dict[str, str]:
    """A step's child's environment: this one with the checkout first on ``PYTHONPATH``, Triton's interpreter on
    for the Triton path on a CPU and off for everything else (a leftover ``TRITON_INTERPRET=1`` would time the
    interpreter on CUDA)."""
    interpret = plan.device == "cpu" and path is not None and path.mode == "triton"
    return pinned_env(root, TRITON_INTERPRET="1" if interpret else "0")


def parity_spec(plan: CheckPlan, options: Options, path: GpuPath, device: str,
                threads: int | None) -> jobs.ParityJob:
    return jobs.ParityJob((path.mode, path.dtype), device, str(options.golden_dir),
                          tuple(plan.golden_cases) if plan.golden_cases is not None else None,
                          plan.determinism_workload, threads)


def determinism(name: str, workload: str, speed: StepResult, parity: StepResult) -> StepResult:
    """Run twice in the speed job's process, and once more in the parity job's: FAILED where any two differ."""
    hashes = speed.data.get("workloads", {}).get(workload, {}).get("sha256")
    other = (parity.data.get("hash") or {}).get("sha256")
    if not hashes:
        return StepResult(name, Status.CRASHED,
                          reason=f"the speed step did not render {workload} ({speed.status.value})")
    data = {"workload": workload, "in_process": hashes[0] == hashes[1],
            "across_processes": None if other is None else hashes[0] == other, "streams": 1}
    if other is None:
        reason = f"the parity step did not render {workload} ({parity.status.value}): one process only"
        return StepResult(name, Status.OK if data["in_process"] else Status.FAILED, reason=reason, data=data)
    if data["in_process"] and data["across_processes"]:
        return StepResult(name, Status.OK, data=data)
    where = [w for w, same in (("in one process", data["in_process"]), ("across processes", data["across_processes"]))
             if not same]
    return StepResult(name, Status.FAILED, reason=f"{workload}'s image differs {' and '.join(where)}", data=data)


def cuda_matches_cpu(cuda: StepResult, cpu: StepResult) -> StepResult:
    """Per golden case, whether the CUDA float64 eager image has the CPU float64 image's sha256. A fact, not a
    gate: ok once both sides were rendered, whatever the answer."""
    ours, theirs = cuda.data.get("cases", {}), cpu.data.get("cases", {})
    both = sorted(cid for cid in ours if "sha256" in ours[cid] and "sha256" in theirs.get(cid, {}))
    if not both:
        return StepResult(REFERENCE_STEP, Status.CRASHED, reason=f"no case rendered on both (cuda: "
                          f"{cuda.status.value}, cpu: {cpu.status.value})")
    same = [cid for cid in both if ours[cid]["sha256"] == theirs[cid]["sha256"]]
    data = {"compared": len(both), "identical": len(same), "differing": [cid for cid in both if cid not in same]}
    return StepResult(REFERENCE_STEP, Status.OK, data=data)

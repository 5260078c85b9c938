"""What the device check derives from the jobs' answers without running anything: each path's determinism (the
same workload twice in one process, and in two processes) and whether the CUDA float64 eager images are the
CPU's bit for bit."""

from __future__ import annotations

from detsim.track.gpu.plan import GpuPath
from detsim.track.gpu.steps import StepResult, StepStatus


def determinism(path: GpuPath, workload: str, speed: StepResult, parity: StepResult) -> StepResult:
    """Run twice in the speed job's process, and once more in the parity job's: FAILED where any two differ."""
    name = f"determinism {path.name}"
    hashes = speed.data.get("workloads", {}).get(workload, {}).get("sha256")
    other = (parity.data.get("hash") or {}).get("sha256")
    if not hashes:
        return StepResult(name, StepStatus.ERROR,
                          reason=f"the speed step did not render {workload} ({speed.status.value})")
    data = {"workload": workload, "in_process": hashes[0] == hashes[1],
            "across_processes": None if other is None else hashes[0] == other, "streams": 1}
    if other is None:
        reason = f"the parity step did not render {workload} ({parity.status.value}): one process only"
        return StepResult(name, StepStatus.OK if data["in_process"] else StepStatus.FAILED, reason=reason, data=data)
    if data["in_process"] and data["across_processes"]:
        return StepResult(name, StepStatus.OK, data=data)
    where = [w for w, same in (("in one process", data["in_process"]), ("across processes", data["across_processes"]))
             if not same]
    return StepResult(name, StepStatus.FAILED, reason=f"{workload}'s image differs {' and '.join(where)}", data=data)


def cuda_matches_cpu(cuda: StepResult, cpu: StepResult) -> StepResult:
    """Per golden case, whether the CUDA float64 eager image has the CPU float64 image's sha256. A fact, not a
    gate: ok once both sides were rendered, whatever the answer."""
    name = "cuda float64 eager vs cpu"
    ours, theirs = cuda.data.get("cases", {}), cpu.data.get("cases", {})
    both = sorted(cid for cid in ours if "sha256" in ours[cid] and "sha256" in theirs.get(cid, {}))
    if not both:
        return StepResult(name, StepStatus.ERROR, reason=f"no case rendered on both (cuda: {cuda.status.value}, "
                                                          f"cpu: {cpu.status.value})")
    same = [cid for cid in both if ours[cid]["sha256"] == theirs[cid]["sha256"]]
    data = {"compared": len(both), "identical": len(same), "differing": [cid for cid in both if cid not in same]}
    return StepResult(name, StepStatus.OK, data=data)

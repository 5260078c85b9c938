"""What the device check derives from the jobs' answers without running anything: each path's determinism (the
same workload twice in one process, and in two processes) and whether the CUDA float64 eager images are the
CPU's bit for bit. For a path whose images differ from run to run, the first-divergence finder (``detsim-track
diverge``, docs/determinism.md): its command line for the determinism workload, and the culprit read off its
report."""

from __future__ import annotations

import shlex
import sys

from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.steps import StepResult, tail
from detsim.track.base.status import Status


def determinism(path: GpuPath, workload: str, speed: StepResult, parity: StepResult) -> StepResult:
    """Run twice in the speed job's process, and once more in the parity job's: FAILED where any two differ."""
    name = f"determinism {path.name}"
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
    name = "cuda float64 eager vs cpu"
    ours, theirs = cuda.data.get("cases", {}), cpu.data.get("cases", {})
    both = sorted(cid for cid in ours if "sha256" in ours[cid] and "sha256" in theirs.get(cid, {}))
    if not both:
        return StepResult(name, Status.CRASHED, reason=f"no case rendered on both (cuda: {cuda.status.value}, "
                                                          f"cpu: {cpu.status.value})")
    same = [cid for cid in both if ours[cid]["sha256"] == theirs[cid]["sha256"]]
    data = {"compared": len(both), "identical": len(same), "differing": [cid for cid in both if cid not in same]}
    return StepResult(name, Status.OK, data=data)


def diverge_argv(path: GpuPath, workload_name: str, device: str, across_processes: bool) -> list[str]:
    """The finder's command for ``path`` on the workload: compiled code is recorded by its kernels (a dispatch
    mode would make torch.compile fall back to eager); each run in its own process when only processes differed."""
    argv = [sys.executable, "-m", "detsim.track.cli", "diverge", "--nanobragg",
            shlex.join(workload(workload_name).argv()), "--device", device, "--dtype", path.dtype,
            "--mode", path.mode]
    if path.mode != "eager":
        argv += ["--layers", "kernels"]
    if across_processes:
        argv.append("--processes")
    return argv


def read_report(name: str, returncode: int, stdout: str, stderr: str, seconds: float) -> StepResult:
    """The finder's verdict: its exit 1 means it named where the runs differ (the culprit is the first line of
    its FIRST DIVERGENCE block), 0 that the recorded runs did not differ, anything else that it could not tell."""
    lines = stdout.splitlines()
    verdict = next((line.removeprefix("VERDICT").strip() for line in lines if line.startswith("VERDICT")), "")
    first = []
    if "FIRST DIVERGENCE" in lines:
        for line in lines[lines.index("FIRST DIVERGENCE") + 1:]:
            if not line.startswith("  "):
                break
            first.append(line.strip())
    data = {"exit": returncode, "verdict": verdict, "culprit": first[0] if first else None, "first_divergence": first}
    if returncode == 1:
        return StepResult(name, Status.FAILED, seconds, f"culprit: {data['culprit'] or verdict}", data)
    if returncode == 0:
        return StepResult(name, Status.OK, seconds, "the finder's two runs did not differ: " + verdict, data)
    data["log"] = tail(stderr or stdout)
    return StepResult(name, Status.CRASHED, seconds, f"the finder exited {returncode}: "
                      + (data["log"][-1] if data["log"] else "no output"), data)

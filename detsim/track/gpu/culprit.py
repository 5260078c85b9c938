"""A path whose images differ from run to run, through the first-divergence finder (``detsim-track diverge``,
docs/determinism.md): its command line for the determinism workload, and the culprit read off its report."""

from __future__ import annotations

import shlex
import sys

from detsim.track.gpu.plan import GpuPath, workload
from detsim.track.gpu.steps import StepResult, StepStatus, tail


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
        return StepResult(name, StepStatus.FAILED, seconds, f"culprit: {data['culprit'] or verdict}", data)
    if returncode == 0:
        return StepResult(name, StepStatus.OK, seconds, "the finder's two runs did not differ: " + verdict, data)
    data["log"] = tail(stderr or stdout)
    return StepResult(name, StepStatus.ERROR, seconds, f"the finder exited {returncode}: "
                      + (data["log"][-1] if data["log"] else "no output"), data)

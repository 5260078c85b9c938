"""How a bundle was made: ``env.json`` (where it ran) and ``commands.txt`` (what ran, as a re-runnable shell
script)."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from pathlib import Path
from typing import Sequence

from detsim.track.base.fresh import ChildError, run
from detsim.track.base.git import GitError, output
from detsim.track.base.hashing import sha256_bytes
from detsim.track.base.output import REPORTS
from detsim.track.base.provenance import ENV_VARS
from detsim.track.base.runtime import environment
from detsim.track.evidence.durations import RETIMES
from detsim.track.evidence.records import Request
from detsim.track.evidence.pytest_runs import Command

COMMAND_ENV = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
               "PY_COLORS", "FORCE_COLOR", *ENV_VARS)  # what changes what a pytest run does
RETIME_HEADER = "# Re-timing of tests that looked slower than last time"


def bundle_environment(cwd: Path) -> dict:
    """runtime.process.environment() plus pytest, the interpreter and the state of the code."""
    env = environment(cwd)
    try:
        import pytest
        env["pytest"] = pytest.__version__
    except ImportError:
        env["pytest"] = None
    env["python_executable"] = sys.executable
    env["cwd"] = str(cwd)
    env["git_diff_sha256"] = _git_diff_sha256(cwd)
    env["nvidia_smi"] = _nvidia_smi()
    env["env"] = {k: os.environ[k] for k in COMMAND_ENV if k in os.environ}
    return env


def _git_diff_sha256(cwd: Path) -> str | None:
    """Hash of the uncommitted changes to tracked files (None when there are none or no git)."""
    try:
        diff = output(cwd, "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff")
    except GitError:
        return None
    return sha256_bytes(diff) if diff else None


def _nvidia_smi() -> dict:
    """GPU name and driver from nvidia-smi, or why there is none."""
    argv = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
    record = {"command": shlex.join(argv)}
    if shutil.which(argv[0]) is None:
        return {**record, "exit_code": None, "output": "nvidia-smi not found on PATH"}
    try:
        done = run(argv, timeout=60)
    except ChildError as exc:
        return {**record, "exit_code": None, "output": str(exc)}
    return {**record, "exit_code": done.returncode, "output": (done.stdout + done.stderr).strip()}


def invocation(request: Request) -> str:
    """The detsim-track command line that made the bundle (options in canonical form)."""
    words, positional = ["detsim-track", "evidence"], list(request.selection)
    options = ["--area", request.area]
    if request.out_root != REPORTS:
        options += ["--out-root", str(request.out_root)]
    for device in request.asked_devices:
        options += ["--device", device]
    if request.timeout is not None:
        options += ["--timeout", f"{request.timeout:g}"]
    if request.retime != RETIMES:
        options += ["--retime", str(request.retime)]
    if any(a.startswith("-") for a in positional):
        return shlex.join(words + options + ["--", *positional])
    return shlex.join(words + positional + options)


def commands_text(request: Request, commands: Sequence[Command], retimings: Sequence[Command]) -> str:
    """commands.txt: every command in the order run, as a re-runnable shell script."""
    lines = [
        f"# Commands run by `{invocation(request)}` for this bundle, in order.",
        "# Re-run them with `BUNDLE=<empty folder> bash commands.txt`; during the run BUNDLE was the",
        "# temporary folder that was renamed to this bundle when complete.",
        'BUNDLE="${BUNDLE:?set BUNDLE to the folder that receives the logs}"',
        f"cd {shlex.quote(str(request.cwd))}",
    ]
    present = [k for k in COMMAND_ENV if k in os.environ]
    absent = [k for k in COMMAND_ENV if k not in os.environ]
    lines += [f"export {k}={shlex.quote(os.environ[k])}" for k in present]
    if absent:
        lines.append("unset " + " ".join(absent))
    lines += [c.shell() for c in commands]
    if retimings:
        lines += [RETIME_HEADER, 'mkdir -p "$BUNDLE/retime"'] + [c.shell() for c in retimings]
    return "\n".join(lines) + "\n"

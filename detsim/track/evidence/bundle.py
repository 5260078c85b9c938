"""Making one evidence bundle, step by step, in the order of docs/evidence.md ("What runs", "The bundle"),
with how it was made: ``env.json`` (where it ran) and ``commands.txt`` (what ran, as a re-runnable shell
script); progress goes to stderr as each pytest process starts."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from detsim.track.base.fresh import ChildError, run
from detsim.track.base.git import GitError, output
from detsim.track.base.hashing import sha256_bytes
from detsim.track.base.provenance import ENV_VARS
from detsim.track.compare import spelled
from detsim.track.evidence import pytest_runs as pr
from detsim.track.evidence.durations import RETIMES, RetimePlan, retime_plan
from detsim.track.evidence.manifest import write_manifest
from detsim.track.base.exitcodes import BadInput
from detsim.track.evidence.outcomes import (BundleResults, CollectResult, DeviceRun, Key,
                                           LoggedWarning, Outcomes, Request, TestResult)
from detsim.track.evidence.previous import PastBundle, compare_with
from detsim.track.base.status import Status
from detsim.track.evidence.pytest_runs import BUNDLE, RETIME_HEADER, Command, ProcessResult, exit_status, pytest_argv
from detsim.track.evidence.summary import render_summary
from detsim.track.base.output import REPORTS, atomic_write_text, write_json
from detsim.track.base.runtime import environment

COMMAND_ENV = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
               "PY_COLORS", "FORCE_COLOR", *ENV_VARS)  # what changes what a pytest run does


def make_bundle(request: Request, folder: Path, stamp: str, history: Sequence[PastBundle]) -> BundleResults:
    """Run everything and write the bundle into ``folder``; ``history``: earlier bundles, the previous one first."""
    env = bundle_environment(request.cwd)
    write_json(folder / "env.json", env)
    collect, nodeids, command = collect_tests(request, folder)
    commands, runs, tests = [command], {}, []
    for device in request.devices:
        runs[device], records, command = run_device(request, folder, device, collect, nodeids)
        tests += records
        commands += [command] if command else []
    previous = history[0] if history else None
    tests, retimings = retime_suspects(request, folder, runs, tests, previous)
    atomic_write_text(folder / "commands.txt", commands_text(request, commands, retimings))
    outcomes = Outcomes(tuple(sorted(tests, key=lambda t: t.key)), runs)
    comparison = compare_with(previous, outcomes, folder, history) if previous else None
    results = BundleResults(request, stamp, collect, outcomes, comparison)
    write_json(folder / "results.json", results.as_record())
    atomic_write_text(folder / "summary.md", render_summary(results, env))
    write_manifest(folder)
    _usual_permissions(folder)
    return results


def _progress(text: str) -> None:
    print(f"evidence: {text}", file=sys.stderr, flush=True)


def collect_tests(request: Request, folder: Path) -> tuple[CollectResult, list[str], Command]:
    """Collect the selection for every device; raises :class:`BadInput` when pytest refuses it or it is empty."""
    device_args = [a for d in request.devices for a in ("--device", d)]
    command = Command(pytest_argv("--collect-only", "-q", *device_args, *request.selection), "collect.log")
    _progress(f"collecting ({command.log})")
    result = command.execute(folder, request.timeout)
    status, why = exit_status(result, request.timeout)
    text = (folder / command.log).read_text(errors="replace")
    nodeids = pr.collected_nodeids(text)
    if status == Status.NOTHING_COLLECTED or result.exit_code == 4:
        tail = "\n".join(text.rstrip().splitlines()[-8:])
        what = "the selection matched no tests" if status == Status.NOTHING_COLLECTED \
            else "pytest refused the selection"
        if "unrecognized arguments: --device" in text:
            what += _device_option_hint(request.selection, request.cwd)
        raise BadInput(f"{what} ({why}); nothing measured, no bundle written. pytest said:\n{tail}")
    if status == Status.OK:
        why = f"pytest exit {result.exit_code}"
    elif pr.first_error(text):
        why = f"{why}: {pr.first_error(text)}"
    collect = CollectResult(result.exit_code, result.timed_out, result.wall_s, status, why, len(nodeids), command.log)
    return collect, nodeids, command


def _device_option_hint(selection: Sequence[str], cwd: Path) -> str:
    """Why pytest did not know ``--device``: a missing path, or no conftest.py that defines it."""
    missing = [item for item in selection if not item.startswith("-") and ("/" in item or ".py" in item)
               and not (cwd / item.split("::")[0]).exists()]
    if missing:
        return f" (no such file or directory: {', '.join(missing)})"
    return " (it is not under a conftest.py that defines the project's --device option)"


def run_device(request: Request, folder: Path, device: str, collect: CollectResult,
               nodeids: list[str]) -> tuple[DeviceRun, list[TestResult], Command | None]:
    """One device's whole pytest run: its run record, its tests and its command (None: not run)."""
    log, junit = f"pytest-{device}.log", f"junit-{device}.xml"
    if collect.status != Status.OK:
        not_run = DeviceRun(log, junit, dict.fromkeys(pr.OUTCOMES, 0), Status.NOT_RUN, "collection did not complete")
        return not_run, [], None
    command = Command(pytest_argv("-v", "-rA", "--tb=long", "--durations=0", f"--junitxml={BUNDLE}/{junit}",
                                  "--device", device, *request.selection), log)
    _progress(f"running on {device} ({folder / log})")
    result = command.execute(folder, request.timeout)
    text = (folder / log).read_text(errors="replace")
    root = pr.rootdir(text)
    status, why = exit_status(result, request.timeout)
    records = []
    try:
        records = pr.read_junit(folder / junit, nodeids, root)
    except pr.UNREADABLE as exc:
        if status == Status.OK:
            status, why = Status.CRASHED, f"{why}, but its junit XML is unreadable ({type(exc).__name__})"
    why = _crash_detail(status, why, result, text)
    tests = [TestResult(device, **record) for record in records]
    counts = {outcome: sum(t.outcome == outcome for t in tests) for outcome in pr.OUTCOMES}
    warnings = tuple(LoggedWarning.from_record(w) for w in pr.warning_summary(text))
    run = DeviceRun(log, junit, counts, status, why, warnings, str(root) if root else None, result.exit_code,
                    result.wall_s, result.timed_out)
    return run, tests, command


def _crash_detail(status: str, why: str, result: ProcessResult, log_text: str) -> str:
    """``why`` of a crashed run, with the test it was running when killed, or the error it died of."""
    running, error = pr.running_at_end(log_text), pr.first_error(log_text)
    if status == Status.CRASHED and running:
        return f"{why} while running {running}"
    if status == Status.CRASHED and error and result.exit_code not in (0, 1):
        return f"{why}: {error}"
    return why


def retime_suspects(request: Request, folder: Path, runs: dict[str, DeviceRun], tests: list[TestResult],
                    previous: PastBundle | None) -> tuple[list[TestResult], list[Command]]:
    """Re-run the tests that look slower than last time, with control tests alongside: ``tests`` with their
    re-timings, and the re-timing commands."""
    if previous is None or request.retime == 0:
        return tests, []
    commands: list[Command] = []
    timings: dict[Key, list[tuple[float, float]]] = {}  # (seconds, load factor) per re-timing
    for device, run in runs.items():
        plan = retime_plan(tests, previous.outcomes.tests, device)
        if run.status != Status.OK or plan is None or not run.rootdir:
            continue
        _progress(f"re-timing {len(plan.suspects)} test(s) on {device} that look slower than last time, "
                  f"with {len(plan.controls)} control test(s)")
        for n in range(1, request.retime + 1):
            command, passed = _retime_once(request, folder, plan, Path(run.rootdir), n)
            commands.append(command)
            if passed is None:
                continue
            factor = plan.load_factor(passed)
            for nodeid in plan.suspects:
                if nodeid in passed:
                    timings.setdefault((device, nodeid), []).append((passed[nodeid], factor))
    return [_with_retimings(t, timings.get(t.key, [])) for t in tests], commands


def _retime_once(request: Request, folder: Path, plan: RetimePlan, root: Path,
                 n: int) -> tuple[Command, dict[str, float] | None]:
    """Re-timing ``n`` of a plan: its command, and node id -> seconds of the tests that passed (or None)."""
    order = plan.order(n)
    name = f"retime/{plan.device}-{n}"
    command = Command(pytest_argv("-q", f"--rootdir={root}", f"--junitxml={BUNDLE}/{name}.xml",
                                  "--device", plan.device, *(_absolute(i, root) for i in order)), f"{name}.log")
    result = command.execute(folder, request.timeout)
    if exit_status(result, request.timeout)[0] != Status.OK:
        return command, None
    try:
        records = pr.read_junit(folder / f"{name}.xml", order, root)
    except pr.UNREADABLE:
        return command, None
    return command, {r["nodeid"]: r["duration_s"] for r in records if r["outcome"] == "passed"}


def _absolute(nodeid: str, root: Path) -> str:
    path, sep, rest = nodeid.partition("::")
    return str(root / path) + sep + rest


def _with_retimings(test: TestResult, timings: list[tuple[float, float]]) -> TestResult:
    if not timings:
        return test
    return replace(test, retimed_s=tuple(t for t, _ in timings), retime_factors=tuple(f for _, f in timings))


def _usual_permissions(folder: Path) -> None:
    """Give the bundle the modes of ordinarily created files (temporary files are private)."""
    umask = os.umask(0)
    os.umask(umask)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)


# -- how the bundle was made ----------------------------------------------------------------------------


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
    out_root = request.out_root if request.out_root != REPORTS else None
    options = spelled(("--area", request.area), ("--out-root", out_root),
                      *(("--device", device) for device in request.asked_devices),
                      ("--timeout", None if request.timeout is None else f"{request.timeout:g}"),
                      ("--retime", request.retime if request.retime != RETIMES else None))
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

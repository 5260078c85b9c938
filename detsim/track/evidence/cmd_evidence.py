"""``detsim-track evidence``: run a pytest selection on every device and archive the evidence bundle.

One command replaces the by-hand routine of collecting, running on CPU and again on CUDA, teeing
logs, writing ``env.json`` and ``commands.txt``, hashing every artifact, noting skips and diffing
against the previous bundle. It writes ``<out-root>/<area>/<UTC stamp>/`` (see ``docs/evidence.md``):

* ``collect.log``: ``pytest --collect-only -q`` over the selection, for every device at once;
* ``pytest-<device>.log`` and ``junit-<device>.xml``: one whole run per device, stack traces verbatim;
* ``env.json``, ``commands.txt`` (re-runnable), ``results.json`` (per test and device: outcome,
  duration, skip reason), ``summary.md`` and ``sha256.txt`` (``sha256sum -c`` format);
* ``retime/``: only when a test looked slower than last time, the extra timings that judged it.

The bundle is built in a temporary folder beside its final place and renamed when complete. Exit
codes: 0 no new failures, 1 new failures (with no previous bundle, every failure is new), 2 a pytest
process crashed, timed out or collected nothing, or the input was bad.
"""

from __future__ import annotations

import argparse
import difflib
import json
import math
import os
import re
import shlex
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from detsim.track.base.hashing import sha256_bytes, sha256_file
from detsim.track.base.output import atomic_directory, atomic_write_text, utc_stamp, write_json
from detsim.track.base.provenance import ENV_VARS, environment
from detsim.track.evidence import pytest_results as pr

HELP = "run tests on every device and archive logs, environment, hashes and a verdict compared with last time"

EXIT_OK, EXIT_NEW_FAILURES, EXIT_UNMEASURED = 0, 1, 2
FORMAT = 1

# Duration rule (docs/evidence.md, "Durations"): a move must exceed both a factor and an absolute floor.
MOVE_RATIO = 2.0
MOVE_FLOOR_S = 0.5
RETIMES = 3
HISTORY = 5
FASTER_MIN_SAMPLES = 3
CONTROLS = 5
FACTOR_MIN_S = 0.05
FACTOR_MIN_TESTS = 3

PYTEST_EXIT = {
    0: "all tests passed", 1: "some tests failed", 2: "interrupted (collection errors or a test run stopped)",
    3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected",
}
STAMP_RE = re.compile(r"^(\d{8}T\d{6}Z)(?:-(\d+))?$")
AREA_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
SHA_LINE = re.compile(r"^([0-9a-f]{64}) [ *](.+)$")
BUNDLE = "{bundle}"
COMMAND_ENV = ("PYTHONPATH", "PYTEST_ADDOPTS", "PYTEST_PLUGINS", "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
               "PY_COLORS", "FORCE_COLOR", *ENV_VARS)
STABLE_ARTIFACTS = ("collect.log", "commands.txt", "env.json")
RETIME_HEADER = "# Re-timing of tests that looked slower than last time"
SLOWEST = 10
LISTED = 10


class BadInput(Exception):
    """The selection or the options cannot produce a bundle; nothing is written."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("selection", nargs="*",
                        help="what pytest should run: paths and node ids, resolved from the current "
                             "directory as pytest does; put pytest options after `--`")
    parser.add_argument("--area", help="the bundle goes to OUT_ROOT/AREA/<UTC stamp>/ "
                                       "(one word: letters, digits, . _ -)")
    parser.add_argument("--out-root", type=Path, default=Path("reports"),
                        help="folder holding the areas (default: reports, relative to the current directory)")
    parser.add_argument("--device", action="append", choices=("cpu", "cuda"),
                        help="run on this device (repeatable); default: cpu, plus cuda when available")
    parser.add_argument("--timeout", type=float, metavar="SECONDS",
                        help="kill a pytest process after this long and record a crash (default: no limit)")
    parser.add_argument("--retime", type=int, default=RETIMES, metavar="N",
                        help=f"re-runs that confirm a test which looked slower than last time "
                             f"(default {RETIMES})")
    parser.add_argument("--verify", type=Path, metavar="PATH",
                        help="only re-check the sha256.txt of the bundle at PATH")


def run(args: argparse.Namespace) -> int:
    if args.verify is not None:
        if args.selection or args.area:
            print("evidence: --verify takes a bundle folder and nothing else", file=sys.stderr)
            return EXIT_UNMEASURED
        return verify(args.verify)
    try:
        devices = _devices(args.device)
        area_dir = _area_dir(args.out_root, args.area)
        if args.retime < 0 or (args.timeout is not None and args.timeout <= 0):
            raise BadInput("--retime must be >= 0 and --timeout > 0")
    except BadInput as exc:
        print(f"evidence: {exc}", file=sys.stderr)
        return EXIT_UNMEASURED
    created = not area_dir.exists()
    try:
        stamp = _free_stamp(area_dir)
        with atomic_directory(area_dir / stamp) as folder:
            bundle = Bundle(args, devices, Path.cwd(), folder, stamp, _history(area_dir, stamp))
            bundle.make()
    except BadInput as exc:
        print(f"evidence: {exc}", file=sys.stderr)
        if created and area_dir.is_dir() and not any(area_dir.iterdir()):
            area_dir.rmdir()
        return EXIT_UNMEASURED
    print(bundle.report(area_dir / stamp))
    return bundle.exit_code


# ---------------------------------------------------------------------------------------------------
# Inputs: devices, areas, stamps, earlier bundles


def _devices(chosen: list[str] | None) -> list[str]:
    import torch

    if chosen:
        devices = list(dict.fromkeys(chosen))
        if "cuda" in devices and not torch.cuda.is_available():
            raise BadInput("--device cuda was asked for, but torch.cuda.is_available() is False here")
        return devices
    return ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])


def _area_dir(out_root: Path, area: str | None) -> Path:
    if not area:
        raise BadInput("--area NAME is required (the bundle goes to OUT_ROOT/NAME/<stamp>/)")
    if not AREA_RE.fullmatch(area):
        raise BadInput(f"--area {area!r}: use one word of letters, digits, '.', '_' or '-'")
    return Path.cwd() / out_root / area


def _stamp_key(name: str) -> tuple[str, int] | None:
    match = STAMP_RE.fullmatch(name)
    return (match.group(1), int(match.group(2) or 1)) if match else None


def _free_stamp(area_dir: Path) -> str:
    """The current UTC stamp, suffixed ``-2``, ``-3``... when a bundle (or one in progress) has it."""
    base = utc_stamp()
    taken = {p.name for p in area_dir.iterdir()} if area_dir.is_dir() else set()
    for n in range(1, 10_000):
        name = base if n == 1 else f"{base}-{n}"
        if name not in taken and not any(t.startswith(f".{name}.") for t in taken):
            return name
    raise BadInput(f"no free bundle name for stamp {base} in {area_dir}")


def _history(area_dir: Path, stamp: str) -> list[dict]:
    """Earlier bundles of the area that measured something, newest first (at most :data:`HISTORY`).

    Each: ``name``, ``path`` and ``results`` (its results.json). Unreadable bundles are passed over.
    """
    if not area_dir.is_dir():
        return []
    current = _stamp_key(stamp)
    older = sorted((p for p in area_dir.iterdir() if p.is_dir() and _stamp_key(p.name)
                    and _stamp_key(p.name) < current), key=lambda p: _stamp_key(p.name), reverse=True)
    found = []
    for path in older:
        try:
            results = json.loads((path / "results.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(results, dict) and results.get("measured"):
            found.append({"name": path.name, "path": path, "results": results})
            if len(found) == HISTORY:
                break
    return found


# ---------------------------------------------------------------------------------------------------
# Running pytest


class Command:
    """One pytest process: its argv (with :data:`BUNDLE` standing for the bundle folder) and its log."""

    def __init__(self, argv: list[str], log: str):
        self.argv, self.log = argv, log

    def resolved(self, folder: Path) -> list[str]:
        return [arg.replace(BUNDLE, str(folder)) for arg in self.argv]

    def shell(self) -> str:
        """The command as one re-runnable shell line, output going to ``$BUNDLE/<log>``."""
        words = [_shell_word(arg) for arg in self.argv]
        return " ".join(words) + f" > {_shell_word(BUNDLE + '/' + self.log)} 2>&1"

    def execute(self, folder: Path, timeout: float | None) -> dict:
        """Run it with the log written whole into the bundle; a timeout or interrupt kills the process."""
        log_path = folder / self.log
        log_path.parent.mkdir(parents=True, exist_ok=True)
        start = time.monotonic()
        with open(log_path, "wb") as log:
            proc = subprocess.Popen(self.resolved(folder), stdout=log, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
            try:
                code, timed_out = proc.wait(timeout=timeout), False
            except subprocess.TimeoutExpired:
                _kill(proc)
                code, timed_out = proc.wait(), True
            except BaseException:
                _kill(proc)
                proc.wait()
                raise
        return {"exit_code": code, "timed_out": timed_out, "wall_s": round(time.monotonic() - start, 3)}


def _shell_word(arg: str) -> str:
    if BUNDLE not in arg:
        return shlex.quote(arg)
    escaped = re.sub(r'(["\\$`])', r"\\\1", arg).replace(BUNDLE, "$BUNDLE")
    return f'"{escaped}"'


def _kill(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exit_status(result: dict, timeout: float | None) -> tuple[str, str]:
    """``(status, why)`` of a finished pytest process, before its junit XML is read."""
    code = result["exit_code"]
    if result["timed_out"]:
        return "crashed", f"killed after {timeout:g} s (--timeout)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return "crashed", f"killed by {name}"
    if code in (0, 1):
        return "ok", f"pytest exit {code} ({PYTEST_EXIT[code]})"
    if code == 5:
        return "nothing collected", "pytest exit 5 (no tests collected)"
    return "crashed", f"pytest exit {code} ({PYTEST_EXIT.get(code, 'unexpected exit code')})"


def _pytest(*args: str) -> list[str]:
    """A pytest command in this interpreter: unbuffered (a killed run keeps its log up to the kill),
    without colour codes, and without the cache plugin (no --lf/--sw state carried between runs)."""
    return [sys.executable, "-u", "-m", "pytest", "-p", "no:cacheprovider", "--color=no", *args]


# ---------------------------------------------------------------------------------------------------
# The bundle


class Bundle:
    """Builds one evidence bundle in ``folder`` (the temporary folder that becomes the bundle)."""

    def __init__(self, args, devices: list[str], cwd: Path, folder: Path, stamp: str, history: list[dict]):
        self.args, self.devices, self.cwd, self.folder, self.stamp = args, devices, cwd, folder, stamp
        self.history = history
        self.previous = history[0] if history else None
        self.commands: list[Command] = []
        self.retime_commands: list[Command] = []
        self.collect: dict = {}
        self.nodeids: list[str] = []
        self.runs: dict[str, dict] = {}
        self.tests: list[dict] = []
        self.comparison: dict | None = None
        self.exit_code = EXIT_OK
        self.verdict = ""

    def make(self) -> None:
        env = _environment(self.cwd)
        write_json(self.folder / "env.json", env)
        self._collect()
        for device in self.devices:
            self._run_device(device)
        self._retime_suspects()
        self._write_commands()
        self.comparison = self._compare() if self.previous else None
        self._verdict()
        write_json(self.folder / "results.json", self._results())
        atomic_write_text(self.folder / "summary.md", render_summary(self._results(), env))
        write_sha256(self.folder)
        _usual_permissions(self.folder)

    # -- steps ---------------------------------------------------------------------------------------

    def _progress(self, text: str) -> None:
        print(f"evidence: {text}", file=sys.stderr, flush=True)

    def _collect(self) -> None:
        device_args = [a for d in self.devices for a in ("--device", d)]
        command = Command(_pytest("--collect-only", "-q", *device_args, *self.args.selection), "collect.log")
        self.commands.append(command)
        self._progress(f"collecting ({command.log})")
        result = command.execute(self.folder, self.args.timeout)
        status, why = _exit_status(result, self.args.timeout)
        text = (self.folder / command.log).read_text(errors="replace")
        self.nodeids = pr.collected_nodeids(text)
        if status == "nothing collected" or result["exit_code"] == 4:
            tail = "\n".join(text.rstrip().splitlines()[-8:])
            what = ("the selection matched no tests" if status == "nothing collected"
                    else "pytest refused the selection")
            if "unrecognized arguments: --device" in text:
                what += _device_option_hint(self.args.selection, self.cwd)
            raise BadInput(f"{what} ({why}); nothing measured, no bundle written. pytest said:\n{tail}")
        if status == "ok":
            why = f"pytest exit {result['exit_code']}"
        elif pr.first_error(text):
            why = f"{why}: {pr.first_error(text)}"
        self.collect = {**result, "status": status, "why": why, "collected": len(self.nodeids),
                        "log": command.log}

    def _run_device(self, device: str) -> None:
        log, junit = f"pytest-{device}.log", f"junit-{device}.xml"
        run = {"log": log, "junit": junit, "counts": dict.fromkeys(pr.OUTCOMES, 0), "warnings": [],
               "rootdir": None}
        if self.collect["status"] != "ok":
            self.runs[device] = {**run, "status": "not run", "why": "collection did not complete",
                                 "exit_code": None, "wall_s": None}
            return
        command = Command(_pytest("-v", "-rA", "--tb=long", "--durations=0", f"--junitxml={BUNDLE}/{junit}",
                                  "--device", device, *self.args.selection), log)
        self.commands.append(command)
        self._progress(f"running on {device} ({self.folder / log})")
        result = command.execute(self.folder, self.args.timeout)
        status, why = _exit_status(result, self.args.timeout)
        text = (self.folder / log).read_text(errors="replace")
        root = pr.rootdir(text)
        records = []
        try:
            records = pr.read_junit(self.folder / junit, self.nodeids, root)
        except pr.UNREADABLE as exc:
            if status == "ok":
                status, why = "crashed", f"{why}, but its junit XML is unreadable ({type(exc).__name__})"
        running, error = pr.running_at_end(text), pr.first_error(text)
        if status == "crashed" and running:
            why = f"{why} while running {running}"
        elif status == "crashed" and error and result["exit_code"] not in (0, 1):
            why = f"{why}: {error}"
        for record in records:
            record.update(device=device, retimed_s=[], retime_factors=[])
            run["counts"][record["outcome"]] += 1
        self.tests.extend(records)
        self.runs[device] = {**run, **result, "status": status, "why": why,
                             "warnings": pr.warning_summary(text), "rootdir": str(root) if root else None}

    def _retime_suspects(self) -> None:
        """Re-run the tests that look slower than last time, with control tests timed alongside, to
        tell a load spike or a busier machine from a real change (docs/evidence.md, "Durations")."""
        if not self.previous or self.args.retime == 0:
            return
        before = _best_times([self.previous["results"]])
        factors = main_load_factors(self.tests, self.previous["results"])
        for device, run in self.runs.items():
            mine = [t for t in self.tests if t["device"] == device and t["outcome"] == "passed"
                    and _key(t) in before]
            suspects = [t for t in mine
                        if _move(t["duration_s"] / factors.get(device, 1.0), before[_key(t)][0]) == "slower"]
            if run["status"] != "ok" or not suspects or not run["rootdir"]:
                continue
            root = Path(run["rootdir"])
            suspect_ids = {t["nodeid"] for t in suspects}
            controls = _controls([t for t in mine if t["nodeid"] not in suspect_ids], before)
            by_id = {t["nodeid"]: t for t in suspects}
            self._progress(f"re-timing {len(suspects)} test(s) on {device} that look slower than last time, "
                           f"with {len(controls)} control test(s)")
            for n in range(1, self.args.retime + 1):
                shift = n % len(suspects)
                order = _interleave([t["nodeid"] for t in controls],
                                    [t["nodeid"] for t in suspects[shift:] + suspects[:shift]])
                name = f"retime/{device}-{n}"
                command = Command(_pytest("-q", f"--rootdir={root}", f"--junitxml={BUNDLE}/{name}.xml",
                                          "--device", device, *(_absolute(i, root) for i in order)),
                                  f"{name}.log")
                self.retime_commands.append(command)
                result = command.execute(self.folder, self.args.timeout)
                if _exit_status(result, self.args.timeout)[0] != "ok":
                    continue
                try:
                    records = pr.read_junit(self.folder / f"{name}.xml", order, root)
                except pr.UNREADABLE:
                    continue
                passed = {r["nodeid"]: r["duration_s"] for r in records if r["outcome"] == "passed"}
                factor = load_factor([(passed[t["nodeid"]], before[_key(t)][0]) for t in controls
                                      if t["nodeid"] in passed])
                for nodeid, test in by_id.items():
                    if nodeid in passed:
                        test["retimed_s"].append(passed[nodeid])
                        test["retime_factors"].append(factor)

    def _write_commands(self) -> None:
        lines = [
            f"# Commands run by `{_invocation(self.args)}` for this bundle, in order.",
            "# Re-run them with `BUNDLE=<empty folder> bash commands.txt`; during the run BUNDLE was the",
            "# temporary folder that was renamed to this bundle when complete.",
            'BUNDLE="${BUNDLE:?set BUNDLE to the folder that receives the logs}"',
            f"cd {shlex.quote(str(self.cwd))}",
        ]
        present = [k for k in COMMAND_ENV if k in os.environ]
        absent = [k for k in COMMAND_ENV if k not in os.environ]
        lines += [f"export {k}={shlex.quote(os.environ[k])}" for k in present]
        if absent:
            lines.append("unset " + " ".join(absent))
        lines += [c.shell() for c in self.commands]
        if self.retime_commands:
            lines += [RETIME_HEADER, 'mkdir -p "$BUNDLE/retime"'] + [c.shell() for c in self.retime_commands]
        atomic_write_text(self.folder / "commands.txt", "\n".join(lines) + "\n")

    # -- comparison and verdict ----------------------------------------------------------------------

    def _compare(self) -> dict:
        previous = self.previous
        comparison = compare(self._results(), previous["results"], [h["results"] for h in self.history])
        comparison["previous"] = previous["name"]
        comparison["changed_artifacts"] = changed_artifacts(previous["path"], self.folder)
        comparison["previous_problems"] = check_bundle(previous["path"])
        comparison["changed"] = _changed(comparison)
        return comparison

    def _verdict(self) -> None:
        """Exit 2 when something was not measured, else 1 on new failures, else 0."""
        failing = [t for t in self.tests if t["outcome"] in pr.FAILING]
        new = self.comparison["new_failures"] if self.comparison else failing
        news = f"{len(new)} new failure{'s' if len(new) != 1 else ''}"
        broken = [d for d, r in self.runs.items() if r["status"] != "ok"]
        if self.collect["status"] != "ok" or broken:
            self.exit_code = EXIT_UNMEASURED
            if self.collect["status"] != "ok":
                what = [f"collection {self.collect['status']}, {self.collect['why']}; no device ran"]
            else:
                what = [f"{d}: {self.runs[d]['status']}, {self.runs[d]['why']}" for d in broken]
            self.verdict = "not measured: " + "; ".join(what) + (f" (and {news})" if new else "")
        elif new:
            self.exit_code, self.verdict = EXIT_NEW_FAILURES, news
        else:
            self.exit_code = EXIT_OK
            self.verdict = f"ok: no new failures ({len(failing)} known)" if failing else "ok"

    def _results(self) -> dict:
        return {
            "format": FORMAT, "stamp": self.stamp, "area": self.args.area, "cwd": str(self.cwd),
            "selection": list(self.args.selection), "devices": self.devices,
            "measured": any(r["status"] == "ok" for r in self.runs.values()),
            "verdict": self.verdict, "exit_code": self.exit_code,
            "collect": self.collect, "runs": self.runs,
            "tests": sorted(self.tests, key=lambda t: (t["device"], t["nodeid"])),
            "comparison": self.comparison,
        }

    # -- output --------------------------------------------------------------------------------------

    def report(self, final: Path) -> str:
        """What the command prints: where the bundle is, per-device counts, the comparison, the verdict."""
        try:
            shown = final.relative_to(self.cwd)
        except ValueError:
            shown = final
        lines = [f"evidence {self.args.area}: {shown}"]
        lines += [f"  {d}: {_run_line(r)}" for d, r in self.runs.items()]
        lines += _comparison_lines(self.comparison, markdown=False)
        lines.append(f"verdict: {self.verdict} (exit {self.exit_code})")
        return "\n".join(lines)


def _device_option_hint(selection: list[str], cwd: Path) -> str:
    """Why pytest did not know ``--device``: a selected path does not exist (so no conftest was
    found), or the selection lives outside any conftest.py that defines the option."""
    missing = [item for item in selection if not item.startswith("-") and ("/" in item or ".py" in item)
               and not (cwd / item.split("::")[0]).exists()]
    if missing:
        return f" (no such file or directory: {', '.join(missing)})"
    return " (it is not under a conftest.py that defines the project's --device option)"


def _usual_permissions(folder: Path) -> None:
    """Give the bundle the modes of ordinarily created files (temporary files are private)."""
    umask = os.umask(0)
    os.umask(umask)
    for path in [folder, *folder.rglob("*")]:
        os.chmod(path, (0o777 if path.is_dir() else 0o666) & ~umask)


def _absolute(nodeid: str, root: Path) -> str:
    path, sep, rest = nodeid.partition("::")
    return str(root / path) + sep + rest


def _controls(candidates: list[dict], before: dict) -> list[dict]:
    """Up to :data:`CONTROLS` tests, spread over the range of earlier times, that time the machine's
    load during a re-timing; the fastest other test when none took at least :data:`FACTOR_MIN_S`."""
    timed = sorted((t for t in candidates if before[_key(t)][0] >= FACTOR_MIN_S),
                   key=lambda t: before[_key(t)][0])
    if not timed:
        return sorted(candidates, key=lambda t: t["duration_s"])[:1]
    if len(timed) <= CONTROLS:
        return timed
    step = (len(timed) - 1) / (CONTROLS - 1)
    return [timed[round(i * step)] for i in range(CONTROLS)]


def _interleave(controls: list[str], suspects: list[str]) -> list[str]:
    """Controls spread among the suspects, one first (it also absorbs the process's warm-up)."""
    if not controls:
        return suspects
    order, every = [], max(1, math.ceil(len(suspects) / len(controls)))
    for i, control in enumerate(controls):
        order += [control, *suspects[i * every:(i + 1) * every]]
    return order + suspects[len(controls) * every:]


def _invocation(args) -> str:
    """The detsim-track command line that made the bundle (options in canonical form)."""
    words, positional = ["detsim-track", "evidence"], list(args.selection)
    options = ["--area", args.area]
    if args.out_root != Path("reports"):
        options += ["--out-root", str(args.out_root)]
    for device in args.device or []:
        options += ["--device", device]
    if args.timeout is not None:
        options += ["--timeout", f"{args.timeout:g}"]
    if args.retime != RETIMES:
        options += ["--retime", str(args.retime)]
    if any(a.startswith("-") for a in positional):
        return shlex.join(words + options + ["--", *positional])
    return shlex.join(words + positional + options)


def _environment(cwd: Path) -> dict:
    """common.environment() plus what an evidence bundle also needs: pytest, interpreter, code state."""
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
        done = subprocess.run(["git", "diff", "HEAD", "--binary", "--no-color", "--no-ext-diff"], cwd=cwd,
                              capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return sha256_bytes(done.stdout) if done.returncode == 0 and done.stdout else None


def _nvidia_smi() -> dict:
    """GPU name and driver from nvidia-smi, or why there is none."""
    argv = ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"]
    record = {"command": shlex.join(argv)}
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except FileNotFoundError:
        return {**record, "exit_code": None, "output": "nvidia-smi not found on PATH"}
    except (OSError, subprocess.TimeoutExpired) as exc:
        return {**record, "exit_code": None, "output": f"{type(exc).__name__}: {exc}"}
    return {**record, "exit_code": done.returncode, "output": (done.stdout + done.stderr).strip()}


# ---------------------------------------------------------------------------------------------------
# Comparison with earlier bundles


def _key(test: dict) -> tuple[str, str]:
    return test["device"], test["nodeid"]


def _best_times(bundles: list[dict]) -> dict[tuple[str, str], tuple[float, int]]:
    """Per (device, node id): the least time a passing test took over ``bundles``, and over how many
    measurements (its run plus any re-timings)."""
    best: dict[tuple[str, str], tuple[float, int]] = {}
    for results in bundles:
        for test in results.get("tests", []):
            if test.get("outcome") != "passed":
                continue
            times = [test["duration_s"], *test.get("retimed_s", [])]
            least, count = best.get(_key(test), (math.inf, 0))
            best[_key(test)] = (min(least, *times), count + len(times))
    return best


def _move(now: float, before: float) -> str | None:
    """``"slower"``/``"faster"`` when ``now`` and ``before`` differ by more than :data:`MOVE_RATIO`
    times and by more than :data:`MOVE_FLOOR_S` seconds."""
    if now > MOVE_RATIO * before and now - before > MOVE_FLOOR_S:
        return "slower"
    if now * MOVE_RATIO < before and before - now > MOVE_FLOOR_S:
        return "faster"
    return None


def load_factor(pairs: list[tuple[float, float]]) -> float:
    """How much busier the machine is now than before: the median of ``now / before`` over
    ``(now, before)`` pairs of tests that took at least :data:`FACTOR_MIN_S` before; never below 1
    (a quieter machine is not used to make tests look slower), and 1 with fewer than
    :data:`FACTOR_MIN_TESTS` such tests."""
    ratios = [now / before for now, before in pairs if before >= FACTOR_MIN_S]
    if len(ratios) < FACTOR_MIN_TESTS:
        return 1.0
    return max(1.0, round(statistics.median(ratios), 3))


def main_load_factors(tests: list[dict], previous: dict) -> dict[str, float]:
    """Per device, :func:`load_factor` over every test that passed in this run and the previous one."""
    before = _best_times([previous])
    pairs: dict[str, list[tuple[float, float]]] = {}
    for test in tests:
        if test["outcome"] == "passed" and _key(test) in before:
            pairs.setdefault(test["device"], []).append((test["duration_s"], before[_key(test)][0]))
    return {device: load_factor(p) for device, p in pairs.items()}


def judge_durations(tests: list[dict], previous: dict, history: list[dict]) -> dict:
    """Tests whose duration moved beyond the noise (docs/evidence.md, "Durations").

    Slower: the test's best load-corrected time now (its run divided by the run's :func:`load_factor`,
    each re-timing divided by the factor its control tests measured) exceeds its best time in the
    previous bundle by the rule of :func:`_move`. Faster: its time now beats by that rule the best of
    at least :data:`FASTER_MIN_SAMPLES` measurements over ``history`` (a single earlier time may itself
    have been a load spike); faster-looking tests with fewer earlier measurements are only counted.
    """
    before, earlier = _best_times([previous]), _best_times(history)
    factors = main_load_factors(tests, previous)
    slower, faster, unjudged = [], [], 0
    for test in tests:
        if test["outcome"] != "passed":
            continue
        entry = {"device": test["device"], "nodeid": test["nodeid"]}
        if _key(test) in before:
            times = [(test["duration_s"], factors.get(test["device"], 1.0)),
                     *zip(test.get("retimed_s", []), test.get("retime_factors", []))]
            now = min(t / f for t, f in times)
            was = before[_key(test)][0]
            if _move(now, was) == "slower":
                slower.append({**entry, "was_s": round(was, 3), "now_s": round(now, 3),
                               "ratio": round(now / max(was, 1e-9), 2), "measurements": len(times)})
                continue
        if _key(test) in earlier and _move(test["duration_s"], earlier[_key(test)][0]) == "faster":
            was, count = earlier[_key(test)]
            if count >= FASTER_MIN_SAMPLES:
                faster.append({**entry, "was_s": round(was, 3), "now_s": round(test["duration_s"], 3),
                               "ratio": round(test["duration_s"] / max(was, 1e-9), 2), "measurements": count})
            else:
                unjudged += 1
    return {"slower": slower, "faster": faster, "faster_unjudged": unjudged, "load_factors": factors}


def _warning_texts(results: dict) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for device, run in sorted(results.get("runs", {}).items()):
        for warning in run.get("warnings", []):
            entry = found.setdefault(pr.warning_key(warning["text"]), {
                "text": warning["text"], "location": warning.get("location"), "devices": []})
            entry["devices"].append(device)
    return found


def compare(current: dict, previous: dict, history: list[dict]) -> dict:
    """What changed from ``previous`` (an earlier results.json) to ``current``: tests newly failing,
    fixed, otherwise changed outcome, added or removed; warning texts new or gone; run status changes;
    and durations (:func:`judge_durations`, which also uses the older ``history``)."""
    now = {_key(t): t for t in current["tests"]}
    was = {_key(t): t for t in previous.get("tests", [])}
    measured = {d for d, r in previous.get("runs", {}).items() if r.get("status") == "ok"}
    new_failures, fixed, changed = [], [], []
    for key, test in sorted(now.items()):
        before = was.get(key, {}).get("outcome")
        if test["outcome"] in pr.FAILING and before not in pr.FAILING:
            new_failures.append({"device": key[0], "nodeid": key[1], "outcome": test["outcome"],
                                 "message": test.get("message"), "was": before})
        elif before in pr.FAILING and test["outcome"] not in pr.FAILING:
            fixed.append({"device": key[0], "nodeid": key[1], "now": test["outcome"], "was": before})
        elif before is not None and before != test["outcome"]:
            changed.append({"device": key[0], "nodeid": key[1], "now": test["outcome"], "was": before,
                            "skip_reason": test.get("skip_reason")})
    runs_now = current.get("runs", {})
    added = [{"device": d, "nodeid": n} for d, n in sorted(set(now) - set(was)) if d in measured]
    removed = [{"device": d, "nodeid": n} for d, n in sorted(set(was) - set(now))
               if runs_now.get(d, {}).get("status") == "ok"]
    warnings_now, warnings_was = _warning_texts(current), _warning_texts(previous)
    run_changes = [{"device": d, "now": runs_now.get(d, {}).get("status", "not run"),
                    "was": previous.get("runs", {}).get(d, {}).get("status", "not run")}
                   for d in sorted(set(runs_now) | set(previous.get("runs", {})))]
    return {
        "new_failures": new_failures, "fixed": fixed, "outcome_changes": changed,
        "added": added, "removed": removed,
        "new_warnings": [w for k, w in warnings_now.items() if k not in warnings_was],
        "gone_warnings": [w for k, w in warnings_was.items() if k not in warnings_now],
        "run_changes": [c for c in run_changes if c["now"] != c["was"]],
        **judge_durations(current["tests"], previous, history),
    }


def _changed(comparison: dict) -> bool:
    lists = ("new_failures", "fixed", "new_warnings", "slower", "faster", "changed_artifacts",
             "outcome_changes", "added", "removed", "gone_warnings", "run_changes")
    return any(comparison.get(name) for name in lists)


def stable_text(name: str, data: bytes) -> str:
    """The part of a bundle artifact meant to be identical run to run (docs/evidence.md, "Hashes")."""
    text = data.decode(errors="replace")
    if name == "collect.log":
        return pr.normalised_collect_log(text)
    if name == "commands.txt":
        commands = text.split(RETIME_HEADER, 1)[0]
        return "".join(line for line in commands.splitlines(keepends=True) if not line.startswith("#"))
    return text


def _flatten(value, prefix: str = "") -> dict[str, str]:
    if isinstance(value, dict):
        out: dict[str, str] = {}
        for k, v in value.items():
            out.update(_flatten(v, f"{prefix}{k}."))
        return out
    return {prefix.rstrip("."): json.dumps(value)}


def changed_artifacts(previous: Path, current: Path) -> list[dict]:
    """The stable artifacts (:data:`STABLE_ARTIFACTS`) whose normalised content hash differs, with the
    differing keys (env.json) or lines (the others)."""
    out = []
    for name in STABLE_ARTIFACTS:
        old_path, new_path = previous / name, current / name
        if not old_path.is_file() or not new_path.is_file():
            if old_path.is_file() != new_path.is_file():
                missing = "missing in the previous bundle" if new_path.is_file() else "missing now"
                out.append({"file": name, "was": None, "now": None, "detail": [missing]})
            continue
        old, new = stable_text(name, old_path.read_bytes()), stable_text(name, new_path.read_bytes())
        if old == new:
            continue
        if name == "env.json":
            try:
                a, b = _flatten(json.loads(old)), _flatten(json.loads(new))
                detail = [f"{k}: {a.get(k, '(absent)')} -> {b.get(k, '(absent)')}"
                          for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
            except ValueError:
                detail = ["not valid JSON"]
        else:
            diff = difflib.unified_diff(old.splitlines(), new.splitlines(), lineterm="", n=0)
            detail = [line for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---"))]
        out.append({"file": name, "was": sha256_bytes(old.encode()), "now": sha256_bytes(new.encode()),
                    "detail": detail[:LISTED]})
    return out


# ---------------------------------------------------------------------------------------------------
# Hashes


def write_sha256(folder: Path) -> None:
    """``sha256.txt`` over every other file of the bundle, in ``sha256sum`` format, sorted by path."""
    lines = [f"{sha256_file(path)}  {path.relative_to(folder).as_posix()}"
             for path in sorted(_files(folder)) if path.relative_to(folder).as_posix() != "sha256.txt"]
    atomic_write_text(folder / "sha256.txt", "\n".join(lines) + "\n")


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() or p.is_symlink()]


def check_bundle(folder: Path) -> list[str]:
    """Problems with a bundle against its sha256.txt: ``modified: F``, ``missing: F``, ``extra: F``."""
    listing = folder / "sha256.txt"
    if not listing.is_file():
        return ["missing: sha256.txt"]
    expected: dict[str, str] = {}
    problems = []
    for number, line in enumerate(listing.read_text(errors="replace").splitlines(), 1):
        match = SHA_LINE.match(line)
        if not match:
            problems.append(f"malformed: sha256.txt line {number}")
            continue
        expected[match.group(2)] = match.group(1)
    for name, digest in sorted(expected.items()):
        path = folder / name
        if not path.is_file():
            problems.append(f"missing: {name}")
        elif sha256_file(path) != digest:
            problems.append(f"modified: {name}")
    present = {p.relative_to(folder).as_posix() for p in _files(folder)} - {"sha256.txt"}
    problems += [f"extra: {name}" for name in sorted(present - set(expected))]
    return problems


def verify(folder: Path) -> int:
    """``--verify``: exit 0 when every file matches sha256.txt, 1 naming each one that does not."""
    if not folder.is_dir():
        print(f"evidence: {folder} is not a folder", file=sys.stderr)
        return EXIT_UNMEASURED
    if not (folder / "sha256.txt").is_file():
        print(f"evidence: {folder} has no sha256.txt; not an evidence bundle", file=sys.stderr)
        return EXIT_UNMEASURED
    problems = check_bundle(folder)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{folder}: {len(problems)} problem{'s' if len(problems) != 1 else ''} against sha256.txt")
        return EXIT_NEW_FAILURES
    count = sum(1 for line in (folder / "sha256.txt").read_text().splitlines() if line.strip())
    print(f"{folder}: ok, {count} files match sha256.txt")
    return EXIT_OK


# ---------------------------------------------------------------------------------------------------
# summary.md


def _run_line(run: dict) -> str:
    counts = ", ".join(f"{n} {o}" for o, n in run["counts"].items() if n) or "no tests"
    wall = f" in {run['wall_s']:.1f} s" if run.get("wall_s") is not None else ""
    return f"{counts}{wall}" + ("" if run["status"] == "ok" else f" [{run['status'].upper()}: {run['why']}]")


def _code(text: str, markdown: bool) -> str:
    return f"`{text}`" if markdown else text


def _line(level: int, text: str, markdown: bool) -> str:
    return ("  " * level + "- " if markdown else "  " * (level + 1)) + text


def _listing(title: str, items: list[tuple[str, list[str]]], markdown: bool) -> list[str]:
    """A titled list; each item is a line and its sub-lines (shown indented)."""
    lines = [_line(0, f"{title} ({len(items)}):", markdown)]
    for text, sub in items[:LISTED]:
        lines += [_line(1, text, markdown)] + [_line(2, line, markdown) for line in sub]
    if len(items) > LISTED:
        lines.append(_line(1, f"... and {len(items) - LISTED} more", markdown))
    return lines


def _test_items(tests: list[dict], describe, markdown: bool) -> list[tuple[str, list[str]]]:
    return [(f"{_code(t['device'], markdown)} {_code(t['nodeid'], markdown)}: {describe(t)}", []) for t in tests]


def _comparison_lines(comparison: dict | None, markdown: bool) -> list[str]:
    """The change list printed by the command and placed at the top of summary.md."""
    if comparison is None:
        return ["no previous bundle of this area: nothing to compare with (every failure counts as new)"]
    verdict = "changes" if comparison["changed"] else "no change"
    lines = [f"compared with {comparison['previous']}: {verdict}"]
    rule = f"> {MOVE_RATIO:g}x and > {MOVE_FLOOR_S:g} s"

    def timing(t: dict) -> str:
        return f"{t['was_s']:.3f} s -> {t['now_s']:.3f} s ({t['ratio']:g}x)"

    sections = [
        ("new failures", _test_items(comparison["new_failures"], lambda t: (t["message"] or t["outcome"])
                                     + ("" if t["was"] else " (new test)"), markdown)),
        ("fixed", _test_items(comparison["fixed"], lambda t: f"{t['was']} -> {t['now']}", markdown)),
        ("new warnings", [(f"{_code(w['text'], markdown)} ({w['location']}; {', '.join(w['devices'])})", [])
                          for w in comparison["new_warnings"]]),
        (f"slower ({rule}, best load-corrected time)", _test_items(comparison["slower"], timing, markdown)),
        (f"faster ({rule}, against the best earlier time)", _test_items(comparison["faster"], timing, markdown)),
        ("changed artifacts", [(_code(a["file"], markdown), [_code(d, markdown) for d in a["detail"]])
                               for a in comparison["changed_artifacts"]]),
        ("other outcome changes", _test_items(
            comparison["outcome_changes"],
            lambda t: f"{t['was']} -> {t['now']}" + (f" ({t['skip_reason']})" if t.get("skip_reason") else ""),
            markdown)),
        ("tests added", _test_items(comparison["added"], lambda t: "new", markdown)),
        ("tests removed", _test_items(comparison["removed"], lambda t: "gone", markdown)),
        ("warnings gone", [(_code(w["text"], markdown), []) for w in comparison["gone_warnings"]]),
        ("run status changes", [(f"{_code(r['device'], markdown)}: {r['was']} -> {r['now']}", [])
                                for r in comparison["run_changes"]]),
    ]
    for title, items in sections:
        if items:
            lines += _listing(title, items, markdown)
    notes = [f"{device}: the tests took a median {factor:g}x their previous time (a busier machine, or a "
             f"change that slows every test alike); per-test moves are judged after dividing it out"
             for device, factor in sorted(comparison.get("load_factors", {}).items()) if factor >= MOVE_RATIO]
    if comparison.get("faster_unjudged"):
        notes.append(f"{comparison['faster_unjudged']} test(s) ran faster than their earlier time; not judged "
                     f"(fewer than {FASTER_MIN_SAMPLES} earlier measurements, any of which may be a load spike)")
    if comparison.get("previous_problems"):
        notes.append(f"the previous bundle does not verify: {', '.join(comparison['previous_problems'])}")
    lines += [_line(0, f"note: {n}", markdown) for n in notes]
    return lines


def render_summary(results: dict, env: dict) -> str:
    """summary.md: verdict and comparison first, then runs, failures, skips, warnings, slowest tests."""
    comparison = _comparison_lines(results["comparison"], markdown=True)
    lines = [f"# Evidence: {results['area']}, {results['stamp']}", "",
             f"**Verdict: {results['verdict']}** (exit {results['exit_code']})", "",
             "## " + comparison[0][0].upper() + comparison[0][1:], *comparison[1:], ""]
    lines += _runs_section(results, env)
    lines += _failures_section(results["tests"])
    lines += _reasons_section(results["tests"], "skipped", "Skips by reason")
    if any(t["outcome"] == "xfailed" for t in results["tests"]):
        lines += _reasons_section(results["tests"], "xfailed", "Expected failures by reason")
    lines += _warnings_section(results) + _slowest_section(results["tests"]) + _files_section(results)
    return "\n".join(lines)


def _runs_section(results: dict, env: dict) -> list[str]:
    selection = " ".join(results["selection"]) or "(pytest's default: testpaths)"
    cuda = env["cuda"]
    gpu = cuda["device"] if cuda.get("available") else f"absent ({cuda.get('reason')})"
    code = (f"commit `{env['commit'][:12]}` on `{env.get('branch')}`{' (dirty)' if env.get('dirty') else ''}"
            if env.get("commit") else "not a git work tree")
    lines = ["## Runs", "",
             f"Selection `{selection}` from `{results['cwd']}`; {results['collect']['collected']} tests "
             f"collected ({results['collect']['why']}).",
             f"Code: {code}. Python {env['python']}, torch {env['torch']}, pytest {env.get('pytest')}; "
             f"CPU {env['cpu']}, {env['torch_threads']} threads; CUDA {gpu}.", "",
             "| device | status | pytest exit | " + " | ".join(pr.OUTCOMES) + " | wall (s) |",
             "|---|---|---|" + "---|" * len(pr.OUTCOMES) + "---|"]
    for device, run in results["runs"].items():
        wall = f"{run['wall_s']:.1f}" if run.get("wall_s") is not None else "-"
        counts = " | ".join(str(run["counts"][o]) for o in pr.OUTCOMES)
        lines.append(f"| {device} | {run['status']} | {run['why']} | {counts} | {wall} |")
    return lines + [""]


def _failures_section(tests: list[dict]) -> list[str]:
    failing = [t for t in tests if t["outcome"] in pr.FAILING]
    return [f"## Failures ({len(failing)})", ""] + [
        f"- `{t['device']}` `{t['nodeid']}` ({t['outcome']}): {t['message'] or '(no message)'}"
        for t in failing] + (["None."] if not failing else []) + [""]


def _reasons_section(tests: list[dict], outcome: str, title: str) -> list[str]:
    groups: dict[str, list[dict]] = {}
    for t in tests:
        if t["outcome"] == outcome:
            groups.setdefault(t["skip_reason"] or "(no reason given)", []).append(t)
    lines = [f"## {title} ({sum(map(len, groups.values()))})", ""]
    for reason, group in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        names = ", ".join(f"`{t['device']}` `{t['nodeid']}`" for t in group[:5])
        lines.append(f"- {reason} ({len(group)}): {names}{', ...' if len(group) > 5 else ''}")
    return lines + (["None."] if not groups else []) + [""]


def _warnings_section(results: dict) -> list[str]:
    warnings = _warning_texts(results)
    return [f"## Warnings ({len(warnings)})", ""] + [
        f"- `{w['text']}` ({w['location']}; {', '.join(w['devices'])})" for w in warnings.values()
    ] + (["None."] if not warnings else []) + [""]


def _slowest_section(tests: list[dict]) -> list[str]:
    slowest = sorted(tests, key=lambda t: -t["duration_s"])[:SLOWEST]
    return [f"## Slowest tests ({len(slowest)} of {len(tests)})", "",
            "| wall (s) | device | test | outcome |", "|---|---|---|---|"] + [
        f"| {t['duration_s']:.3f} | {t['device']} | `{t['nodeid']}` | {t['outcome']} |" for t in slowest] + [""]


def _files_section(results: dict) -> list[str]:
    ran = [r for r in results["runs"].values() if r["status"] != "not run"]
    logs = "".join(f", `{r['log']}`" for r in ran)
    retimed = any(t.get("retimed_s") for t in results["tests"])
    return ["## Files", "",
            f"`collect.log`{logs} (whole pytest output), the junit XML of each run, "
            + ("`retime/` (re-timing runs), " if retimed else "")
            + "`env.json`, `commands.txt` (re-runnable), `results.json` (per test), this summary, and "
            "`sha256.txt` (check with `detsim-track evidence --verify <this folder>`, or with "
            "`sha256sum -c sha256.txt` inside it).", ""]

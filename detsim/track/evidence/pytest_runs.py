"""Running pytest processes for a bundle, each with its whole output in a log file, and reading what they
left behind: collected node ids, per-test results (from the junit XML, mapped back to the collected node
ids), warning texts.

Past the time-out, or when the caller is interrupted, the whole process group is killed and the log keeps
everything up to the kill; should the caller be killed outright, the child dies with it
(``PR_SET_PDEATHSIG``, :func:`detsim.track.base.fresh.start`), so no orphaned test run goes on."""

from __future__ import annotations

import re
import shlex
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.fresh import start, stop
from detsim.track.base.status import Status

FAILING = ("failed", "error")
OUTCOMES = ("passed", "failed", "error", "skipped", "xfailed")
UNREADABLE = (OSError, ET.ParseError)  # what read_junit raises for a missing or truncated file

_SECTION = re.compile(r"^=+ (?P<title>.+?) =+$")
_WARNING_FIRST_LINE = re.compile(r"^  (?P<location>.+?:\d+): (?P<text>\S.*)$")
_COLLECT_TIMING = re.compile(r" in \d+(?:\.\d+)?s(?: \(\d+:\d\d:\d\d\))?")
_HEX_ADDRESS = re.compile(r"0x[0-9a-fA-F]+")
_OUTCOME_WORD = re.compile(r" (PASSED|FAILED|SKIPPED|XFAIL|XPASS|ERROR)\b")

BUNDLE = "{bundle}"  # stands for the bundle folder in a Command's argv
PYTEST_EXIT = {
    0: "all tests passed", 1: "some tests failed", 2: "interrupted (collection errors or a test run stopped)",
    3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected",
}
PLUGIN = "detsim.track.evidence.plugin"  # provides --device where the selection's conftest does not


def pytest_argv(*args: str) -> tuple[str, ...]:
    """A pytest command in this interpreter, with the fixed options of docs/evidence.md and :data:`PLUGIN`."""
    return (sys.executable, "-u", "-m", "pytest", "-p", "no:cacheprovider", "-p", PLUGIN, "--color=no", *args)


RETIME_HEADER = "# Re-timing of tests that looked slower than last time"  # starts commands.txt's re-timings


@dataclass(frozen=True)
class ProcessResult:
    exit_code: int  # negative: killed by that signal
    timed_out: bool
    wall_s: float


@dataclass(frozen=True)
class Command:
    """One pytest process: its argv (with :data:`BUNDLE` standing for the bundle folder) and its log."""

    argv: tuple[str, ...]
    log: str  # relative to the bundle folder

    def resolved(self, folder: Path) -> list[str]:
        return [arg.replace(BUNDLE, str(folder)) for arg in self.argv]

    def shell(self) -> str:
        """The command as one re-runnable shell line, output going to ``$BUNDLE/<log>``."""
        words = [_shell_word(arg) for arg in self.argv]
        return " ".join(words) + f" > {_shell_word(BUNDLE + '/' + self.log)} 2>&1"

    def execute(self, folder: Path, timeout: float | None) -> ProcessResult:
        """Run it with the log written whole into the bundle; a timeout or interrupt kills the process."""
        log_path = folder / self.log
        log_path.parent.mkdir(parents=True, exist_ok=True)
        began = time.monotonic()
        with open(log_path, "wb") as log:
            proc = start(self.resolved(folder), stdout=log, stderr=subprocess.STDOUT)
            try:
                code, timed_out = proc.wait(timeout=timeout), False
            except subprocess.TimeoutExpired:
                stop(proc)
                code, timed_out = proc.returncode, True
            except BaseException:
                stop(proc)
                raise
        return ProcessResult(code, timed_out, round(time.monotonic() - began, 3))


def _shell_word(arg: str) -> str:
    if BUNDLE not in arg:
        return shlex.quote(arg)
    escaped = re.sub(r'(["\\$`])', r"\\\1", arg).replace(BUNDLE, "$BUNDLE")
    return f'"{escaped}"'


def exit_status(result: ProcessResult, timeout: float | None) -> tuple[Status, str]:
    """``(status, why)`` of a finished pytest process, before its junit XML is read."""
    code = result.exit_code
    if result.timed_out:
        return Status.CRASHED, f"killed after {timeout:g} s (--timeout)"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return Status.CRASHED, f"killed by {name}"
    if code in (0, 1):
        return Status.OK, f"pytest exit {code} ({PYTEST_EXIT[code]})"
    if code == 5:
        return Status.NOTHING_COLLECTED, "pytest exit 5 (no tests collected)"
    return Status.CRASHED, f"pytest exit {code} ({PYTEST_EXIT.get(code, 'unexpected exit code')})"


# -- what a pytest run left behind ----------------------------------------------------------------------


def collected_nodeids(text: str) -> list[str]:
    """The node ids ``pytest --collect-only -q`` printed: one per line, up to the first blank line."""
    ids: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            if ids:
                break
            continue
        if "::" in line and not line.startswith(" "):
            ids.append(line.rstrip())
    return ids


def junit_address(nodeid: str) -> tuple[str, str]:
    """``(classname, name)`` under which pytest's junit XML records the test ``nodeid``."""
    path, bracket, params = nodeid.partition("[")
    names = path.split("::")
    names[0] = re.sub(r"\.py$", "", names[0].replace("/", "."))
    names[-1] += bracket + params
    return ".".join(names[:-1]), names[-1]


def rootdir(log_text: str) -> Path | None:
    """The ``rootdir:`` pytest printed in its header, if any."""
    match = re.search(r"^rootdir: (.+)$", log_text, re.MULTILINE)
    return Path(match.group(1).strip()) if match else None


def running_at_end(log_text: str) -> str | None:
    """The test a ``-v`` log was running when it stopped (its last line names a test and no outcome), or None."""
    last = next((line.strip() for line in reversed(log_text.splitlines()) if line.strip()), "")
    return None if "::" not in last or last.startswith(("=", "_")) or _OUTCOME_WORD.search(last) else last


def first_error(log_text: str) -> str | None:
    """The first ``E   ...`` or ``INTERNALERROR>`` line of a pytest log (what a crash died of), or None."""
    match = re.search(r"^(?:E +|INTERNALERROR> *)(\S.*)$", log_text, re.MULTILINE)
    return match.group(1).strip() if match else None


def _guess_nodeid(classname: str, name: str, root: Path | None) -> str:
    """A node id for a junit test case that the collected ids did not name: find its file under root."""
    parts = classname.split(".") if classname else []
    for cut in range(len(parts), 0, -1):
        candidate = "/".join(parts[:cut]) + ".py"
        if root is not None and (root / candidate).is_file():
            return "::".join([candidate, *parts[cut:], name])
    return "::".join([*parts, name]) if parts else name


def _first_line(text: str | None) -> str | None:
    return next((line.strip() for line in (text or "").splitlines() if line.strip()), None)


def _outcome(case: ET.Element) -> tuple[str, str | None, str | None]:
    """``(outcome, skip reason, first line of the failure message)`` of one junit test case."""
    for tag, outcome in (("failure", "failed"), ("error", "error")):
        if (element := case.find(tag)) is not None:
            return outcome, None, _first_line(element.get("message")) or _first_line(element.text)
    if (skipped := case.find("skipped")) is not None:
        return "xfailed" if skipped.get("type") == "pytest.xfail" else "skipped", skipped.get("message") or "", None
    return "passed", None, None


_PRECEDENCE = {name: i for i, name in enumerate(("failed", "error", "xfailed", "skipped", "passed"))}


def _merge(first: dict, second: dict) -> dict:
    """One test reported in two junit test cases (a failing call, then a failing teardown)."""
    best = first if _PRECEDENCE[first["outcome"]] <= _PRECEDENCE[second["outcome"]] else second
    return {**best, "duration_s": round(first["duration_s"] + second["duration_s"], 6)}


def read_junit(path: Path, nodeids: list[str], root: Path | None = None) -> list[dict]:
    """Per-test records (the fields of :class:`~.outcomes.TestResult` but its device and re-timings) from a junit
    XML file, in file order; raises one of :data:`UNREADABLE` when the file is missing or not XML."""
    by_address = {junit_address(nodeid): nodeid for nodeid in nodeids}
    records: dict[str, dict] = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        nodeid = by_address.get((classname, name)) or _guess_nodeid(classname, name, root)
        outcome, reason, message = _outcome(case)
        record = {"nodeid": nodeid, "outcome": outcome, "duration_s": float(case.get("time") or 0.0),
                  "skip_reason": reason, "message": message}
        records[nodeid] = _merge(records[nodeid], record) if nodeid in records else record
    return list(records.values())


def _sections(text: str, title: str) -> list[str]:
    """The lines of every ``=== <title>... ===`` section of a pytest log, each section opened by a blank line."""
    lines, inside = [], False
    for line in text.splitlines():
        header = _SECTION.match(line)
        if header:
            inside = header.group("title").startswith(title)
            if inside:
                lines.append("")
            continue
        if inside and line.startswith("-- Docs:"):
            inside = False
        elif inside:
            lines.append(line)
    return lines


def warning_summary(text: str) -> list[dict]:
    """The warnings of a pytest log's ``warnings summary``: ``text``, ``location`` and ``tests``."""
    found: dict[str, dict] = {}
    tests: list[str] = []
    in_message = False
    for line in _sections(text, "warnings summary"):
        if not line.strip():
            tests, in_message = [], False
            continue
        if not line.startswith(" "):
            if in_message:
                tests, in_message = [], False
            tests.append(line.strip())
            continue
        match = _WARNING_FIRST_LINE.match(line)
        if match and not in_message:
            in_message = True
            entry = found.setdefault(match.group("text"), {
                "text": match.group("text"), "location": match.group("location"), "tests": []})
            entry["tests"].extend(t for t in tests if t not in entry["tests"])
    return list(found.values())


def warning_key(text: str) -> str:
    """A warning text with memory addresses blanked, so the same warning compares equal run to run."""
    return _HEX_ADDRESS.sub("0x?", text)


def normalised_collect_log(text: str) -> str:
    """A collect log without its timing (``N tests collected in 0.53s``), the part that is stable."""
    return _COLLECT_TIMING.sub(" in <time>", text)

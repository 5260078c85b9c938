"""Running pytest processes for a bundle, each with its whole output in a log file.

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
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.fresh import start, stop
from detsim.track.evidence.records import ProcessResult

BUNDLE = "{bundle}"  # stands for the bundle folder in a Command's argv
PYTEST_EXIT = {
    0: "all tests passed", 1: "some tests failed", 2: "interrupted (collection errors or a test run stopped)",
    3: "pytest internal error", 4: "pytest usage error", 5: "no tests collected",
}


PLUGIN = "detsim.track.evidence.plugin"  # provides --device where the selection's conftest does not


def pytest_argv(*args: str) -> tuple[str, ...]:
    """A pytest command in this interpreter, with the fixed options of docs/evidence.md and :data:`PLUGIN`."""
    return (sys.executable, "-u", "-m", "pytest", "-p", "no:cacheprovider", "-p", PLUGIN, "--color=no", *args)


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


def exit_status(result: ProcessResult, timeout: float | None) -> tuple[str, str]:
    """``(status, why)`` of a finished pytest process, before its junit XML is read."""
    code = result.exit_code
    if result.timed_out:
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

"""Count the instructions of a measured region under valgrind's callgrind.

A count runs one fresh process ``valgrind --tool=callgrind --instr-atstart=no python -c <script>``: the
script imports torch and detsim and builds the inputs uninstrumented, runs the region once as a warm-up
(lazy imports, allocator caches), then runs it again between callgrind's start and stop client requests
(``callgrind_start_instrumentation`` / ``callgrind_stop_instrumentation`` of the PyPI package
``pytest-codspeed``, :data:`HOOKS_MODULE`). Only that second run is counted: not the interpreter's
start-up, not the imports. The total ``Ir`` (instructions executed) is read from the callgrind file,
which is kept (``callgrind_annotate <file>`` lists the count per function: a profile to diff).

The process is a child of :mod:`detsim.track.base.fresh` (valgrind is the program; it ends with the
command), pinned to one thread with ``PYTHONHASHSEED=0``: two processes count within about 0.05 % of
each other. Under
valgrind torch sees at most AVX2 (valgrind emulates no AVX-512), so the count is a cost model of the
AVX2 kernels, not the native instruction stream.

Test-only plant (never in the engine): ``DETSIM_COST_PLANT=N`` makes the harness add ``N`` elements of
``exp`` to the measured region, a known extra computation the gate's own test must catch.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.fresh import PINNED, ChildError, pinned_env, run

HOOKS_MODULE = "pytest_codspeed.instruments.hooks.dist_instrument_hooks"
HOOKS_PACKAGE = "pytest-codspeed==5.0.4"  # the PyPI package that ships HOOKS_MODULE
VALGRIND_PACKAGE = "valgrind"  # the Debian package that provides valgrind
PLANT_VAR = "DETSIM_COST_PLANT"
COUNT_ENV = PINNED  # one thread, PYTHONHASHSEED=0
UNIT = "instructions"


class CountError(RuntimeError):
    """A count that could not be made (valgrind failed, the region raised, no total in the file)."""


@dataclass(frozen=True)
class Count:
    instructions: int  # total Ir of the measured region
    callgrind_file: Path | None  # kept for a per-function profile (callgrind_annotate), None if removed


def not_measured_reason() -> str | None:
    """One line saying why counts cannot be made here (which package provides what), or None."""
    if shutil.which("valgrind") is None:
        return (f"instruction counts not measured: valgrind is not installed "
                f"(Debian package `{VALGRIND_PACKAGE}`)")
    if not hooks_available():
        return (f"instruction counts not measured: the callgrind start/stop hooks are missing "
                f"(PyPI package `{HOOKS_PACKAGE}`)")
    return None


def hooks_available() -> bool:
    try:
        return importlib.util.find_spec(HOOKS_MODULE) is not None
    except ImportError:  # its parent package is missing
        return False


def harness(setup: str, region: str) -> str:
    """The script a count runs: ``setup`` (uncounted), ``region`` once to warm up, then counted once.

    ``region`` is one expression; a planted extra computation (:data:`PLANT_VAR`) joins it.
    """
    return "\n".join([
        "import os",
        "import torch",
        "torch.set_num_threads(1)",
        f"from {HOOKS_MODULE.rsplit('.', 1)[0]} import {HOOKS_MODULE.rsplit('.', 1)[1]} as _hooks",
        setup,
        f"_plant = int(os.environ.get({PLANT_VAR!r}) or 0)",
        "_plant_x = torch.linspace(0.0, 1.0, max(_plant, 1), dtype=torch.float64)",
        "def _region():",
        f"    _out = {region}",
        "    if _plant:",
        "        torch.exp(_plant_x).sum()",
        "    return _out",
        "_region()",
        "_hooks.callgrind_start_instrumentation()",
        "_region()",
        "_hooks.callgrind_stop_instrumentation()",
    ]) + "\n"


def command(script: str, out_file: Path, python: str | None = None) -> list[str]:
    """The valgrind command line that counts ``script``'s measured region into ``out_file``."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out_file}",
            python or sys.executable, "-c", script]


def parse_total(text: str) -> int:
    """The total instructions of a callgrind output file (its ``totals:`` line, else ``summary:``)."""
    found = {}
    for line in text.splitlines():
        for key in ("totals:", "summary:"):
            if line.startswith(key):
                found[key] = int(line.split()[1])
    if "totals:" in found:
        return found["totals:"]
    if "summary:" in found:
        return found["summary:"]
    raise CountError("no totals: line in the callgrind file")


def count(setup: str, region: str, *, out_dir: Path | None = None, keep: bool = True,
          package_dir: Path | None = None, env: dict | None = None, timeout: float = 600,
          cwd: Path | None = None) -> Count:
    """Count ``region`` after ``setup`` in a fresh valgrind process (see the module docstring);
    ``package_dir``: first on ``PYTHONPATH`` (another commit's package); ``env``: more variables
    (:data:`PLANT_VAR`).

    Raises:
        CountError: valgrind or the hooks are missing (:func:`not_measured_reason`), the process
            failed, or its file has no total.
    """
    reason = not_measured_reason()
    if reason:
        raise CountError(reason)
    directory = Path(out_dir) if out_dir is not None else Path(tempfile.mkdtemp(prefix="detsim-cost-"))
    directory.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="callgrind.", suffix=".out", dir=directory)
    os.close(fd)
    out_file = Path(name)
    pinned = pinned_env(*filter(None, [package_dir]), **{**COUNT_ENV, **(env or {})})
    try:
        # run in the output folder unless told otherwise: ``python -c`` puts its working directory first
        # on sys.path, where a project checkout would shadow the installed detsim
        run(command(harness(setup, region), out_file), env=pinned, cwd=cwd or directory, timeout=timeout,
            what="the counting process").check("the counting process")
        total = parse_total(out_file.read_text())
    except ChildError as exc:
        _discard(out_file, out_dir)
        raise CountError(str(exc)) from None
    except BaseException:
        _discard(out_file, out_dir)
        raise
    if not keep:
        _discard(out_file, out_dir)
        return Count(total, None)
    return Count(total, out_file)


def _discard(out_file: Path, out_dir: Path | None) -> None:
    """Remove a callgrind file, and its folder too where :func:`count` made that folder itself."""
    out_file.unlink(missing_ok=True)
    if out_dir is None:
        shutil.rmtree(out_file.parent, ignore_errors=True)

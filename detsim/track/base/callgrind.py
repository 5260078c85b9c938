"""What an instruction count under valgrind's callgrind is made of: its script, its command, its total.

How a count is made and why is docs/bench-gate.md's ("Instruction counts"). One thing more: the counted
region runs with Python's garbage collector off (collected just before): a pass over torch's heap costs
~400,000 instructions, and whether one falls inside a region depends on every allocation before it.
``DETSIM_COST_PLANT=N`` (:data:`PLANT_VAR`, a test-only plant, never in the engine) adds ``N`` elements of
``exp`` to each measured region. Text and the standard library only: the counting process imports torch.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path

from .fresh import PINNED

HOOKS_MODULE = "pytest_codspeed.instruments.hooks.dist_instrument_hooks"
HOOKS_PACKAGE = "pytest-codspeed==5.0.4"  # the PyPI package that ships HOOKS_MODULE
VALGRIND_PACKAGE = "valgrind"  # the Debian package that provides valgrind
PLANT_VAR = "DETSIM_COST_PLANT"
COUNT_ENV = PINNED  # one thread and PYTHONHASHSEED=0 in the counting process
SEPARATE_THREADS = "--separate-threads=yes"  # one callgrind file per thread: what harness_many needs


class CountError(RuntimeError):
    """A count that could not be made (valgrind failed, the region raised, no total in the file)."""


def not_measured_reason() -> str | None:
    """One line saying why counts cannot be made here (which package provides what), or None."""
    if shutil.which("valgrind") is None:
        return f"instruction counts not measured: valgrind is not installed (Debian package `{VALGRIND_PACKAGE}`)"
    try:
        hooks = importlib.util.find_spec(HOOKS_MODULE)
    except ImportError:  # its parent package is missing
        hooks = None
    if hooks is None:
        return (f"instruction counts not measured: the callgrind start/stop hooks are missing "
                f"(PyPI package `{HOOKS_PACKAGE}`)")
    return None


def _prelude(*imports: str) -> list[str]:
    """The lines every count script starts with: torch on one thread, the hooks, the planted work."""
    package, module = HOOKS_MODULE.rsplit(".", 1)
    return [*(f"import {name}" for name in ("os", *imports, "torch")), "torch.set_num_threads(1)",
            f"from {package} import {module} as _hooks"]


def _start() -> list[str]:
    """Instrumentation on, after a collection and with the garbage collector off (see the module docstring)."""
    return ["import gc", "gc.collect()", "gc.disable()", "_hooks.callgrind_start_instrumentation()"]


def _plant() -> list[str]:
    return [f"_plant = int(os.environ.get({PLANT_VAR!r}) or 0)",
            "_plant_x = torch.linspace(0.0, 1.0, max(_plant, 1), dtype=torch.float64)"]


def harness(setup: str, region: str) -> str:
    """The script a count runs: ``setup`` (uncounted), the expression ``region`` once to warm up, then counted."""
    return "\n".join([
        *_prelude(),
        setup,
        *_plant(),
        "def _region():",
        f"    _out = {region}",
        "    if _plant:",
        "        torch.exp(_plant_x).sum()",
        "    return _out",
        "_region()",
        *_start(),
        "_region()",
        "_hooks.callgrind_stop_instrumentation()",
    ]) + "\n"


def harness_many(setups: list[str]) -> str:
    """The script that counts several regions in one process: each setup defines its ``_render`` in a
    namespace of its own; every region is warmed up, then each runs in a thread of its own while
    instrumentation is on, so that :data:`SEPARATE_THREADS` writes one total per region, in order after
    the main thread's (threads are all started before counting and kept alive to the end: valgrind
    reuses the id of a thread that ended)."""
    return "\n".join([
        *_prelude("threading"),
        *_plant(),
        "_regions = []",
        f"for _setup in {setups!r}:",
        "    _ns = {'torch': torch}",
        "    exec(_setup, _ns)",
        "    _regions.append(_ns['_render'])",
        "def _region(i):",
        "    _out = _regions[i]()",
        "    if _plant:",
        "        torch.exp(_plant_x).sum()",
        "    return _out",
        "for _i in range(len(_regions)):",
        "    _region(_i)",
        "_go = [threading.Event() for _ in _regions]",
        "_done = [threading.Event() for _ in _regions]",
        "_end = threading.Event()",
        "def _worker(i):",
        "    _go[i].wait()",
        "    _region(i)",
        "    _done[i].set()",
        "    _end.wait()",
        "_threads = [threading.Thread(target=_worker, args=(i,)) for i in range(len(_regions))]",
        "for _t in _threads:",
        "    _t.start()",
        *_start(),
        "for _i in range(len(_regions)):",
        "    _go[_i].set()",
        "    _done[_i].wait()",
        "_hooks.callgrind_stop_instrumentation()",
        "_end.set()",
        "for _t in _threads:",
        "    _t.join()",
    ]) + "\n"


def command(script: str, out_file: Path, python: str | None = None, *, separate_threads: bool = False) -> list[str]:
    """The valgrind command line that counts ``script``'s measured region into ``out_file`` (with
    ``separate_threads``, into ``<out_file>-<thread>`` per thread)."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", *([SEPARATE_THREADS] if separate_threads else []),
            f"--callgrind-out-file={out_file}", python or sys.executable, "-c", script]


def parse_total(text: str) -> int:
    """The total instructions of a callgrind output file (its ``totals:`` line, else ``summary:``)."""
    found = {key: int(line.split()[1]) for line in text.splitlines() for key in ("totals:", "summary:")
             if line.startswith(key)}
    if not found:
        raise CountError("no totals: line in the callgrind file")
    return found.get("totals:", found.get("summary:"))

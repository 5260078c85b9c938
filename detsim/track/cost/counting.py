"""Count the instructions of a measured region under valgrind's callgrind.

A count runs one fresh process under valgrind with the script of
:func:`~detsim.track.base.callgrind.harness` (what it counts, and how, is described there): only the
second run of the region is counted, not the interpreter's start-up nor the imports. The callgrind
file is kept (``callgrind_annotate <file>`` lists the count per function: a profile to diff).

The process is a child of :mod:`detsim.track.base.fresh` (valgrind is the program; it ends with the
command), pinned to one thread with ``PYTHONHASHSEED=0``: two processes count within about 0.05 % of
each other. Under
valgrind torch sees at most AVX2 (valgrind emulates no AVX-512), so the count is a cost model of the
AVX2 kernels, not the native instruction stream.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.callgrind import COUNT_ENV, CountError, command, harness, not_measured_reason, parse_total
from detsim.track.base.fresh import ChildError, pinned_env, run

UNIT = "instructions"


@dataclass(frozen=True)
class Count:
    instructions: int  # total Ir of the measured region
    callgrind_file: Path | None  # kept for a per-function profile (callgrind_annotate), None if removed


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

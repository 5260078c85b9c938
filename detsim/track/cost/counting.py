"""Count the instructions of a measured region under valgrind's callgrind.

A count runs one fresh process under valgrind with the script of
:func:`~detsim.track.base.callgrind.harness` (what it counts, and how, is described there): only the
second run of the region is counted, not the interpreter's start-up nor the imports. The callgrind
file is kept (``callgrind_annotate <file>`` lists the count per function: a profile to diff).

One torch thread, ``PYTHONHASHSEED=0``: two processes count within about 0.05 % of each other. Under
valgrind torch sees at most AVX2 (valgrind emulates no AVX-512), so the count is a cost model of the
AVX2 kernels, not the native instruction stream.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.callgrind import COUNT_ENV, CountError, command, harness, not_measured_reason, parse_total

UNIT = "instructions"


@dataclass(frozen=True)
class Count:
    instructions: int  # total Ir of the measured region
    callgrind_file: Path | None  # kept for a per-function profile (callgrind_annotate), None if removed


def count(setup: str, region: str, *, out_dir: Path | None = None, keep: bool = True,
          env: dict | None = None, timeout: float = 600, cwd: Path | None = None) -> Count:
    """Count ``region`` after ``setup`` in a fresh valgrind process (see the module docstring).

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
    full_env = {**os.environ, **COUNT_ENV, **(env or {})}
    try:
        # run in the output folder unless told otherwise: ``python -c`` puts its working directory first
        # on sys.path, where a project checkout would shadow the installed detsim
        done = subprocess.run(command(harness(setup, region), out_file), env=full_env,
                              cwd=cwd or directory, capture_output=True, text=True, timeout=timeout)
        if done.returncode != 0:
            tail = [line for line in done.stderr.splitlines() if line and not line.startswith("==")]
            raise CountError(f"the counting process exited {done.returncode}: "
                             f"{tail[-1] if tail else 'no message'}")
        total = parse_total(out_file.read_text())
    except subprocess.TimeoutExpired:
        _discard(out_file, out_dir)
        raise CountError(f"the counting process ran past {timeout:.0f} s") from None
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

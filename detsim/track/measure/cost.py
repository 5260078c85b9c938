"""Deterministic cost: the instructions executed in a workload's measured region, counted under valgrind's
callgrind in a fresh process (docs/bench-gate.md, "Instruction counts").

Inputs: the code to count (or a :class:`CostSpec`: ``P1@64``, ``P1@128``, ``P2@32`` or a golden case id, eager on
the CPU). Outputs: a :class:`Count` (the total, and the callgrind file kept for ``callgrind_annotate``, a
profile to diff), or :class:`CountError` in one line. The script, command and total are
:mod:`detsim.track.base.callgrind`'s. Counted workloads are small variants of the timed ones, since valgrind
runs about 25 M instructions per second; under valgrind torch sees at most AVX2, so a count is a cost model
of the AVX2 kernels, not the native instruction stream.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path

from detsim.track.base.callgrind import COUNT_ENV, CountError, command, harness, not_measured_reason, parse_total
from detsim.track.base.fresh import ChildError, pinned_env, run
from detsim.track.base.golden import golden_dir
from detsim.track.base.workloads import reduced


TIMEOUT_S = 600  # of one counting process


@dataclass(frozen=True)
class Count:
    instructions: int  # total Ir of the measured region
    callgrind_file: Path | None  # kept for a per-function profile (callgrind_annotate), None if removed


def count(setup: str, region: str, *, out_dir: Path | None = None, keep: bool = True,
          package_dir: Path | None = None, env: dict | None = None, cwd: Path | None = None) -> Count:
    """Count ``region`` after ``setup`` in a fresh valgrind process, pinned to one thread, ``package_dir`` first
    on ``PYTHONPATH``, ``env`` added; :class:`CountError` when valgrind or the hooks are missing, the process
    failed or its file has no total."""
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
        run(command(harness(setup, region), out_file), env=pinned, cwd=cwd or directory, timeout=TIMEOUT_S,
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
    return Count(total, out_file if keep else None)


def _discard(out_file: Path, out_dir: Path | None) -> None:
    """Remove a callgrind file, and its folder too where :func:`count` made that folder itself."""
    out_file.unlink(missing_ok=True)
    if out_dir is None:
        shutil.rmtree(out_file.parent, ignore_errors=True)


# ---- the counted workloads

DTYPES = ("float64", "float32")


@dataclass(frozen=True)
class CostSpec:
    """One counted region: ``detsim.simulate`` of ``workload`` (``P1@64`` or a golden case id) on the CPU
    in ``dtype``, eager (the compiled path is not counted: inductor under valgrind takes minutes)."""

    workload: str
    dtype: str = "float64"

    @property
    def label(self) -> str:
        return f"{self.workload} cpu {self.dtype} eager"

    def setup(self, root: Path | None = None) -> str:
        """Python code that builds ``_config`` (uncounted)."""
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {', '.join(DTYPES)}, got {self.dtype!r}")
        read = "import detsim\nfrom detsim.commandline.to_config import config_from_argv\n"
        if reduced(self.workload) is not None:
            return (f"{read}from detsim.track.base.workloads import reduced\n"
                    f"_config = reduced({self.workload!r}).config(config_from_argv)")
        return (f"{read}from pathlib import Path\nfrom detsim.track.base.golden import find_case\n"
                f"_config = find_case({self.workload!r}, Path({str(golden_dir(root))!r})).config(config_from_argv)")

    def region(self) -> str:
        return f"detsim.simulate(_config, device='cpu', dtype=torch.{self.dtype})"


def count_spec(spec: CostSpec, *, root: Path | None = None, **kwargs) -> Count:
    """The instructions of one render of ``spec`` (:func:`~detsim.track.measure.cost.count`)."""
    return count(spec.setup(root), spec.region(), **kwargs)

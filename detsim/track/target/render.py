"""Rendering one golden case with a target's command, in a folder of its own, timed.

Input: a :class:`~.spec.TargetSpec`, a golden case and the folder of the installed command (``bin_dir``, first
on ``PATH``; None: the command as ``PATH`` finds it). The case's input files are copied to a temporary folder
(never its reference image) and the command runs there with the case's arguments, its environment pinned to
one thread plus the spec's ``env``. Its peak memory is measured by a small launcher that spawns it: a child
forked from this (large) process would count this process's memory as its own. Output: a
:class:`CaseOutcome` (never an exception: a broken commit is a finding, not a stopped run: an image judged
against its reference, or a failure of its own kind, :class:`Status`), and the image (float64) when there is
one. With ``runs=2`` a second fresh process with another hash seed must reproduce the image's hash.
"""

from __future__ import annotations

import os
import shutil
import string
import sys
import sysconfig
import tempfile
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Mapping

import numpy as np

from detsim.track.base.fresh import ChildError, TimedOut, run, thread_vars
from detsim.track.base.golden import GoldenCase, GoldenError
from detsim.track.base.hashing import image_sha256
from detsim.track.base.metrics import passes_parity
from detsim.track.base.status import Status
from detsim.track.base.golden import AXES
from detsim.track.base.metrics import image_metrics
from detsim.track.target.build import SUITE_VAR, tree_of
from detsim.track.target.spec import TargetSpec


@dataclass(frozen=True)
class CaseOutcome:
    """One case at one commit: its status, what it cost, its image hash and its parity with the reference."""

    case: str
    status: Status
    detail: str = ""  # one line: why it failed, or nothing
    seconds: float | None = None  # whole-process wall seconds, the least of its runs
    cpu_s: float | None = None  # whole-process CPU seconds (user + system), the least of its runs
    peak_mb: float | None = None  # peak resident memory of the process, the largest of its runs
    sha256: str | None = None  # the image's hash (detsim.track.base.hashing.IMAGE_HASH) of the first run
    hashes: tuple[str, ...] = ()  # every run's image hash, in order
    parity: Mapping | None = field(default=None, compare=False)  # base.metrics.image_metrics, shape added
    stderr_tail: tuple[str, ...] = ()  # the last lines of a failed run's stderr
    baseline_s: float | None = None  # another commit's seconds, timed in turns with these runs (render_case)
    baseline_cpu_s: float | None = None  # ... and its CPU seconds
    instructions: int | None = None  # one more process counted by callgrind (target.count), when the spec asks
    not_counted: str = ""  # why a count the spec asks for was not made (one line)

    @property
    def reproduced(self) -> bool | None:
        """Whether every run gave the first's hash (None: rendered once, or not an image)."""
        if self.status.is_failure or len(self.hashes) < 2:
            return None
        return len(set(self.hashes)) == 1

    @property
    def r(self) -> float | None:
        return None if self.parity is None else self.parity.get("r")

    @property
    def one_minus_r(self) -> float | None:
        r = self.r
        return None if r is None else 1.0 - r

    @property
    def at_parity(self) -> bool:
        return self.status is Status.OK and passes_parity(self.r)

    def summary(self) -> str:
        """One line: what the render came to."""
        if self.status.is_failure:
            return f"{self.status.value}: {self.detail}"
        one_minus_r = "undefined" if self.one_minus_r is None else f"{self.one_minus_r:.3g}"
        extra = {True: ", reproduced", False: ", NOT reproduced by a second process", None: ""}[self.reproduced]
        return (f"image, 1 - r = {one_minus_r}, max rel {_g(self.parity.get('max_rel'))}, "
                f"sum ratio {_g(self.parity.get('sum_ratio'))}, {self.seconds:.2f} s{extra}")

    def to_dict(self) -> dict:
        """The outcome as JSON stores it."""
        rec = asdict(self)
        rec.update(status=self.status.value, hashes=list(self.hashes), stderr_tail=list(self.stderr_tail),
                   parity=None if self.parity is None else dict(self.parity), reproduced=self.reproduced,
                   at_parity=self.at_parity)
        return rec

    @classmethod
    def from_record(cls, rec: Mapping) -> "CaseOutcome":
        kept = {f.name: rec[f.name] for f in fields(cls) if f.name in rec}
        return cls(**{**kept, "status": Status(rec["status"]), "hashes": tuple(rec.get("hashes", ())),
                      "stderr_tail": tuple(rec.get("stderr_tail", ()))})


def _g(x) -> str:
    return "undefined" if x is None else f"{x:.3g}"


FLOATFILE = "-floatfile"
STDERR_LINES = 5  # the last lines of stderr a failure keeps
SEEDS = AXES["process"].hash_seeds  # the hash seeds of the first and the second process
DROPPED_VARS = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", SUITE_VAR)  # the suite's own; the spec's env may set them
# argv: PEAK_FILE PROGRAM ARGS...; spawns PROGRAM, writes its peak resident kB, exits with its status
LAUNCHER = ("import os, sys\n"
            "pid = os.posix_spawn(sys.argv[2], sys.argv[2:], os.environ)\n"
            "status, usage = os.wait4(pid, 0)[1:]\n"
            "open(sys.argv[1], 'w').write(str(usage.ru_maxrss))\n"
            "code = os.waitstatus_to_exitcode(status)\n"
            "sys.exit(code if code >= 0 else 128 - code)\n")


@dataclass(frozen=True)
class CaseRender:
    outcome: CaseOutcome
    image: np.ndarray | None  # the first run's image, float64 (slow, fast)
    reference: np.ndarray | None
    runs: int = 1  # processes started (a failed run ends the render)


def output_name(args: tuple[str, ...]) -> tuple[tuple[str, ...], str]:
    """The case's arguments and the float image they write (``-floatfile image.bin`` is added when absent)."""
    if FLOATFILE in args[:-1]:
        return args, args[args.index(FLOATFILE) + 1]
    return (*args, FLOATFILE, "image.bin"), "image.bin"


def copy_inputs(case: GoldenCase, out_name: str, folder: Path) -> None:
    """The case's input files copied into ``folder``: never its reference image, the image it writes, its stdout."""
    for item in case.folder.iterdir():
        if item.name not in ("image.bin", out_name, "stdout.txt") and item.is_file():
            shutil.copy2(item, folder / item.name)


def command_env(spec: TargetSpec, bin_dir: Path | None, seed: str) -> dict[str, str]:
    """The environment of a render: this one without the suite's Python variables, ``bin_dir`` first on
    ``PATH`` (None: this interpreter's scripts last), one thread, the hash ``seed``, then the spec's ``env``
    (``$NAME`` and ``${NAME}`` in its values read from what comes before it)."""
    env = {k: v for k, v in os.environ.items() if k not in DROPPED_VARS}
    scripts = sysconfig.get_path("scripts")
    folders = [str(bin_dir), env.get("PATH")] if bin_dir is not None else [env.get("PATH"), scripts]
    env["PATH"] = os.pathsep.join(filter(None, folders))
    return with_spec_env(spec, {**env, **thread_vars(1), "PYTHONHASHSEED": seed})


def with_spec_env(spec: TargetSpec, env: dict[str, str]) -> dict[str, str]:
    """``env`` with the spec's ``env`` set over it; a value may use the others as a shell would
    (``$NAME``, ``${NAME}``): PATH = "/opt/tools/bin:$PATH" keeps the commit's commands first."""
    return {**env, **{name: string.Template(value).safe_substitute(env) for name, value in spec.env.items()}}


def render_case(spec: TargetSpec, case: GoldenCase, bin_dir: Path | None = None, *, runs: int = 1,
                baseline: Path | None = None) -> CaseRender:
    """Render ``case`` ``runs`` times, each in a fresh process (see the module docstring). With ``baseline``
    (another installation's command folder) each run is paired with a run of the baseline's command, the two
    going first in turns (the second of two runs finds the files both read in the page cache), and the
    outcome's ``baseline_s`` / ``baseline_cpu_s`` are the least of those: two commits timed side by side,
    under the same load."""
    try:
        reference = case.reference()
    except GoldenError as exc:
        raise GoldenError(f"{case.id}: {exc}") from None
    args, out_name = output_name(case.args)
    done: list[_Run] = []
    paired: list[_Run] = []
    for index in range(runs):
        seed = SEEDS[index] if index < len(SEEDS) else str(index)
        before = baseline is not None and index % 2 == 0  # in turns, each going first every other time
        if before:
            paired.append(_one_run(spec, case, args, out_name, baseline, seed, reference.shape))
        run_ = _one_run(spec, case, args, out_name, bin_dir, seed, reference.shape)
        if run_.failed is not None:
            return CaseRender(run_.failed, None, reference, len(done) + len(paired) + 1)
        if baseline is not None and not before:
            paired.append(_one_run(spec, case, args, out_name, baseline, seed, reference.shape))
        done.append(run_)
    image = done[0].image
    metrics = {**image_metrics(image, reference), "shape": list(image.shape)}
    hashes = tuple(image_sha256(r.image) for r in done)
    timed = paired and all(r.failed is None for r in paired)
    outcome = CaseOutcome(case.id, Status.OK, seconds=min(r.seconds for r in done),
                          cpu_s=min(r.cpu_s for r in done), peak_mb=max(r.peak_mb or 0.0 for r in done),
                          sha256=hashes[0], hashes=hashes, parity=metrics,
                          baseline_s=min(r.seconds for r in paired) if timed else None,
                          baseline_cpu_s=min(r.cpu_s for r in paired) if timed else None)
    return CaseRender(outcome, image, reference, len(done) + len(paired))


@dataclass(frozen=True)
class _Run:
    """One process: its failure (None: it wrote an image of the right size), its image, what it cost."""

    failed: CaseOutcome | None
    image: np.ndarray | None = None
    seconds: float | None = None
    cpu_s: float | None = None
    peak_mb: float | None = None


def command_words(spec: TargetSpec, bin_dir: Path | None, path: str | None) -> list[str] | None:
    """The spec's command as it runs at the commit installed in ``bin_dir``: a word that is a relative path
    to a file of that commit's exported tree (``./nb.py``, ``python tools/nb.py``, ``python nb.py``; the program
    only when it has a ``/``, as a shell reads it) names that file; the program is then found as ``PATH``
    finds it (None: it is not found, or not executable)."""
    tree = tree_of(bin_dir)

    def in_tree(word: str, first: bool) -> str:
        if tree is None or os.path.isabs(word) or (first and "/" not in word):  # a bare program: as PATH finds it
            return word
        return str(tree / word) if (tree / word).is_file() else word  # not a folder: python -m pkg stays

    words = [in_tree(word, i == 0) for i, word in enumerate(spec.command)]
    program = shutil.which(words[0], path=path)
    return None if program is None else [program, *words[1:]]


def _one_run(spec, case, args, out_name, bin_dir, seed, shape) -> _Run:
    env = command_env(spec, bin_dir, seed)
    words = command_words(spec, bin_dir, env.get("PATH"))
    if words is None:
        return _Run(CaseOutcome(case.id, Status.CRASHED, f"command not found: {spec.command[0]}"
                                + (" (a script must be executable, or run as: python SCRIPT)"
                                   if "/" in spec.command[0] else "")))
    with tempfile.TemporaryDirectory(prefix="detsim-target-") as tmp:
        work = Path(tmp)
        copy_inputs(case, out_name, work)
        peak_file = work / ".detsim-peak-kb"  # written once the command has ended
        try:
            done = run([sys.executable, "-S", "-c", LAUNCHER, str(peak_file), *words, *args],
                       cwd=work, env=env, timeout=spec.timeout_s, what=spec.command[0])
        except TimedOut:
            return _Run(CaseOutcome(case.id, Status.TIMED_OUT, f"ran past {spec.timeout_s:g} s",
                                    seconds=spec.timeout_s))
        except ChildError as exc:
            return _Run(CaseOutcome(case.id, Status.CRASHED, str(exc)))
        cost = dict(seconds=round(done.wall_s, 3), peak_mb=_peak_mb(peak_file))
        tail = tuple(line for line in done.stderr.splitlines() if line.strip())[-STDERR_LINES:]
        if done.returncode != 0:
            why = f"exited {done.returncode}" + (f": {tail[-1].strip()}" if tail else "")
            return _Run(CaseOutcome(case.id, Status.CRASHED, why, stderr_tail=tail, **cost))
        written = work / out_name
        if not written.is_file():
            return _Run(CaseOutcome(case.id, Status.NO_IMAGE, f"exited 0 without writing {out_name}",
                                    stderr_tail=tail, **cost))
        flat = np.fromfile(written, dtype="<f4")
        if written.stat().st_size % 4 or flat.size != shape[0] * shape[1]:
            side = int(round(flat.size ** 0.5))
            guess = (" (the reference's pixels as float64? nanoBragg's -floatfile is float32)"
                     if written.stat().st_size == 8 * shape[0] * shape[1]
                     else f" ({side}x{side}?)" if side * side == flat.size else "")
            return _Run(CaseOutcome(case.id, Status.WRONG_SIZE,
                                    f"wrote {written.stat().st_size} bytes, {flat.size} float32 values{guess}, where "
                                    f"the reference is {shape[0]}x{shape[1]}", **cost))
        # the launcher's CPU seconds include the command's (it waited for it); its own are a few ms
        return _Run(None, flat.reshape(shape).astype(np.float64), cpu_s=round(done.cpu_s, 3), **cost)


def _peak_mb(peak_file: Path) -> float | None:
    """The launcher's report of its child's peak resident memory, in MB (None: it wrote none), removed."""
    try:
        return round(int(peak_file.read_text()) / 1024, 1)
    except (OSError, ValueError):
        return None
    finally:
        peak_file.unlink(missing_ok=True)

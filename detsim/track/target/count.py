"""An instruction count of one render of a target's command: its whole process under valgrind's callgrind.

Input: a :class:`~.spec.TargetSpec` whose ``count_instructions`` is on, a golden case, the folder of the
installed command and a work folder (the same path for every commit of a recording). The case's input files are
copied into ``<work>/case`` and the command runs there, children followed (``--trace-children=yes``: a port's
command may be a wrapper), in an environment built from nothing but what decides a count: the command's folder
and the system's on ``PATH``, ``HOME``, one locale, one thread for OpenMP, MKL and OpenBLAS, hash seed 0, no byte
code written, then the spec's ``env``. Output: the instructions of every process, summed (an int), or a
:class:`~detsim.track.base.callgrind.CountError` in one line.

Why each pin (docs/target-counts.md): numpy's OpenBLAS starts a thread per core, which runs
its own start-up; the hash seed orders sets and dicts; an inherited environment (asv's variables, the commit
being measured) and a randomly named folder move the interpreter's strings and stack; a process writing byte
code does work the next one does not. With them, one build counts the same instructions every time and two
builds of the same files count the same; another path to the build (a longer folder name) moves a count by
about 0.001 %.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from detsim.track.base.callgrind import VALGRIND_PACKAGE, CountError, parse_total
from detsim.track.base.fresh import PINNED, ChildError, TimedOut, run
from detsim.track.base.golden import GoldenCase
from detsim.track.target.render import command_words, copy_inputs, output_name, with_spec_env
from detsim.track.target.spec import TargetSpec

SLOWDOWN = 60  # a process under callgrind takes up to this many times its native time: its timeout's factor
PINNED_ENV = {**PINNED, "OPENBLAS_NUM_THREADS": "1", "LC_ALL": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
SYSTEM_PATH = "/usr/local/bin:/usr/bin:/bin"
OUT = "callgrind.{pid}.out"  # one file per process (valgrind's %p)


def not_counted_reason() -> str | None:
    """One line saying why a target's renders cannot be counted here, or None (a target's count needs
    valgrind only: it counts the whole process, no start/stop hooks)."""
    if shutil.which("valgrind") is None:
        return f"valgrind is not installed (Debian package `{VALGRIND_PACKAGE}`)"
    return None


def count_env(spec: TargetSpec, bin_dir: Path) -> dict[str, str]:
    """The environment of a counted render (see the module docstring)."""
    home = {"HOME": os.environ["HOME"]} if "HOME" in os.environ else {}
    return with_spec_env(spec, {"PATH": os.pathsep.join([str(bin_dir), SYSTEM_PATH]), **home, **PINNED_ENV})


def count_render(spec: TargetSpec, case: GoldenCase, bin_dir: Path, work: Path) -> int:
    """The instructions of one render of ``case`` by the command in ``bin_dir``, run in ``work/case``
    (emptied first; the callgrind files are removed after)."""
    reason = not_counted_reason()
    if reason:
        raise CountError(f"not counted: {reason}")
    env = count_env(spec, bin_dir)
    words = command_words(spec, bin_dir, env["PATH"])  # as the render runs it: a script of the commit's tree too
    if words is None:
        raise CountError(f"not counted: command not found: {spec.command[0]}")
    work = Path(work)
    shutil.rmtree(work, ignore_errors=True)
    (work / "case").mkdir(parents=True)
    args, out_name = output_name(case.args)
    copy_inputs(case, out_name, work / "case")
    argv = ["valgrind", "--tool=callgrind", "--trace-children=yes",
            f"--callgrind-out-file={work / OUT.format(pid='%p')}", *words, *args]
    try:
        done = run(argv, cwd=work / "case", env=env, timeout=spec.timeout_s * SLOWDOWN, what="the counted render")
        done.check("the counted render")
        files = sorted(work.glob(OUT.format(pid="*")))
        if not files:
            raise CountError("the counted render wrote no callgrind file")
        return sum(parse_total(f.read_text()) for f in files)
    except TimedOut:
        raise CountError(f"the counted render ran past {spec.timeout_s * SLOWDOWN:g} s") from None
    except ChildError as exc:
        raise CountError(str(exc)) from None
    finally:
        shutil.rmtree(work, ignore_errors=True)

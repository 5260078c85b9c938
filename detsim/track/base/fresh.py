"""Child processes, one way for the whole suite: work in a fresh interpreter, and no child outliving its command.

Every child is started in a session of its own (so its whole group can be killed) and killed by the kernel
should this process die (``PR_SET_PDEATHSIG``, Linux); past its time limit, or on Ctrl-C or SIGTERM (which the
commands turn into KeyboardInterrupt: :mod:`detsim.host.signals`), its group is killed and reaped before the
interrupt goes on.

A **job** (:func:`run_job`) is ``python -P -m detsim.track.base.fresh ENTRY JOB RESULT``: ``module:function``
called with the JSON object JOB, its JSON answer written to RESULT. A job is a frozen dataclass (:class:`Job`):
JSON at the process boundary, read back and validated into the class the entry's first parameter names. ``-P``
keeps the working directory off ``sys.path`` (a checkout there would shadow the package); the package folder
comes first on ``PYTHONPATH``.
A long-lived child is spoken to as a :class:`Conversation`, in JSON lines. Standard library only: the child
side runs inside other commits' packages.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import types
import typing
from dataclasses import MISSING, dataclass, fields, is_dataclass, replace
from functools import lru_cache
from pathlib import Path
from typing import Mapping, Sequence

HERE = Path(__file__).resolve().parents[3]  # the folder holding this ``detsim`` package
MODULE = "detsim.track.base.fresh"  # the child side of a job: ``python -P -m MODULE ENTRY JOB RESULT``
PR_SET_PDEATHSIG = 1  # linux/prctl.h
POLL_S = 0.05  # the longest a wait for a child sleeps between looks
_VALGRIND_LINE = re.compile(r"^==\d+==")


class ChildError(RuntimeError):
    """A child that could not start, failed or ran past its time limit (one line)."""


class TimedOut(ChildError):
    """A child killed, with its process group, past its time limit."""


@dataclass(frozen=True)
class Finished:
    """How a child ended: exit status (negative: the signal that killed it), output, its own CPU seconds."""

    returncode: int
    out: bytes  # stdout
    err: bytes  # stderr
    cpu_s: float  # user + system seconds of the child alone
    result: dict | None = None  # a job's answer (:func:`run_job`)
    wall_s: float = 0.0  # from its start to its end

    @property
    def stdout(self) -> str:
        return self.out.decode(errors="replace")

    @property
    def stderr(self) -> str:
        return self.err.decode(errors="replace")

    def last_line(self) -> str:
        """The last meaningful line of stderr, else of stdout ("" when there is none)."""
        return last_line(self.stderr) or last_line(self.stdout)

    def check(self, what: str) -> "Finished":
        """This, when the child exited 0; else a :class:`ChildError` naming ``what`` and its last line."""
        if self.returncode != 0:
            raise ChildError(f"{what} exited {self.returncode}: {self.last_line() or 'no message'}")
        return self


class JobError(ValueError):
    """A job's JSON that is not the job its entry takes (one line naming the field)."""


@dataclass(frozen=True)
class Job:
    """A child process's job: its fields are JSON values (str, int, float, bool, None), tuples and dicts of them, or
    frozen dataclasses of those; :meth:`to_json` at the process boundary, :meth:`from_json` on the other side."""

    def to_json(self) -> dict:
        return _plain(self)

    @classmethod
    def from_json(cls, data) -> "Job":
        """The job ``data`` (parsed JSON) describes; :class:`JobError` for a missing, unknown or mistyped field."""
        return _read(data, cls, cls.__name__)


def _plain(value):
    if is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _read(value, hint, where: str):
    """``value`` read as type ``hint`` (JSON arrays become tuples; dataclasses are built field by field)."""
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arm in (a for a in args if a is not type(None)):
            try:
                return _read(value, arm, where)
            except JobError:
                continue
        raise JobError(f"{where}: {value!r} is not {hint}")
    if is_dataclass(hint):
        if not isinstance(value, dict):
            raise JobError(f"{where}: not an object")
        known = {f.name: f for f in fields(hint)}
        unknown = sorted(set(value) - set(known))
        if unknown:
            raise JobError(f"{where}: unknown field(s) {', '.join(unknown)}")
        hints = typing.get_type_hints(hint)
        read = {}
        for name, f in known.items():
            if name in value:
                read[name] = _read(value[name], hints[name], f"{where}.{name}")
            elif f.default is MISSING and f.default_factory is MISSING:
                raise JobError(f"{where}: no {name}")
        return hint(**read)
    if origin is tuple:
        if not isinstance(value, (list, tuple)) or (args[-1:] != (Ellipsis,) and len(value) != len(args)):
            raise JobError(f"{where}: {value!r} is not {hint}")
        arms = [args[0]] * len(value) if args[-1:] == (Ellipsis,) else args
        return tuple(_read(v, arm, f"{where}[{i}]") for i, (v, arm) in enumerate(zip(value, arms)))
    if origin in (dict, Mapping, typing.Mapping) or hint in (dict, Mapping):
        if not isinstance(value, dict):
            raise JobError(f"{where}: not an object")
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    if hint in (str, int, float, bool) and (type(value) is not hint):
        raise JobError(f"{where}: {value!r} is not {hint.__name__}")
    return value


def _job_class(function) -> type[Job] | None:
    """The :class:`Job` class an entry's first parameter names, or None (it takes the JSON object itself)."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # noqa: BLE001 - an annotation this interpreter cannot evaluate: the plain object
        return None
    first = function.__code__.co_varnames[:1]
    hint = hints.get(first[0]) if first else None
    return hint if isinstance(hint, type) and issubclass(hint, Job) else None


def last_line(text: str) -> str:
    """The last line of ``text`` that says something: not blank, not valgrind's own ``==PID==`` lines."""
    lines = [line.strip() for line in text.splitlines() if line.strip() and not _VALGRIND_LINE.match(line)]
    return lines[-1] if lines else ""


def thread_vars(threads: int) -> dict[str, str]:
    """The variables that give a child's OpenMP and MKL ``threads`` threads."""
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


PINNED = {**thread_vars(1), "PYTHONHASHSEED": "0"}  # one thread and a fixed hash seed: counts, cross-commit sides


def pinned_env(*path: Path, **variables: str) -> dict[str, str]:
    """This process's environment with the folders of ``path`` first on ``PYTHONPATH``, and ``variables``."""
    env = dict(os.environ)
    if path:
        env["PYTHONPATH"] = os.pathsep.join([*map(str, path), *filter(None, [env.get("PYTHONPATH")])])
    return {**env, **variables}


@lru_cache(maxsize=1)
def _prctl():
    """libc's ``prctl``, looked up in the parent (between fork and exec the child only calls it), or None."""
    if not sys.platform.startswith("linux"):
        return None
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl
    return None


def _arrange(parent: int, cpu: int | None):
    """The ``preexec_fn`` of a child: SIGKILL when ``parent`` dies; pinned to ``cpu`` when given."""
    prctl = _prctl()

    def arrange() -> None:
        if prctl is not None:
            prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
            if os.getppid() != parent:  # the parent went before the request was made
                os._exit(1)
        if cpu is not None:
            os.sched_setaffinity(0, {cpu})

    return arrange


def start(argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
          stdin=subprocess.DEVNULL, stdout=None, stderr=None, text: bool = False,
          cpu: int | None = None) -> subprocess.Popen:
    """Start ``argv`` in a session of its own, to die with this process; ``cpu``: pinned to that CPU."""
    return subprocess.Popen(list(argv), cwd=cwd, env=None if env is None else dict(env), stdin=stdin, stdout=stdout,
                            stderr=stderr, text=text, start_new_session=True, preexec_fn=_arrange(os.getpid(), cpu))


def stop(process: subprocess.Popen) -> None:
    """Kill ``process`` and everything in its process group, and reap it."""
    if process.returncode is None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _wait(process: subprocess.Popen, timeout: float | None):
    """``(wait status, resource usage)`` of ``process`` once it ends, or None past ``timeout`` seconds. It polls:
    an interrupt is seen within a poll whichever thread the signal reached."""
    deadline = None if timeout is None else time.monotonic() + timeout
    delay = 0.001
    while True:
        pid, status, usage = os.wait4(process.pid, os.WNOHANG)
        if pid:
            process.returncode = os.waitstatus_to_exitcode(status)
            return status, usage
        left = POLL_S if deadline is None else deadline - time.monotonic()
        if left <= 0:
            return None
        delay = min(delay * 2, left, POLL_S)
        time.sleep(delay)


def run(argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
        timeout: float | None = None, what: str | None = None) -> Finished:
    """Run ``argv`` to its end, its output captured; :class:`ChildError` when it cannot start or runs past
    ``timeout`` seconds (a failing exit is returned: :meth:`Finished.check` raises it)."""
    what = what or Path(argv[0]).name
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        began = time.perf_counter()
        try:
            process = start(argv, cwd=cwd, env=env, stdout=out, stderr=err)
        except OSError as exc:
            raise ChildError(f"{what} could not start: {exc.strerror or exc}") from None
        try:
            ended = _wait(process, timeout)
        finally:
            stop(process)  # its group: whatever it left running, or all of it on an interrupt
        wall = time.perf_counter() - began
        if ended is None:
            raise TimedOut(f"{what} ran past {timeout:.0f} s")
        usage = ended[1]
        out.seek(0)
        err.seek(0)
        return Finished(process.returncode, out.read(), err.read(), usage.ru_utime + usage.ru_stime, wall_s=wall)


def run_job(entry: str, job: Job | Mapping, *, python: str | None = None, path: Sequence[Path] = (HERE,),
            cwd: Path | None = None, timeout: float | None = None, env: Mapping[str, str] | None = None,
            what: str | None = None, check: bool = True) -> Finished:
    """Call ``entry`` (``module:function``) with ``job`` in a fresh interpreter, ``path`` first on ``PYTHONPATH``
    (the package folder: another commit's for a side of a comparison), ``env`` added (:data:`PINNED`...). With
    ``check`` a failure raises :class:`ChildError` (one line); without, it is returned with no result."""
    what = what or entry
    with tempfile.TemporaryDirectory(prefix="detsim-job-") as tmp:
        answer = Path(tmp) / "result.json"
        payload = job.to_json() if isinstance(job, Job) else dict(job)
        argv = [python or sys.executable, "-P", "-m", MODULE, entry, json.dumps(payload), str(answer)]
        done = run(argv, cwd=cwd, env=pinned_env(*path, **(env or {})), timeout=timeout, what=what)
        if check:
            done.check(what)
        if answer.is_file():
            return replace(done, result=json.loads(answer.read_text()))
    if check:
        raise ChildError(f"{what} exited 0 without an answer")
    return done


class Conversation:
    """A long-lived child spoken to in JSON lines: a greeting, then one answer per request (:meth:`ask`). As a
    context manager it ends with the block: on an exception at once, else once its stdin is closed (killed
    past ``timeout``)."""

    def __init__(self, argv: Sequence[str], *, cwd: Path | None = None, env: Mapping[str, str] | None = None,
                 cpu: int | None = None, what: str = "the server", timeout: float = 600):
        self.what, self.timeout = what, timeout
        self._stderr = tempfile.TemporaryFile()
        self.process = start(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=self._stderr, text=True, cpu=cpu)
        try:
            self.greeting = self._answer("did not start")
        except BaseException:
            self.close(at_once=True)
            raise

    def ask(self, request) -> dict:
        """Send one request and return the answer."""
        try:
            self.process.stdin.write(json.dumps(request) + "\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # it died: reading says why
        return self._answer("died")

    def _answer(self, failed: str) -> dict:
        line = self.process.stdout.readline()
        if not line:
            stop(self.process)
            self._stderr.seek(0)
            why = last_line(self._stderr.read().decode(errors="replace")) or "no output"
            raise ChildError(f"{self.what} {failed}: {why}")
        return json.loads(line)

    def close(self, at_once: bool = False) -> None:
        """End the child: at once, or after closing its stdin and waiting up to ``timeout`` seconds."""
        try:
            if not at_once and self.process.poll() is None:
                with contextlib.suppress(BrokenPipeError, subprocess.TimeoutExpired):
                    self.process.stdin.close()
                    self.process.wait(timeout=self.timeout)
        finally:
            stop(self.process)
            for stream in (self.process.stdin, self.process.stdout, self._stderr):
                with contextlib.suppress(BrokenPipeError):
                    stream.close()

    def __enter__(self) -> "Conversation":
        return self

    def __exit__(self, kind, value, traceback) -> None:
        self.close(at_once=kind is not None)


def _main(argv: list[str]) -> int:
    """The child side of a job: call ENTRY with JOB, write the answer to RESULT (whole or not at all)."""
    entry, job, result = argv
    module, _, name = entry.partition(":")
    function = getattr(importlib.import_module(module), name)
    kind = _job_class(function)
    data = json.loads(job)
    answer = function(data if kind is None else kind.from_json(data))
    partial = Path(result + ".partial")
    partial.write_text(json.dumps(answer))
    os.replace(partial, result)
    return 0


if __name__ == "__main__":  # the module's own copy, so that its Job is the class the jobs' modules import
    importlib.import_module("detsim.host.shutdown").skip_final_collection()
    sys.exit(importlib.import_module(MODULE)._main(sys.argv[1:]))

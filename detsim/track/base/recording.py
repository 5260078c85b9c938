"""The recording side of the tracking run (``.ci/track``, docs/tracking.md), as commands that need only the
standard library: ``.ci/track`` runs this file by path (``python -I detsim/track/base/recording.py STEP``),
so a commit that breaks the package it measures cannot break the run that is to record that break.

Inputs: the checkout (``asv.conf.json``, git), ``results/asv/<machine>/`` (asv's results files and its
``benchmarks.json``, the suite's benchmark names), the process table. Outputs: the commits to record, the
second recording's configuration, the second recording's results merged into ``results/asv``, asv's
leftover fork servers and their folders removed; for what cannot be done, one line and exit 2.

A commit's record is complete or absent: a results file that lacks a benchmark of the suite (a run killed
while it recorded) or cannot be read (killed while asv wrote it) is not a record, and that commit is
recorded again.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CONFIG = "asv.conf.json"
NOT_RESULTS = ("machine.json", "benchmarks.json")  # asv's files in a results folder that record no commit
SAME = ("commit_hash", "env_name", "result_columns", "version")  # what two parts of one recording share
MERGED = ("results", "durations")  # the per-benchmark maps that are joined
FORKSERVER_PREFIX = "asv-forkserver-"  # asv 0.6.6's folder for a fork server's socket (runner.ForkServer)
STALE_S = 60.0  # a fork-server folder with no socket yet is a dead run's once this old (a live one binds it at once)
_STRING_OR_COMMENT = re.compile(r'"(?:\\.|[^"\\])*"?|//[^\n]*', re.DOTALL)  # a string (to its end) or a comment


# a host name's letters (and asv's own default, the host name, fits): one path component, never "." or ".."
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def validate_machine_name(name: str) -> str:
    """``name`` when it can name a machine's folder, else ValueError saying what is allowed."""
    if not _NAME.fullmatch(name):
        shown = name.encode("unicode_escape").decode("ascii")
        raise ValueError(f"machine name '{shown}' refused: use 1-64 letters, digits, '.', '_' or '-', "
                         "starting with a letter or digit (it names a folder of results/asv)")
    return name


class RecordingError(Exception):
    """What a step cannot do; the message is one line naming the file."""


def strip_comments(text: str) -> str:
    """JSON with ``//`` comments (as asv.conf.json allows) -> JSON; ``//`` inside strings is kept."""
    return _STRING_OR_COMMENT.sub(lambda m: "" if m.group().startswith("//") else m.group(), text)


def read_json(path: Path, *, comments: bool = False, error: type[Exception] = RecordingError):
    """The parsed file (NaN allowed: asv writes it for skips); raises ``error`` naming it, in one line."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        raise error(f"{path}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise error(f"{path}: unreadable ({exc})") from None
    try:
        return json.loads(strip_comments(text) if comments else text)
    except json.JSONDecodeError as exc:
        raise error(f"{path}: corrupt JSON ({exc})") from None


def write_aside(path: Path, data: bytes) -> None:
    """``data`` into ``path``, whole or not at all: written beside it, then renamed over it (the suite
    keeps its own few lines for this rather than the measured package's)."""
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise


# ---- what is recorded


def suite_benchmarks(results: Path) -> frozenset[str] | None:
    """The benchmark names asv found in the suite when it last ran (its ``benchmarks.json``, written before
    it records anything); None when there is none to read."""
    try:
        found = read_json(results / "benchmarks.json")
    except RecordingError:
        return None
    return frozenset(name for name, entry in found.items() if isinstance(entry, dict)) if isinstance(found, dict) else None


def missing_benchmarks(path: Path, suite: frozenset[str] | None) -> list[str] | None:
    """The suite's benchmarks that the results file ``path`` lacks, sorted (None when no suite is known:
    then no file can be judged complete); a file that cannot be read is a :class:`RecordingError`."""
    data = read_json(path)
    if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
        raise RecordingError(f"{path}: not an asv results file")
    return None if suite is None else sorted(suite - set(data["results"]))


def plan(root: Path, machine: str, recent: int) -> tuple[list[str], list[str]]:
    """(the commits to record, HEAD first; one note per commit recorded again). HEAD is always recorded; an
    older commit of the ``recent`` is recorded unless one of its results files holds every benchmark of the
    suite. A results file that cannot be read is removed: it is no record, and asv cannot add to it."""
    commits = subprocess.run(["git", "rev-list", f"--max-count={recent}", "HEAD"], cwd=root, check=True,
                             capture_output=True, text=True).stdout.split()
    folder = root / "results" / "asv" / machine
    suite = suite_benchmarks(root / "results" / "asv")
    record, notes = [], []
    for commit in commits:
        gaps = []
        for path in sorted(p for p in folder.glob(f"{commit[:8]}-*.json") if p.name not in NOT_RESULTS):
            try:
                gaps.append(missing_benchmarks(path, suite))
            except RecordingError as exc:
                path.unlink()
                notes.append(f"{exc}: removed, {commit[:8]} is recorded again")
        if commit != commits[0] and [] in gaps:
            continue  # recorded completely before
        record.append(commit)
        if commit != commits[0] and gaps:
            notes.append(f"{commit[:8]} was recorded only in part ({_gap(gaps)}); recorded again")
    return record, notes


def _gap(gaps: list[list[str] | None]) -> str:
    """What the most complete of a commit's results files lacks, in a few words."""
    known = [gap for gap in gaps if gap is not None]
    if not known:
        return "no results/asv/benchmarks.json says what a complete record holds"
    least = min(known, key=len)
    return f"{len(least)} of the suite's benchmarks missing, {least[0]} first"


# ---- the second recording


def second_config(root: Path, out: Path, results: str) -> str:
    """Write ``out``: asv.conf.json with its environments, results and page folders suffixed -second
    (``results`` for the results); return the first environment folder."""
    config = read_json(root / CONFIG, comments=True)
    if not isinstance(config, dict):
        raise RecordingError(f"{root / CONFIG}: not a JSON object")
    first = config.get("env_dir", ".asv/env")
    config.update(env_dir=first + "-second", results_dir=results, html_dir=".asv/html-second")
    write_aside(out, json.dumps(config, indent=1).encode())
    return first


def merge_file(part: Path, into: Path) -> None:
    """Fold the results file ``part`` into ``into`` (both of one commit and environment), then remove ``part``."""
    ours, theirs = read_json(into), read_json(part)
    for data, path in ((ours, into), (theirs, part)):
        if not isinstance(data, dict) or not all(isinstance(data.get(key), dict) for key in MERGED):
            raise RecordingError(f"{path}: not an asv results file")
    differ = [key for key in SAME if ours.get(key) != theirs.get(key)]
    if differ:
        raise RecordingError(f"{part}: another recording than {into} ({', '.join(differ)} differ)")
    for key in MERGED:
        ours[key].update(theirs[key])
    write_aside(into, json.dumps(ours).encode())  # asv's own layout: one line, keys in its order
    part.unlink()


def merge_results(source: Path, target: Path) -> list[Path]:
    """Every results file under ``source/<machine>/`` merged into or moved to ``target/<machine>/``; the
    target files written, in name order. Each file is replaced whole; a failure leaves every file valid."""
    written = []
    for part in sorted(source.glob("*/*.json")):
        if part.name in NOT_RESULTS:
            continue
        into = target / part.parent.name / part.name
        try:
            if into.exists():
                merge_file(part, into)
            else:
                into.parent.mkdir(parents=True, exist_ok=True)
                write_aside(into, part.read_bytes())
                part.unlink()
        except OSError as exc:
            raise RecordingError(f"{part} could not be merged into {into} ({exc.strerror or exc}); every results "
                              "file is whole, and the commits not merged are recorded again") from None
        written.append(into)
    return written


# ---- what the run writes, checked before it records


NOT_A_FOLDER = "not a folder"  # why_unwritable: the nearest existing path is a file (or other non-folder)


def why_unwritable(folder: Path) -> tuple[Path, str | None]:
    """The nearest existing path of ``folder`` (itself, else the folder it would be made in) and why no file
    can be made there: :data:`NOT_A_FOLDER`, the operating system's reason, or None (it can). A file is made
    there and removed, since a permission test cannot tell root from a read-only disk; nothing is left behind.
    The one probe of writability (``base/output.py`` asks it too)."""
    existing = folder
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return existing, NOT_A_FOLDER
    try:
        handle, probe = tempfile.mkstemp(dir=existing, prefix=".write-test.")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        return existing, exc.strerror or str(exc)
    return existing, None


def check_writable(folder: Path) -> None:
    """:class:`RecordingError` unless files can be made in ``folder`` (or, where it does not exist yet, in the
    folder it would be made in): :func:`why_unwritable`."""
    existing, why = why_unwritable(folder)
    if why is not None:
        reason = f"{existing} is not a folder" if why == NOT_A_FOLDER else why
        raise RecordingError(f"{folder}: cannot be written ({reason})")


# ---- processes asv leaves behind


def _processes() -> dict[int, tuple[int, list[str]]]:
    """pid -> (parent pid, command line) of every process this one can see."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            stat = (entry / "stat").read_text()
            parent = int(stat[stat.rindex(")") + 2:].split()[1])
            found[int(entry.name)] = (parent, (entry / "cmdline").read_bytes().decode(errors="replace").split("\0"))
    return found


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``, parents before children."""
    table = _processes()
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, (parent, _) in table.items() if parent in frontier]
        found += children
        frontier = children
    return found


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2:][:1] != "Z"


def _ancestors() -> set[int]:
    """This process and those above it: never stopped by it."""
    table, found = _processes(), {os.getpid()}
    pid = os.getpid()
    while pid in table and table[pid][0] not in found and table[pid][0] > 0:
        pid = table[pid][0]
        found.add(pid)
    return found


def _stop(pids: list[int]) -> None:
    """SIGTERM, then after a moment SIGKILL, each process and the group it leads (asv starts each fork server
    as a group of its own: the forks that run the benchmarks are in it)."""
    pids = [pid for pid in pids if pid not in _ancestors()]
    for signum in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(OSError):
                os.killpg(pid, signum) if os.getpgid(pid) == pid else os.kill(pid, signum)
        if signum == signal.SIGTERM and pids:
            deadline = time.monotonic() + 2
            while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
                time.sleep(0.05)


def leftovers(root: Path) -> list[tuple[int, Path | None]]:
    """(pid, its fork server's socket folder or None) of every process of this checkout's recordings whose
    asv is gone: asv's fork servers of ``root/benchmarks`` and whatever runs an interpreter of its
    environments (``root/.asv``: builds, installs), when their parent is no asv (it was killed outright).
    asv starts each in a process group of its own, so killing the run's group does not reach them."""
    table = _processes()
    benchmarks, envs = str(root / "benchmarks"), str(root / ".asv") + os.sep

    def ours(argv: list[str]) -> bool:
        server = "run_server" in argv and argv[argv.index("run_server") + 1:][:1] == [benchmarks]
        return server or argv[0].startswith(envs)

    def asv(argv: list[str]) -> bool:
        return any(arg.endswith(os.sep + "asv") for arg in argv[:2])

    found = []
    for pid, (parent, argv) in table.items():
        if ours(argv) and not (parent in table and (asv(table[parent][1]) or ours(table[parent][1]))):
            socket = argv[argv.index("run_server") + 2:][:1] if "run_server" in argv else []
            found.append((pid, Path(socket[0]).parent if socket else None))
    return found


def _bound_sockets() -> set[str]:
    """The paths of the Unix sockets some process has bound (Linux's /proc/net/unix)."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    except OSError:
        return set()
    return {line.split()[7] for line in lines if len(line.split()) > 7}


def clean_up(root: Path, below: int | None = None) -> list[str]:
    """Stop the processes below ``below`` (the tracking run's, when it ends), then what recordings of the
    checkout ``root`` left running (:func:`leftovers`: a run killed outright cannot stop them), then remove
    the fork-server folders whose socket no process holds any more (of any run: a dead one's). Returns what
    it did, one line each."""
    if below is not None:
        _stop(descendants(below))
    left = leftovers(root)
    _stop([pid for pid, _ in left])
    done = [f"stopped process {pid}, left by a run that was killed ({'asv fork server' if folder else 'asv'})"
             for pid, folder in left]
    bound, now = _bound_sockets(), time.time()
    for folder in Path(tempfile.gettempdir()).glob(FORKSERVER_PREFIX + "*"):
        with contextlib.suppress(OSError):
            socket = folder / "socket"
            held = str(socket) in bound
            dead = folder in {f for _, f in left} or (
                not held and (socket.exists() or now - folder.stat().st_mtime > STALE_S))
            if dead:
                shutil.rmtree(folder)
                done.append(f"removed {folder}")
    return done


# ---- the command line .ci/track calls


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="recording", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="step", required=True)
    sub.add_parser("machine", help="print the machine name if it can name a results folder").add_argument("name")
    p = sub.add_parser("plan", help="write the commits to record, HEAD first, one a line")
    p.add_argument("--machine", required=True)
    p.add_argument("--recent", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    p = sub.add_parser("second-config", help="write the second recording's asv configuration")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--results", required=True)
    p = sub.add_parser("merge", help="merge the second recording's results files into the first's")
    p.add_argument("source", type=Path)
    p.add_argument("target", type=Path)
    p = sub.add_parser("writable", help="check that the run can write these folders (made if missing)")
    p.add_argument("folders", type=Path, nargs="+")
    p = sub.add_parser("clean-up", help="stop what the run left running and remove asv's stale folders")
    p.add_argument("--below", type=int, default=None, help="stop every process below this one first")
    args = parser.parse_args(argv)
    root = Path.cwd()
    try:
        if args.step == "machine":
            print(validate_machine_name(args.name))
        elif args.step == "plan":
            commits, notes = plan(root, validate_machine_name(args.machine), args.recent)
            for note in notes:
                print(f"tracking run: {note}", file=sys.stderr)
            write_aside(args.out, "".join(f"{c}\n" for c in commits).encode())
        elif args.step == "second-config":
            print(second_config(root, args.out, args.results))
        elif args.step == "merge":
            merge_results(args.source, args.target)
        elif args.step == "writable":
            for folder in args.folders:
                check_writable(folder)
        elif args.step == "clean-up":
            for line in clean_up(Path(os.path.abspath(root)), args.below):
                print(f"tracking run: {line}", file=sys.stderr)
    except (ValueError, RecordingError) as exc:
        print(f"tracking run: {exc}", file=sys.stderr)
        return 2
    except (OSError, subprocess.CalledProcessError) as exc:
        print(f"tracking run: {args.step}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())

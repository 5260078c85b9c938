"""``detsim-track record``: recent commits recorded by the recorder, then judged by ``detsim-track regressions``.
Without ``--target``, detsim's own (:mod:`~detsim.track.recorder.own`: its asv suite in asv's environments, in
two phases, the first on a Dask cluster with ``--workers/--scheduler``; docs/tracking.md, docs/cluster.md);
with ``--target DIR``, a window of a target's history (each commit built into the project's venv and measured
by asv's suite for targets, twins reused: docs/targets.md), its table printed and the commits where a case
turns bad named."""

from __future__ import annotations

import argparse
import fcntl
import functools
import os
import socket
import sys
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.git import GitError, git
from detsim.track.commands import positive_int, refuse
from detsim.track.base.output import OutputError, check_output_file, write_json
from detsim.track.base.files import RecordingError, check_writable, validate_machine_name
from detsim.track.base.status import Status
from detsim.track.recorder.own import OwnRecording
from detsim.track.recorder.processes import clean_up
from detsim.track.recorder.target import merge_slices, not_measured, record_window
from detsim.track.recorder.window import Window, merge_rows, turns
from detsim.track.target.cluster import Cluster, ClusterError, default_workers
from detsim.track.target.project import Project
from detsim.track.target.spec import load_spec, target_cases

HELP = "record detsim's recent commits with its asv suite, or a window of a target repository's history (per " \
       "commit and case parity, image hash, a second process's hash, seconds and peak memory), then judge them"
LOCK = ".asv/track.lock"  # one recording of detsim's own commits at a time per clone (.ci/track holds it too)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("range", nargs="?", default=None, metavar="RANGE",
                        help="the commits, as A..B (a target's: first-parent; default: the --recent latest of HEAD)")
    parser.add_argument("--target", type=Path, default=None, metavar="DIR",
                        help="the target repository (default: detsim's own commits, in --root)")
    parser.add_argument("--spec", type=Path, default=None, metavar="FILE",
                        help="the target's spec (default: DIR/detsim-target.toml)")
    parser.add_argument("--recent", type=positive_int, default=10, metavar="N",
                        help="without RANGE: the N latest commits")
    parser.add_argument("--root", type=Path, default=Path.cwd(),
                        help="detsim's checkout (default: here); a target's recording goes to its "
                             "results/targets/<target>/, detsim's own to its results/asv/")
    parser.add_argument("--machine", default=socket.gethostname(),
                        help="asv's machine name of this recording (default: the host name)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, metavar="SLICE",
                        help="instead of recording, merge these copies of the target's results/targets/<target>/ "
                             "(slices recorded on several machines) into this one; turns and verdict over the whole")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="also write the window's record (rows, turns, counts) to PATH")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--workers", type=positive_int, nargs="?", const=default_workers(), default=None, metavar="N",
                       help="measure what no load changes (renders, parity, hashes, reproducibility, counts; detsim's "
                            "own: every benchmark but the timings) on N Dask worker processes of this machine "
                            "(default N: one per core); the timings are measured here, alone, after them "
                            "(docs/cluster.md; a RANGE goes before it)")
    where.add_argument("--scheduler", default=None, metavar="ADDRESS",
                       help="as --workers, on the existing Dask cluster whose scheduler is at ADDRESS "
                            "(e.g. tcp://127.0.0.1:8786); its workers must see this checkout's files")
    parser.add_argument("--no-judge", action="store_true",
                        help="record only (the tracking run judges with `detsim-track regressions` itself)")


def _commits(spec, rev_range: str | None, recent: int) -> list[str]:
    """The commits of ``rev_range`` (or the ``recent`` latest of HEAD), first-parent, oldest first."""
    args = [rev_range] if rev_range else [f"--max-count={recent}", "HEAD"]
    try:
        commits = git(spec.root, "rev-list", "--first-parent", *args).split()[::-1]
    except GitError as exc:
        raise ValueError(f"{rev_range or 'HEAD'}: not a range of {spec.root} ({exc})") from None
    if not commits:
        raise ValueError(f"{rev_range}: no commits in {spec.root}")
    return commits


def run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    if args.target is None:
        return _record_own(args, root)
    try:
        spec = load_spec(args.target.resolve(), args.spec)
        if args.json is not None:
            check_output_file(args.json, "--json", "record")
        cluster = None
        if args.workers is not None or args.scheduler is not None:
            if args.merge:
                raise ValueError("--merge records nothing: it takes no --workers or --scheduler")
            cluster = Cluster(args.workers, args.scheduler)
        project = Project.of(spec, root)
        project.check(spec)
        cases = target_cases(spec, root)
        if args.merge:
            if args.range:
                raise ValueError("--merge takes no RANGE: the slices hold their commits")
            for note in merge_slices(project, args.merge):
                print(f"record: the slices disagree: {note}", file=sys.stderr)
            rows = merge_rows(spec.root, [{"target": spec.name, "rows": project.rows(args.machine)}])[0]
            window = Window(spec.name, rows=rows, turns=turns(rows), already=len(rows),
                            where="as each slice's machine recorded it (merged)")
            commits = [row["commit"] for row in rows]
        else:
            commits = _commits(spec, args.range, args.recent)
    except (ValueError, OutputError, RecordingError) as exc:  # SpecError, GoldenError, MergeError: ValueErrors
        return refuse(f"record: {exc}")
    if not args.merge:
        print(f"record: {len(commits)} commit(s) of {spec.name}, {len(cases)} case(s) each, with asv into "
              f"{project.folder}", file=sys.stderr)

        try:
            window = record_window(spec, commits, root, args.machine,
                                   functools.partial(print, "record:", file=sys.stderr, flush=True), cluster)
        except (RecordingError, ClusterError) as exc:
            return refuse(f"record: {exc}")
    _print(window, len(commits), project, not_measured(spec))
    if args.json is not None:
        write_json(args.json, {**window.to_dict(), "not_measured": not_measured(spec), "project": str(project.folder)})
    if window.rows and all(row["build_error"] for row in window.rows):
        print(f"record: nothing of {spec.name}'s window could be measured ({window.rows[-1]['build_error']})",
              file=sys.stderr)
        return ExitCode.UNMEASURED
    if args.no_judge:
        return ExitCode.OK
    return _judge(project.folder, args.machine)


def _record_own(args: argparse.Namespace, root: Path) -> int:
    """detsim's own commits recorded in ``root`` (one run at a time: the tracking run's lock), then judged."""
    given = [option for option in ("merge", "json", "spec") if getattr(args, option) is not None]
    try:
        if given:
            raise ValueError(f"--{given[0]} is a target's option (give --target DIR)")
        cluster = ()
        if args.workers is not None or args.scheduler is not None:
            Cluster(args.workers, args.scheduler)  # checked here, before anything is written
            cluster = ("--workers", str(args.workers)) if args.workers is not None else ("--scheduler", args.scheduler)
        machine = validate_machine_name(args.machine)
        for folder in (root / ".asv", root / "results" / "asv" / machine):
            check_writable(folder)
        (root / ".asv").mkdir(exist_ok=True)
        with open(root / LOCK, "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError while another run holds it
            clean_up(root)
            try:
                OwnRecording(root, machine, cluster).record(args.recent, args.range)
            finally:
                clean_up(root, below=os.getpid())
    except BlockingIOError:
        return refuse(f"record: another tracking run is under way in this clone (it holds {LOCK}); run again when "
                      "it has ended")
    except (ValueError, RecordingError, OSError) as exc:
        return refuse(f"record: {getattr(exc, 'strerror', None) or exc}")
    return ExitCode.OK if args.no_judge else _judge(root, machine)


def _print(window: Window, commits: int, project: Project, skipped: str) -> None:
    for line in window.table():
        print(line)
    for row in (r for r in window.rows if not r["reused_from"]):  # each failure once, at the commit measured
        for case, outcome in row["cases"].items():
            if Status(outcome["status"]) is not Status.OK:
                tail = outcome.get("stderr_tail") or []
                print(f"{row['commit'][:10]} {case} {outcome['status']}: {outcome.get('detail', '')}"
                      + (": the last lines of its stderr:" if tail else ""))
                print("".join(f"    {line}\n" for line in tail), end="")
    for turn in window.turns:
        print(f"{turn.kind.value.upper()}: {turn.case} at {turn.commit[:10]}"
              + (f" (against {turn.previous[:10]})" if turn.previous else "") + f": {turn.why}")
    print(f"skipped for a target: {skipped}")
    print(f"where: {window.where}")
    print(f"{commits} commits: {window.builds} built, {window.renders} renders, {window.reused} reused (the same "
          f"installed files as a recorded commit), {window.already} recorded before; asv results: {project.folder}")


def _judge(project: Path, machine: str) -> int:
    """``detsim-track regressions`` on the recording (detsim's checkout, or a target's project folder): its verdict
    and exit status, timing suspects re-measured as the command does by default (a target's re-timed side by side
    at both commits' installs)."""
    from detsim.track.commands import regressions

    parser = argparse.ArgumentParser(prog="detsim-track regressions")
    regressions.add_arguments(parser)
    sys.stdout.flush()
    return regressions.run(parser.parse_args(["--repo", str(project), "--machine", machine]))

"""``detsim-track history``: the recorded history as one tidy table a notebook or a spreadsheet reads (CSV or
Parquet; :mod:`detsim.track.judge.history`), or, with ``--events``, its events on one screen
(:mod:`detsim.track.judge.events`); docs/history.md."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.output import OutputError, atomic_write_bytes, check_output_file
from detsim.track.base.provenance import repo_root
from detsim.track.commands import refuse
from detsim.track.judge.results_files import ResultsError

HELP = "write the recorded history as one table (CSV or Parquet), or list its events (--events)"
COMMAND = "detsim-track history"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from detsim.track.judge.history import FORMATS

    parser.add_argument("--repo", type=Path, default=None,
                        help="project checkout holding asv.conf.json (default: the enclosing git work tree)")
    parser.add_argument("--machine", default=None,
                        help="asv machine name (default: the only machine recorded, or this host)")
    parser.add_argument("--format", choices=FORMATS, default="csv",
                        help="the table's format (default csv; parquet needs --out)")
    parser.add_argument("--out", type=Path, default=None, metavar="FILE",
                        help="write the table to FILE, a new file, atomically (default: CSV on stdout)")
    parser.add_argument("--events", action="store_true",
                        help="print the history's events instead: each commit where a family's rule fires, with "
                             "the values on both sides (the verdict's rules)")


def _events(root: Path, machine: str | None) -> list[str]:
    """Every judged machine's events on one screen, a header line first."""
    from detsim.track.judge.analysis import analyse
    from detsim.track.judge.text import event_lines, header

    lines = []
    for report in analyse(root, [machine] if machine else None).reports.values():
        lines += [f"{header(report)} latest {report.latest[:8]}", *event_lines(report, always=True)]
    return lines


def run(args: argparse.Namespace) -> int:
    from detsim.track.judge.history import history_frame, table_bytes

    root = (args.repo or repo_root() or Path.cwd()).resolve()
    if args.format == "parquet" and args.out is None and not args.events:
        return refuse("detsim-track: --format parquet writes a binary file: give --out FILE")
    try:
        if args.out is not None and not args.events:
            check_output_file(args.out, "--out", COMMAND)
        if args.events:
            print("\n".join(_events(root, args.machine)))
            return ExitCode.OK
        data = table_bytes(history_frame(root, args.machine), args.format)
    except (ResultsError, OutputError) as exc:
        return refuse(f"detsim-track: {exc}")
    if args.out is None:
        sys.stdout.write(data.decode())
        return ExitCode.OK
    try:
        atomic_write_bytes(args.out, data)
    except OSError as exc:
        return refuse(f"detsim-track: --out {args.out}: not written ({exc.strerror or exc})")
    return ExitCode.OK

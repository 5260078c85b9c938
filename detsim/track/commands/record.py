"""``detsim-track record --target DIR``: a window of a target's history recorded (each commit built in a
throwaway venv, twins reused), its table printed and the commits where a case turns bad named (docs/targets.md)."""

from __future__ import annotations

import argparse
import json
import socket
import sys
from pathlib import Path

from detsim.track.commands import positive_int
from detsim.track.base.exitcodes import ExitCode, worst
from detsim.track.base.git import GitError, git
from detsim.track.commands import refuse
from detsim.track.base.output import OutputError, check_output_file, write_json
from detsim.track.target.build import scratch_folder
from detsim.track.target.cases import target_cases
from detsim.track.target.merge import merge_rows
from detsim.track.target.spec import load_spec
from detsim.track.target.window import Window, record_window, turns

HELP = "record a window of a target repository's history: per commit and case parity, image hash, a second " \
       "process's hash, seconds and peak memory; the commits where a case turns bad"
RESULTS = Path("results") / "targets"  # default: results/targets/<target>.json under --root


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("range", nargs="?", default=None, metavar="RANGE",
                        help="the commits, as A..B (first-parent; default: the --recent latest of HEAD)")
    parser.add_argument("--target", type=Path, required=True, metavar="DIR", help="the target repository")
    parser.add_argument("--spec", type=Path, default=None, metavar="FILE",
                        help="the target's spec (default: DIR/detsim-target.toml)")
    parser.add_argument("--recent", type=positive_int, default=10, metavar="N",
                        help="without RANGE: the N latest commits")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="detsim's checkout (default: here)")
    parser.add_argument("--machine", default=socket.gethostname(),
                        help="the name the rows of this run carry (default: the host name)")
    parser.add_argument("--merge", type=Path, nargs="+", default=None, metavar="SLICE",
                        help="merge these records of the target (slices made on several machines) into --json "
                             "instead of recording; the turns are found over the whole history")
    parser.add_argument("--json", type=Path, default=None, metavar="PATH",
                        help="the record, read first (its commits are not measured again) and rewritten "
                             f"(default: {RESULTS}/<target>.json under --root)")


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


def _earlier(path: Path, target: str, missing_ok: bool = True) -> list[dict]:
    """The rows of the record at ``path`` (none where there is no file and ``missing_ok``)."""
    if not path.is_file():
        if missing_ok:
            return []
        raise ValueError(f"{path}: no such record")
    try:
        data = json.loads(path.read_text())
        rows = data["rows"] if data.get("report") == "record" and data.get("target") == target else None
    except (OSError, ValueError, KeyError, AttributeError) as exc:
        raise ValueError(f"{path}: not a readable record ({exc})") from None
    if rows is None:
        raise ValueError(f"{path}: not a record of {target}; refusing to replace it")
    return rows


def run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    try:
        spec = load_spec(args.target.resolve(), args.spec)
        out = args.json or root / RESULTS / f"{spec.name}.json"
        check_output_file(out, "--json", "record")
        if args.merge:
            if args.range:
                raise ValueError("--merge takes no RANGE: the slices hold their commits")
            slices = [_earlier(path, spec.name, missing_ok=False) for path in args.merge]
            rows, notes = merge_rows(spec.root, [{"target": spec.name, "rows": rows} for rows in slices])
            window = Window(spec.name, rows=rows, turns=turns(rows), already=len(rows))
            for note in notes:
                print(f"record: the slices disagree: {note}", file=sys.stderr)
            return _finish(window, out, [], len(rows), spec.root)
        earlier = _earlier(out, spec.name)
        cases = target_cases(spec, root)
        commits = _commits(spec, args.range, args.recent)
    except (ValueError, OutputError) as exc:  # SpecError, GoldenError and MergeError are ValueErrors
        return refuse(f"record: {exc}")
    print(f"record: {len(commits)} commit(s) of {spec.name}, {len(cases)} case(s) each", file=sys.stderr)

    def say(line: str) -> None:
        print(f"record: {line}", file=sys.stderr, flush=True)

    with scratch_folder() as scratch:
        window = record_window(spec, commits, cases, Path(scratch), earlier, say, args.machine)
    return _finish(window, out, earlier, len(commits), spec.root)


def _finish(window: Window, out: Path, earlier: list[dict], commits: int, root: Path) -> int:
    """Write the record (its window's rows with the earlier rows, in the repository's order; the turns are
    the window's), print the window's table and turns."""
    record = window.record()
    record["rows"] = merge_rows(root, [{"target": window.target, "rows": window.rows},
                                       {"target": window.target, "rows": earlier}])[0]
    write_json(out, record)
    for line in window.table():
        print(line)
    for turn in window.turns:
        print(f"{turn.kind.value.upper()}: {turn.case} at {turn.commit[:10]}"
              + (f" (against {turn.previous[:10]})" if turn.previous else "") + f": {turn.why}")
    print(f"skipped for a target: {record['not_measured']}")
    print(f"{commits} commits: {window.builds} built, {window.renders} renders, {window.reused} reused, "
          f"{window.already} recorded before; record: {out}")
    unbuilt = ExitCode.UNMEASURED if record["unbuilt"] else ExitCode.OK
    return worst(unbuilt, ExitCode.REGRESSED if window.turns else ExitCode.OK)

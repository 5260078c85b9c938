"""``detsim-track bisect GOOD BAD``: the first commit of detsim, or of a target (``--target DIR``), where a
criterion on one golden case turns; each probed commit built in a throwaway venv (forms, costs, exit codes:
docs/targets.md)."""

from __future__ import annotations

import argparse
import functools
import math
import sys
from pathlib import Path

from detsim.track.base.exitcodes import ExitCode
from detsim.track.base.golden import GoldenError
from detsim.track.commands import refuse
from detsim.track.base.output import OutputError, add_json_option, check_output_file, write_json
from detsim.track.target.build import scratch_folder
from detsim.track.target.criteria import PARITY_FACTOR, Criterion, Kind
from detsim.track.target.departure import map_lines
from detsim.track.target.hunting import HuntError, hunt
from detsim.track.target.spec import SpecError, detsim_spec, load_spec, target_case, target_cases

HELP = "find the first commit (of detsim or of a target repository) where a golden case's parity, hash, " \
       "reproducibility, time or rendering turns bad"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("good", metavar="GOOD", help="a commit where the criterion holds")
    parser.add_argument("bad", metavar="BAD", help="a later commit where it does not")
    parser.add_argument("--target", type=Path, default=None, metavar="DIR",
                        help="the target repository (default: detsim, the checkout of --root)")
    parser.add_argument("--spec", type=Path, default=None, metavar="FILE",
                        help="the target's spec (default: DIR/detsim-target.toml)")
    parser.add_argument("--root", type=Path, default=Path.cwd(), help="detsim's checkout (default: here)")
    which = parser.add_mutually_exclusive_group(required=True)
    which.add_argument("--parity", metavar="CASE", help="1 - r grows more than --factor-fold or crosses the line")
    which.add_argument("--changed", metavar="CASE", help="the image's hash changes")
    which.add_argument("--irreproducible", metavar="CASE", help="a second process does not reproduce the image")
    which.add_argument("--slower", nargs=2, metavar=("CASE", "PCT"), help="the case takes more than PCT %% longer")
    which.add_argument("--broken", metavar="CASE", help="the case crashes, times out, or writes no or a wrong image")
    parser.add_argument("--factor", type=float, default=None,
                        help=f"with --parity: how many times 1 - r may grow (default {PARITY_FACTOR:g})")
    add_json_option(parser, "the bisection (every step, the counts, where the first bad image departs)")


def criterion_from(args: argparse.Namespace) -> Criterion:
    """The criterion the options name (ValueError, one line, for a bad value)."""
    if args.factor is not None and not args.parity:
        raise ValueError("--factor goes with --parity")
    if args.slower:
        case, pct = args.slower
        try:
            percent = float(pct)
        except ValueError:
            raise ValueError(f"--slower {case} {pct}: PCT must be a number") from None
        if not 0 < percent < math.inf:
            raise ValueError(f"--slower {case} {pct}: PCT must be a positive percentage")
        return Criterion(Kind.SLOWER, case, percent=percent)
    if args.parity:
        factor = PARITY_FACTOR if args.factor is None else args.factor
        if not 1 < factor < math.inf:
            raise ValueError(f"--factor {args.factor}: must be a number above 1")
        return Criterion(Kind.PARITY, args.parity, factor=factor)
    for kind in (Kind.CHANGED, Kind.IRREPRODUCIBLE, Kind.BROKEN):
        if getattr(args, kind.value):
            return Criterion(kind, getattr(args, kind.value))
    raise ValueError("give one criterion")


def run(args: argparse.Namespace) -> int:
    root = Path(args.root).resolve()
    try:
        criterion = criterion_from(args)
        spec = load_spec(args.target.resolve(), args.spec) if args.target else detsim_spec(root)
        if spec.source is not None:
            target_cases(spec, root)  # a spec's cases are checked as record checks them, though one is probed
        case = target_case(spec, criterion.case, root)
        criterion = Criterion(criterion.kind, case.id, criterion.factor, criterion.percent)
        if args.json is not None:
            check_output_file(args.json, "--json", "bisect")
    except (ValueError, OutputError) as exc:  # SpecError and GoldenError are ValueErrors
        return refuse(f"bisect: {exc}")
    say = functools.partial(print, "bisect:", file=sys.stderr, flush=True)
    try:
        with scratch_folder() as scratch:
            found = hunt(spec, criterion, case, args.good, args.bad, Path(scratch), say)
    except (HuntError, GoldenError, SpecError) as exc:
        return refuse(f"bisect: {exc}")
    record = found.to_dict()
    for line in summary_lines(record, spec.name == "detsim" and spec.source is None):
        print(line)
    if args.json is not None:
        write_json(args.json, record)
    return ExitCode.REGRESSED if record["found"] else ExitCode.OK


def summary_lines(record: dict, on_detsim: bool) -> list[str]:
    """What bisect prints at its end, from its record."""
    counts = (f"{record['commits']} commits, {record['builds']} builds (at most {record['build_bound']} expected), "
              f"{record['renders']} renders, {record['reused']} results reused")
    if not record["found"]:
        return [f"no bad commit: {record['bad'][:12]} is not bad by the criterion", counts]
    lines = [f"first bad commit: {record['first_bad']} {record['first_bad_subject']}",
             f"last good commit: {record['last_good']}"]
    if not record["exact"]:
        lines.append(f"commits that did not build hide the exact one: it is one of "
                     f"{', '.join(c[:8] for c in record['candidates'])}")
    lines.append(counts)
    gone = record["departure"]
    if gone:
        lines.append(f"where it departs (against the {gone['against']}): {gone['sentence']}")
        lines += map_lines(gone)
        lines += [f"  s={w['s']} f={w['f']}: {w['target']} against {w['reference']} (ratio {w['ratio']})"
                  for w in gone["worst"]]
    kind, case = record["criterion"]["kind"], record["criterion"]["case"]
    explained = {"parity": "parity", "changed": "hash", "irreproducible": "nondeterministic", "slower": "cost"}
    if on_detsim and kind in explained:
        commits = record["first_bad"] if kind == "irreproducible" else f"{record['last_good']} {record['first_bad']}"
        what = f"--workload {case}" if kind == "slower" else f"--case {case}"
        lines.append(f"next: detsim-track explain {commits} --kind {explained[kind]} {what} --no-bisect")
    elif kind in explained:
        lines.append("next: explain traces detsim's own code only; for a target, the departure above is where to look")
    return lines

"""``detsim-track trace-diff A B``: the first quantity where two per-pixel traces disagree (docs/trace.md)."""

from __future__ import annotations

import argparse

from detsim.track.base.exitcodes import ExitCode
from detsim.track.commands import refuse
from detsim.track.compare.traces import DEFAULT_ATOL, DEFAULT_RTOL, TraceError, compare_traces, format_comparison, \
    load_trace

HELP = "compare two per-pixel trace logs and name the first quantity that differs"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("a", metavar="A", help="first trace log (e.g. the reference program's TRACE_C lines)")
    parser.add_argument("b", metavar="B", help="second trace log (e.g. detsim's TRACE_PY lines or --trace-json)")
    parser.add_argument("--rtol", type=float, default=DEFAULT_RTOL,
                        help=f"relative tolerance (default {DEFAULT_RTOL:g})")
    parser.add_argument("--atol", type=float, default=DEFAULT_ATOL,
                        help=f"absolute tolerance (default {DEFAULT_ATOL:g})")


def run(args: argparse.Namespace) -> int:
    if not (args.rtol >= 0 and args.atol >= 0):
        return refuse("trace-diff: --rtol and --atol must be >= 0")
    try:
        a, b = load_trace(args.a), load_trace(args.b)
    except TraceError as exc:
        return refuse(f"trace-diff: {exc}")
    result = compare_traces(a, b, args.rtol, args.atol)
    print(format_comparison(result))
    if result.first is not None:
        return ExitCode.REGRESSED
    return ExitCode.OK if result.compared else ExitCode.UNMEASURED
